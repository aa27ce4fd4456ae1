package hip

// blas.go owns the vendor BLAS a device's products may take: cuBLAS beside
// CUDA, rocBLAS beside HIP, found and opened at run time like the runtimes
// (search.go) and called through purego. Only what a mixed-precision GEMM
// needs is bound: a handle, its stream, GemmEx with F16 or BF16 (or F32)
// operands, F32 output and F32 compute. No library is no BLAS (OpenBLAS
// returns nil): callers keep their own kernels. A library that loads but
// fails a call is an *Error naming the call and the vendor's status name.
//
// Signatures and enum values, from NVIDIA's cublas_api.h / library_types.h
// and ROCm's rocblas-types.h / rocblas-functions.h (rocBLAS 4.x):
//
//	cublasCreate_v2(cublasHandle_t*), cublasDestroy_v2(h), cublasSetStream_v2(h, cudaStream_t),
//	cublasGetProperty(libraryPropertyType, int*)  MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2,
//	cublasGetVersion_v2(h, int*),
//	cublasGemmEx(h, transa, transb, int m, int n, int k, const void* alpha, const void* A,
//	    cudaDataType Atype, int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
//	    void* C, cudaDataType Ctype, int ldc, cublasComputeType_t, cublasGemmAlgo_t)  19 args
//	  CUBLAS_OP_N 0, CUBLAS_OP_T 1; CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14;
//	  CUBLAS_COMPUTE_32F 68; CUBLAS_GEMM_DEFAULT -1.
//	rocblas_create_handle(rocblas_handle*), rocblas_destroy_handle(h), rocblas_set_stream(h, hipStream_t),
//	rocblas_get_version_string(char*, size_t), const char* rocblas_status_to_string(rocblas_status),
//	rocblas_gemm_ex(h, transA, transB, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta,
//	    c, c_type, ldc, d, d_type, ldd, compute_type, rocblas_gemm_algo, int32 solution_index,
//	    uint32 flags)  24 args (purego ≥ 0.11 takes 32)
//	  rocblas_operation_none 111, _transpose 112; rocblas_datatype_f16_r 150, _f32_r 151,
//	  _bf16_r 168; rocblas_gemm_algo_standard 0; rocblas_gemm_flags_none 0.
//
// rocBLAS rather than hipBLAS: hipblasGemmEx's ABI changed with hipBLAS 2/3
// (hipblasDatatype_t 150… to hipDataType 0… and a hipblasComputeType_t,
// with a _v2 twin in between); rocblas_gemm_ex has kept one since ROCm 5.

import (
	"fmt"
	"path/filepath"
	"strconv"
	"unsafe"
)

// The BLAS overrides: a path to the library file (only that one is tried),
// and EnvNoBLAS=1, which leaves every product to this project's kernels.
const (
	EnvCUBLASLib  = "PLEXBENCH_CUBLAS_LIB"
	EnvROCBLASLib = "PLEXBENCH_ROCBLAS_LIB"
	EnvNoBLAS     = "PLEXBENCH_NO_BLAS"
)

// BLASType is a GEMM operand's element type.
type BLASType int

const (
	BLASF32 BLASType = iota
	BLASF16
	BLASBF16
)

func (t BLASType) size() int {
	if t == BLASF32 {
		return 4
	}
	return 2
}

// Op says whether a GEMM operand is used as stored or transposed.
type Op int

const (
	NoTrans Op = iota
	Trans
)

var (
	cublasMajors  = []string{"13", "12", "11"}
	rocblasMajors = []int{5, 4, 3, 0} // rocBLAS 5 (ROCm 7), 4 (ROCm 6), 3 (5.6–5.7), 0 (≤ 5.5)
)

// cublasCandidates lists libcublas paths in nvrtcCandidates' order, the
// wheels being nvidia/cu13/lib (CUDA 13) and nvidia/cublas/lib (CUDA 12).
func cublasCandidates(env Env, driverMajor int) []string {
	return toolkitCandidates(env, driverMajor, EnvCUBLASLib, "libcublas", cublasMajors, func(sp string) []string {
		return []string{filepath.Join(sp, "nvidia", "cu13", "lib", "libcublas.so.13"),
			filepath.Join(sp, "nvidia", "cublas", "lib", "libcublas.so.12")}
	})
}

// rocblasCandidates lists librocblas paths in the ROCm order.
func rocblasCandidates(env Env) []string {
	return rocmCandidates(env, EnvROCBLASLib, "librocblas", rocblasMajors)
}

// blasAPI is cuBLAS or rocBLAS; the entries of the other are nil.
type blasAPI struct {
	create    func(h *uintptr) int32
	destroy   func(h uintptr) int32
	setStream func(h, s uintptr) int32
	cuGemm    func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at, lda int32, b uintptr, bt, ldb int32,
		beta unsafe.Pointer, c uintptr, ct, ldc, compute, algo int32) int32
	rocGemm func(h uintptr, ta, tb, m, n, k int32, alpha unsafe.Pointer, a uintptr, at, lda int32, b uintptr, bt, ldb int32,
		beta unsafe.Pointer, c uintptr, ct, ldc int32, d uintptr, dt, ldd, compute, algo, solution int32, flags uint32) int32
	cuProperty    func(which int32, v *int32) int32 // cublasGetProperty
	cuVersion     func(h uintptr, v *int32) int32   // cublasGetVersion_v2
	rocVersion    func(buf *byte, n uintptr) int32  // rocblas_get_version_string
	rocStatusName func(status int32) string         // rocblas_status_to_string
}

func cublasBindings(a *blasAPI) []binding {
	return []binding{
		{&a.create, "cublasCreate_v2", false},
		{&a.destroy, "cublasDestroy_v2", false},
		{&a.setStream, "cublasSetStream_v2", false},
		{&a.cuGemm, "cublasGemmEx", false},
		{&a.cuVersion, "cublasGetVersion_v2", false},
		{&a.cuProperty, "cublasGetProperty", true},
	}
}

func rocblasBindings(a *blasAPI) []binding {
	return []binding{
		{&a.create, "rocblas_create_handle", false},
		{&a.destroy, "rocblas_destroy_handle", false},
		{&a.setStream, "rocblas_set_stream", false},
		{&a.rocGemm, "rocblas_gemm_ex", false},
		{&a.rocVersion, "rocblas_get_version_string", true},
		{&a.rocStatusName, "rocblas_status_to_string", true},
	}
}

// cublasStatus names cublasStatus_t values (cublas_api.h).
var cublasStatus = map[int32]string{
	1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// rocblasStatus names rocblas_status values (rocblas-types.h), for a
// library without rocblas_status_to_string.
var rocblasStatus = []string{"rocblas_status_success", "rocblas_status_invalid_handle", "rocblas_status_not_implemented",
	"rocblas_status_invalid_pointer", "rocblas_status_invalid_size", "rocblas_status_memory_error",
	"rocblas_status_internal_error", "rocblas_status_perf_degraded", "rocblas_status_size_query_mismatch",
	"rocblas_status_size_increased", "rocblas_status_size_unchanged", "rocblas_status_invalid_value",
	"rocblas_status_continue", "rocblas_status_check_numerics_fail", "rocblas_status_excluded_from_build",
	"rocblas_status_arch_mismatch"}

// BLAS is a vendor BLAS handle on one device. Its calls run on the
// runtime's thread with the device current.
type BLAS struct {
	d       *Device
	Name    string // "cublas" or "rocblas"
	Version string // "12.4.5" (cuBLAS: major.minor.patch), rocBLAS's version string
	Path    string // the library as opened
	api     blasAPI
	h       uintptr
	stream  uintptr // the stream the handle was last set to
	set     bool
}

// OpenBLAS opens the device's vendor BLAS: cuBLAS for CUDA, rocBLAS for
// HIP. It returns nil and no error when none is found, when EnvNoBLAS is
// 1, or on the emulated runtime without an override (its device pointers
// are host memory, which a real BLAS would fault on). A library that
// loads but cannot create a handle is an error.
func (d *Device) OpenBLAS() (*BLAS, error) {
	r := d.rt
	if r.env.getenv(EnvNoBLAS) == "1" {
		return nil, nil
	}
	b := &BLAS{d: d}
	var bs []binding
	var cands []string
	if r.Kind == CUDA {
		b.Name, bs, cands = "cublas", cublasBindings(&b.api), cublasCandidates(r.env, r.DriverVersion/1000)
		if r.emulated {
			cands = overrideOnly(r.env, EnvCUBLASLib)
		}
	} else {
		b.Name, bs, cands = "rocblas", rocblasBindings(&b.api), rocblasCandidates(r.env)
		if r.emulated {
			cands = overrideOnly(r.env, EnvROCBLASLib)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	var err error
	r.th.do(func() {
		var lib *library
		if lib, _, err = openFirst(r.Kind, "lib"+b.Name, cands, requiredNames(bs)); err != nil {
			return
		}
		b.Path = lib.path
		if missing := bind(lib, bs); missing != "" {
			err = &Error{Kind: r.Kind, Op: lib.path, Detail: "missing symbol " + missing, Err: ErrNoLibrary}
			return
		}
		if err = d.current(); err != nil {
			return
		}
		if rc := b.api.create(&b.h); rc != 0 {
			err = b.statusError(createName(r.Kind), rc)
			return
		}
		b.Version = b.version()
	})
	if err != nil {
		if e, ok := err.(*Error); ok && e.Err == ErrNoLibrary {
			return nil, nil // absent (or not a BLAS): our own kernels
		}
		return nil, fmt.Errorf("%w (%s=1 runs without it)", err, EnvNoBLAS)
	}
	return b, nil
}

func overrideOnly(env Env, name string) []string {
	if p := env.getenv(name); p != "" {
		return []string{p}
	}
	return nil
}

func createName(k Kind) string {
	if k == CUDA {
		return "cublasCreate_v2"
	}
	return "rocblas_create_handle"
}

// version reads the library's version. Runs on the thread.
func (b *BLAS) version() string {
	a := &b.api
	if a.cuProperty != nil {
		var v [3]int32
		for i := range v {
			if a.cuProperty(int32(i), &v[i]) != 0 {
				break
			}
		}
		return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	}
	if a.cuVersion != nil {
		var v int32
		a.cuVersion(b.h, &v)
		if v >= 100000 { // CUDA 12+: major·10000 + minor·100 + patch
			return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
		}
		return fmt.Sprintf("%d.%d.%d", v/1000, v/100%10, v%100) // CUDA 11: major·1000 + minor·100 + patch
	}
	if a.rocVersion != nil {
		buf := make([]byte, 256)
		if a.rocVersion(&buf[0], uintptr(len(buf))) == 0 {
			return cBytes(buf)
		}
	}
	return "unknown"
}

// statusError is a failed BLAS call as an *Error with the status's name.
func (b *BLAS) statusError(call string, rc int32) error {
	name := ""
	if b.d.rt.Kind == CUDA {
		name = cublasStatus[rc]
	} else if b.api.rocStatusName != nil {
		name = b.api.rocStatusName(rc)
	} else if rc >= 0 && int(rc) < len(rocblasStatus) {
		name = rocblasStatus[rc]
	}
	if name == "" {
		name = "status " + strconv.Itoa(int(rc))
	}
	return &Error{Kind: b.d.rt.Kind, Op: call, Code: int(rc), Name: name, Err: ErrAPI}
}

// String is the library and its version, "cublas 12.4.5".
func (b *BLAS) String() string { return b.Name + " " + b.Version }

// Close destroys the handle.
func (b *BLAS) Close() error {
	if b == nil || b.h == 0 {
		return nil
	}
	return b.d.do(func() error {
		rc := b.api.destroy(b.h)
		b.h = 0
		if rc != 0 {
			return b.statusError(map[Kind]string{CUDA: "cublasDestroy_v2", HIP: "rocblas_destroy_handle"}[b.d.rt.Kind], rc)
		}
		return nil
	})
}

// GemmEx queues C = op(A)·op(B) on s, in the vendor's column-major terms:
// op(A) is m×k, op(B) k×n and C m×n, each stored column after column
// with leading dimension lda, ldb, ldc (elements); A and B of type at and
// bt, C float32, float32 compute, α = 1, β = 0. Each buffer must hold its
// matrix (checked here: the vendor would read past it).
func (b *BLAS) GemmEx(s *Stream, ta, tb Op, m, n, k int, A Buffer, at BLASType, lda int, B Buffer, bt BLASType, ldb int, C Buffer, ldc int) error {
	call := "cublasGemmEx"
	if b.d.rt.Kind == HIP {
		call = "rocblas_gemm_ex"
	}
	// stored is the element count of a rows×cols column-major matrix with
	// leading dimension ld; ok is false for an ld below rows.
	stored := func(op Op, r, c, ld int) (int, bool) {
		if op == Trans {
			r, c = c, r
		}
		if r == 0 || c == 0 {
			return 0, ld >= max(r, 1)
		}
		return ld*(c-1) + r, ld >= r
	}
	na, oka := stored(ta, m, k, lda)
	nb, okb := stored(tb, k, n, ldb)
	nc, okc := stored(NoTrans, m, n, ldc)
	switch {
	case m < 0 || n < 0 || k < 0 || !oka || !okb || !okc:
		return &Error{Kind: b.d.rt.Kind, Op: call, Detail: fmt.Sprintf("m %d n %d k %d with lda %d ldb %d ldc %d", m, n, k, lda, ldb, ldc), Err: ErrAPI}
	case na*at.size() > A.n || nb*bt.size() > B.n || nc*4 > C.n:
		return &Error{Kind: b.d.rt.Kind, Op: call, Detail: fmt.Sprintf("operands of %d, %d, %d bytes in buffers of %d, %d, %d",
			na*at.size(), nb*bt.size(), nc*4, A.n, B.n, C.n), Err: ErrAPI}
	}
	alpha, beta := float32(1), float32(0)
	return b.d.do(func() error {
		if !b.set || b.stream != s.h {
			if rc := b.api.setStream(b.h, s.h); rc != 0 {
				name := "cublasSetStream_v2"
				if b.d.rt.Kind == HIP {
					name = "rocblas_set_stream"
				}
				return b.statusError(name, rc)
			}
			b.stream, b.set = s.h, true
		}
		var rc int32
		if b.d.rt.Kind == CUDA {
			ty := [...]int32{BLASF32: 0, BLASF16: 2, BLASBF16: 14}
			op := [...]int32{NoTrans: 0, Trans: 1}
			rc = b.api.cuGemm(b.h, op[ta], op[tb], int32(m), int32(n), int32(k), unsafe.Pointer(&alpha), A.ptr, ty[at], int32(lda),
				B.ptr, ty[bt], int32(ldb), unsafe.Pointer(&beta), C.ptr, ty[BLASF32], int32(ldc), 68, -1)
		} else {
			ty := [...]int32{BLASF32: 151, BLASF16: 150, BLASBF16: 168}
			op := [...]int32{NoTrans: 111, Trans: 112}
			rc = b.api.rocGemm(b.h, op[ta], op[tb], int32(m), int32(n), int32(k), unsafe.Pointer(&alpha), A.ptr, ty[at], int32(lda),
				B.ptr, ty[bt], int32(ldb), unsafe.Pointer(&beta), C.ptr, ty[BLASF32], int32(ldc), C.ptr, ty[BLASF32], int32(ldc), 151, 0, 0, 0)
		}
		if rc != 0 {
			return b.statusError(call, rc)
		}
		return nil
	})
}
