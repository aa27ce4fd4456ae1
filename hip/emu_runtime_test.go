//go:build !gpu

package hip

// emu_runtime_test.go: the device tests without a GPU, on the emulated
// CUDA and HIP runtimes of hip/emu (built with the host C++ compiler by
// internal/emubuild, once per source hash). They are selected only through the
// override variables and reached through this package's own path: search,
// binding, nvrtc/hiprtc compile, module load, launch. Every device test runs
// as a "cuda" and a "hip" subtest (warp 32 and 64 unless
// PLEXBENCH_EMU_WARP says otherwise). Also here: each injected fault gives a
// clear error, and the emulator's own checks (pointers, images, barriers).

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"

	"plexbench/internal/emubuild"
	"plexbench/kernels/gpu"
)

var emuRT struct {
	mu   sync.Mutex
	devs map[Kind]*testDevice
}

// emuDir builds the emulated runtime (emubuild.ForTest: skipped without a
// C++ compiler unless CI expects one).
func emuDir(t *testing.T) string { return emubuild.ForTest(t, "emu") }

// emuEnv points the library search at dir's emulated libraries.
func emuEnv(dir string) Env {
	return fakeEnv(emubuild.Env(dir))
}

// boundsDevice is the device whose runtime reads the kernels' launch
// bounds for the NVRTC compile test: here the emulated CUDA device (with
// -tags gpu, the real one).
func boundsDevice(t *testing.T) *testDevice { return emuDevice(t, CUDA) }

// emuDevice is kind's emulated device 0, opened once per test binary.
func emuDevice(t *testing.T, kind Kind) *testDevice {
	t.Helper()
	dir := emuDir(t)
	emuRT.mu.Lock()
	defer emuRT.mu.Unlock()
	if td := emuRT.devs[kind]; td != nil {
		return td
	}
	rt, err := Open(kind, Config{Env: emuEnv(dir), CacheDir: "-"})
	if err != nil {
		t.Fatalf("emulated %s runtime: %v", kind, err)
	}
	d, err := rt.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if emuRT.devs == nil {
		emuRT.devs = map[Kind]*testDevice{}
	}
	td := &testDevice{rt: rt, d: d, s: s, mods: map[string]*Module{}}
	emuRT.devs[kind] = td
	return td
}

// onDevices runs check on the emulated CUDA and HIP runtimes.
func onDevices(t *testing.T, check func(*testing.T)) {
	for _, k := range []Kind{CUDA, HIP} {
		t.Run(k.String(), func(t *testing.T) {
			td := emuDevice(t, k)
			t.Logf("on the emulated runtime: %s:%d %s %q, warp %d, %d units, %s via %s", k, td.d.Ordinal, td.d.Target, td.d.Name,
				td.d.Warp, td.d.Units, td.rt.Compiler.Version, td.rt.Path)
			bindDevice(t, td)
			check(t)
		})
	}
}

func timePick(*testing.T, kernelFn) {} // host threads: no bandwidth worth timing

// emuFresh opens kind's emulated runtime from fresh copies of the libraries
// with env set (the emulator reads its variables once per copy).
func emuFresh(t *testing.T, kind Kind, env map[string]string) (*Runtime, *Device, *Stream) {
	t.Helper()
	return emuOpen(t, kind, env, false)
}

// emuOpen is emuFresh, with the emulated BLAS selected when blas is set.
func emuOpen(t *testing.T, kind Kind, env map[string]string, blas bool) (*Runtime, *Device, *Stream) {
	t.Helper()
	fresh := emubuild.FreshForTest(t, "emu")
	for k, v := range env {
		t.Setenv(k, v)
	}
	vars := emubuild.Env(fresh)
	if blas {
		for k, v := range emubuild.BLASEnv(fresh) {
			vars[k] = v
		}
	}
	rt, err := Open(kind, Config{Env: fakeEnv(vars), CacheDir: "-"})
	if err != nil {
		t.Fatalf("emulated %s runtime: %v", kind, err)
	}
	t.Cleanup(rt.Close)
	d, err := rt.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	return rt, d, s
}

// emuName is the vendor's name of a result code on kind.
func emuName(kind Kind, cuda, hip string) string {
	if kind == HIP {
		return hip
	}
	return cuda
}

func wantErr(t *testing.T, what string, err, kind error, contains ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("%s: %v: want %v", what, err, kind)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("%s: %q does not say %q", what, err, c)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("%s: error %q is more than one line", what, err)
	}
	t.Logf("%s: %v", what, err)
}

// swiglu compiles swiglu.cu on d and returns its kernel with arguments
// for n elements.
func swiglu(t *testing.T, d *Device, n int) (*Function, *Args) {
	t.Helper()
	src, err := gpu.Source("swiglu.cu")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Compile(Program{Name: "swiglu.cu", Source: src})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Function("swiglu_f32")
	if err != nil {
		t.Fatal(err)
	}
	g, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	var a Args
	a.Ptr(g, 0).Ptr(u, 0).U64(uint64(n))
	return f, &a
}

func bothKinds(t *testing.T, f func(t *testing.T, k Kind)) {
	for _, k := range []Kind{CUDA, HIP} {
		t.Run(k.String(), func(t *testing.T) { f(t, k) })
	}
}

// TestEmuExports: the emulated libraries export every name this package
// binds, optional ones included.
func TestEmuExports(t *testing.T) {
	dir := emuDir(t)
	var api driverAPI
	var rtc rtcAPI
	for _, c := range []struct {
		lib string
		bs  []binding
	}{
		{emubuild.CUDALib, cudaBindings(&api)},
		{emubuild.HIPLib, append(hipBindings(&api), binding{name: "hipGetDevicePropertiesR0600"})},
		{emubuild.NVRTCLib, rtcBindings(&rtc, "nvrtc")},
		{emubuild.HIPRTCLib, rtcBindings(&rtc, "hiprtc")},
	} {
		h, err := purego.Dlopen(filepath.Join(dir, c.lib), purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range c.bs {
			if _, err := purego.Dlsym(h, b.name); err != nil {
				t.Errorf("%s: %s not exported", c.lib, b.name)
			}
		}
	}
}

// TestEmuDevice: what the emulated devices say about themselves.
func TestEmuDevice(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		rt, d, _ := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_MEM_MIB": "3072", "PLEXBENCH_EMU_WARP": ""})
		want := map[Kind]struct{ name, target string }{
			CUDA: {"plexbench emulated sm_90", "sm_90"},
			HIP:  {"plexbench emulated gfx90a", "gfx90a:sramecc+:xnack-"},
		}[k]
		warp := map[Kind]int{CUDA: 32, HIP: 64}[k]
		if d.Name != want.name || d.Target != want.target || d.Warp != warp || d.TotalMem != 3072<<20 || d.MaxBlock != 1024 || d.Units < 1 {
			t.Errorf("device %+v", d)
		}
		if rt.Compiler == nil {
			t.Fatalf("no compiler: %v", rt.CompilerErr)
		}
		if err := CheckArch(k, d.Arch, rt.Compiler.Version); err != nil {
			t.Error(err)
		}
		t.Logf("%s: %s, driver %d, %s at %s", k, d.Name, rt.DriverVersion, rt.Compiler.Version, rt.Compiler.Path)
	})
}

// TestEmuFaultAlloc: PLEXBENCH_EMU_FAIL_ALLOC_AFTER=N fails the allocation
// that takes the bytes allocated so far past N, with out-of-memory; the
// memory size (PLEXBENCH_EMU_MEM_MIB) is a limit too.
func TestEmuFaultAlloc(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, _ := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_FAIL_ALLOC_AFTER": "1000", "PLEXBENCH_EMU_MEM_MIB": "1"})
		b, err := d.Alloc(600)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Alloc(600)
		wantErr(t, "allocation past PLEXBENCH_EMU_FAIL_ALLOC_AFTER", err, ErrAPI,
			emuName(k, "CUDA_ERROR_OUT_OF_MEMORY (2)", "hipErrorOutOfMemory (2)"))
		if err := d.Free(b); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Alloc(300); err != nil {
			t.Errorf("900 bytes in all: %v", err)
		}
		_, err = d.Alloc(200)
		wantErr(t, "allocation past PLEXBENCH_EMU_FAIL_ALLOC_AFTER after a free", err, ErrAPI,
			emuName(k, "CUDA_ERROR_OUT_OF_MEMORY (2)", "hipErrorOutOfMemory (2)"))
	})
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, _ := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_MEM_MIB": "1"})
		if _, err := d.Alloc(600 << 10); err != nil {
			t.Fatal(err)
		}
		_, err := d.Alloc(600 << 10)
		wantErr(t, "allocation past PLEXBENCH_EMU_MEM_MIB", err, ErrAPI)
	})
}

// TestEmuFaultLaunch: PLEXBENCH_EMU_FAIL_LAUNCH=2 fails the second launch
// (launch failed, 719) and only that one.
func TestEmuFaultLaunch(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_FAIL_LAUNCH": "2"})
		f, a := swiglu(t, d, 1000)
		grid, block := Dim3{X: 4}, Dim3{X: 256}
		if err := s.Launch(f, grid, block, 0, a); err != nil {
			t.Fatalf("launch 1: %v", err)
		}
		err := s.Launch(f, grid, block, 0, a)
		wantErr(t, "launch 2", err, ErrAPI, emuName(k, "CUDA_ERROR_LAUNCH_FAILED (719)", "hipErrorLaunchFailure (719)"), "swiglu_f32")
		if err := s.Launch(f, grid, block, 0, a); err != nil {
			t.Errorf("launch 3: %v", err)
		}
	})
}

// TestEmuFaultCompile: PLEXBENCH_EMU_FAIL_COMPILE=1 fails every compile
// with a log that says so.
func TestEmuFaultCompile(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, _ := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_FAIL_COMPILE": "1"})
		src, _ := gpu.Source("swiglu.cu")
		_, err := d.Compile(Program{Name: "swiglu.cu", Source: src})
		wantErr(t, "compile", err, ErrCompile, emuName(k, "NVRTC_ERROR_COMPILATION (6)", "HIPRTC_ERROR_COMPILATION (6)"),
			"swiglu.cu(1): error: compilation failure injected")
	})
}

// TestEmuFaultLost: PLEXBENCH_EMU_LOST_AFTER=1: the first launch runs,
// then the device is lost and every call returns unknown (999).
func TestEmuFaultLost(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_LOST_AFTER": "1"})
		f, a := swiglu(t, d, 1000)
		if err := s.Launch(f, Dim3{X: 4}, Dim3{X: 256}, 0, a); err != nil {
			t.Fatalf("launch 1: %v", err)
		}
		lost := emuName(k, "CUDA_ERROR_UNKNOWN (999)", "hipErrorUnknown (999)")
		wantErr(t, "launch 2", s.Launch(f, Dim3{X: 4}, Dim3{X: 256}, 0, a), ErrAPI, lost)
		_, err := d.Alloc(64)
		wantErr(t, "alloc after the loss", err, ErrAPI, lost)
		wantErr(t, "sync after the loss", s.Sync(), ErrAPI, lost)
		wantErr(t, "device sync after the loss", d.Sync(), ErrAPI, lost)
	})
}

// TestEmuMemoryChecks: device memory is tracked, so a bad pointer, a
// double free and a copy past an allocation are errors, not corruption.
func TestEmuMemoryChecks(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, nil)
		inval := emuName(k, "CUDA_ERROR_INVALID_VALUE (1)", "hipErrorInvalidValue (1)")
		b, err := d.Alloc(100)
		if err != nil {
			t.Fatal(err)
		}
		// Buffer lengths are this package's to check; a longer one than the
		// allocation reaches the emulator's own range check.
		long := Buffer{ptr: b.ptr, n: 200}
		wantErr(t, "download past the allocation", s.Download(make([]byte, 200), long, 0), ErrAPI, inval)
		wantErr(t, "upload past the allocation", s.Upload(long, 50, make([]byte, 100)), ErrAPI, inval)
		wantErr(t, "memset past the allocation", s.Memset(long, 0, 101, 0), ErrAPI, inval)
		if err := s.Upload(b, 0, make([]byte, 100)); err != nil {
			t.Errorf("upload in range: %v", err)
		}
		wantErr(t, "free of an inner pointer", d.Free(Buffer{ptr: b.ptr + 16, n: 1}), ErrAPI, inval)
		wantErr(t, "download from host memory", s.Download(make([]byte, 8), Buffer{ptr: 0x1000, n: 8}, 0), ErrAPI, inval)
		if err := d.Free(b); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "double free", d.Free(b), ErrAPI, inval)
	})
}

// TestEmuModuleChecks: images that are not the device's are refused with
// the vendor's codes; a missing kernel is not found.
func TestEmuModuleChecks(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		rt, d, _ := emuFresh(t, k, nil)
		_, err := d.Load([]byte("garbage\x00"))
		wantErr(t, "load garbage", err, ErrAPI, emuName(k, "CUDA_ERROR_INVALID_PTX (218)", "hipErrorInvalidImage (200)"))
		src, _ := gpu.Source("swiglu.cu")
		m, err := d.Compile(Program{Name: "swiglu.cu", Source: src})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Function("nope")
		wantErr(t, "missing kernel", err, ErrAPI, emuName(k, "CUDA_ERROR_NOT_FOUND (500)", "hipErrorNotFound (500)"), "nope")
		if err := m.Unload(); err != nil {
			t.Fatal(err)
		}
		// The other vendor's code object, and one for another target.
		other := map[Kind]Kind{CUDA: HIP, HIP: CUDA}[k]
		oc, err := OpenCompiler(other, emuEnv(emuDir(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer oc.Close()
		otherTarget := map[Kind]string{CUDA: "gfx90a", HIP: "sm_90"}[k]
		code, _, err := oc.Compile(Program{Name: "swiglu.cu", Source: src, Options: []string{"-DWARP=32"}}, otherTarget)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Load(code)
		nobin := emuName(k, "CUDA_ERROR_NO_BINARY_FOR_GPU (209)", "hipErrorNoBinaryForGpu (209)")
		wantErr(t, "load the other vendor's code", err, ErrAPI, nobin)
		wrongTarget := "sm_100"
		if k == HIP {
			wrongTarget = map[bool]string{true: "gfx1030", false: "gfx90a"}[d.Arch != "gfx1030"]
		}
		code, _, err = rt.Compiler.Compile(Program{Name: "swiglu.cu", Source: src, Options: []string{"-DWARP=32"}}, wrongTarget)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Load(code)
		wantErr(t, "load code for "+wrongTarget, err, ErrAPI, nobin)
		// A compile error is the host compiler's, naming the source line.
		_, log, err := rt.Compiler.Compile(Program{Name: "bad.cu", Source: gpu.Dialect() + "#line 1 \"bad.cu\"\nPB_KERNEL void bad(float* y) { y[0] = undeclared_thing; }\n"}, d.Target)
		wantErr(t, "compile error", err, ErrCompile, "bad.cu", "undeclared_thing")
		if !strings.Contains(log, "bad.cu:1") {
			t.Errorf("log %q: want the source line", log)
		}
	})
}

// emuKernels is a test program for what the device kernels do not use:
// dynamic shared memory, the other shuffles, ballots, atomics, a
// deadlocking barrier and a device-side assert.
const emuKernels = `
PB_KERNEL void reverse(const float* x, float* y) {
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    y[i] = s[blockDim.x - 1 - threadIdx.x];
}
PB_KERNEL void lanes(int* out) {
    int l = threadIdx.x % WARP;
#ifdef PB_HIP
    int down = __shfl_down(l, 1, WARP), up = __shfl_up(l, 3, WARP), bc = __shfl(l * 10, 5, WARP);
    unsigned long long b = __ballot(l % 3 == 0);
#else
    int down = __shfl_down_sync(0xffffffffu, l, 1, WARP), up = __shfl_up_sync(0xffffffffu, l, 3, WARP);
    int bc = __shfl_sync(0xffffffffu, l * 10, 5, WARP);
    unsigned long long b = __ballot_sync(0xffffffffu, l % 3 == 0);
#endif
    int* o = out + 4 * threadIdx.x;
    o[0] = down; o[1] = up; o[2] = bc; o[3] = __popcll(b);
    atomicAdd(out + 4 * blockDim.x, 1);
}
PB_KERNEL void stuck(float* y) {
    if (threadIdx.x % 2 == 0) __syncthreads(); // every warp split between a barrier and a shuffle
    else y[threadIdx.x] = pb_shfl_xor(y[threadIdx.x], 1);
}
PB_KERNEL void checked(int n) { assert(n > 0); }
`

// TestEmuExecution: dynamic shared memory, shuffles and ballots as the
// hardware does them, and a deadlock or assert failing the launch rather
// than hanging or passing.
func TestEmuExecution(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, nil)
		m, err := d.Compile(Program{Name: "emu.cu", Source: gpu.Dialect() + "#line 1 \"emu.cu\"\n" + emuKernels})
		if err != nil {
			t.Fatal(err)
		}
		get := func(name string) *Function {
			f, err := m.Function(name)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		const block, blocks = 128, 3
		x := make([]float32, block*blocks)
		for i := range x {
			x[i] = float32(i)
		}
		bx, _ := d.Alloc(4 * len(x))
		by, _ := d.Alloc(4 * len(x))
		s.Upload(bx, 0, f32le(x))
		var a Args
		a.Ptr(bx, 0).Ptr(by, 0)
		if err := s.Launch(get("reverse"), Dim3{X: blocks}, Dim3{X: block}, 4*block, &a); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 4*len(x))
		s.Download(out, by, 0)
		for i := range x {
			b, j := i/block, i%block
			if got, want := bytesF32(out[4*i : 4*i+4])[0], float32(b*block+block-1-j); got != want {
				t.Fatalf("reverse: y[%d] = %g, want %g", i, got, want)
			}
		}
		W := d.Warp
		bo, _ := d.Alloc(4 * (4*block + 1))
		s.Memset(bo, 0, 4*(4*block+1), 0)
		a.Reset()
		a.Ptr(bo, 0)
		if err := s.Launch(get("lanes"), Dim3{X: 1}, Dim3{X: block}, 0, &a); err != nil {
			t.Fatal(err)
		}
		res := make([]byte, 4*(4*block+1))
		s.Download(res, bo, 0)
		ballot := 0
		bw := W
		if k == CUDA {
			bw = min(W, 32) // CUDA's ballot is 32 bits, whatever the warp
		}
		for l := range bw {
			if l%3 == 0 {
				ballot++
			}
		}
		for tid := range block {
			l := tid % W
			want := [4]int{min(l+1, W-1), l - 3, 50, ballot}
			if l == W-1 {
				want[0] = l
			}
			if l < 3 {
				want[1] = l
			}
			for i, w := range want {
				if got := int(int32(le32(res[4*(4*tid+i):]))); got != w {
					t.Fatalf("lanes: thread %d value %d = %d, want %d (warp %d)", tid, i, got, w, W)
				}
			}
		}
		if n := int32(le32(res[4*4*block:])); n != block {
			t.Errorf("atomicAdd: %d, want %d", n, block)
		}
		a.Reset()
		a.Ptr(by, 0)
		err = s.Launch(get("stuck"), Dim3{X: 1}, Dim3{X: 32}, 0, &a)
		wantErr(t, "divergent barrier", err, ErrAPI, emuName(k, "CUDA_ERROR_LAUNCH_FAILED (719)", "hipErrorLaunchFailure (719)"))
		a.Reset()
		a.I32(0)
		err = s.Launch(get("checked"), Dim3{X: 1}, Dim3{X: 1}, 0, &a)
		wantErr(t, "device assert", err, ErrAPI, emuName(k, "CUDA_ERROR_ASSERT (710)", "hipErrorLaunchFailure (719)"))
		a.Reset()
		a.I32(1)
		if err := s.Launch(get("checked"), Dim3{X: 1}, Dim3{X: 1}, 0, &a); err != nil {
			t.Errorf("assert that holds: %v", err)
		}
		wantErr(t, "block of 2048", s.Launch(get("checked"), Dim3{X: 1}, Dim3{X: 2048}, 0, &a), ErrAPI,
			emuName(k, "CUDA_ERROR_INVALID_VALUE (1)", "hipErrorInvalidValue (1)"))
	})
}

// TestEmuVisibleDevices: the vendors' visibility variable set empty hides
// the device, as on a real machine.
func TestEmuVisibleDevices(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		dir := emuDir(t)
		fresh := t.TempDir()
		if err := emubuild.Fresh(dir, fresh); err != nil {
			t.Fatal(err)
		}
		t.Setenv(map[Kind]string{CUDA: "CUDA_VISIBLE_DEVICES", HIP: "HIP_VISIBLE_DEVICES"}[k], "")
		st := Probe(k, Config{Env: emuEnv(fresh), CacheDir: "-"})
		if !errors.Is(st.Err, ErrNoDevice) {
			t.Errorf("no visible device: %+v", st)
		}
		t.Logf("%v", st.Err)
	})
}

// TestEmuWarpOverride: PLEXBENCH_EMU_WARP sets the warp on both sides.
func TestEmuWarpOverride(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		w := map[Kind]int{CUDA: 64, HIP: 32}[k]
		_, d, _ := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_WARP": strconv.Itoa(w)})
		if d.Warp != w {
			t.Errorf("warp %d, want %d", d.Warp, w)
		}
		if k == HIP && d.Arch != "gfx1030" {
			t.Errorf("wave32 arch %q, want gfx1030", d.Arch)
		}
	})
}

// onBLASDevices runs check on each emulated runtime opened from a fresh
// copy with the emulated vendor BLAS selected (emubuild.BLASEnv) and env
// set for it (its faults): cuBLAS beside CUDA, rocBLAS beside HIP.
func onBLASDevices(t *testing.T, env map[string]string, check func(*testing.T, *BLAS)) {
	for _, k := range []Kind{CUDA, HIP} {
		t.Run(k.String(), func(t *testing.T) {
			b, err := emuBLAS(t, k, env)
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				t.Fatal("the emulated BLAS named by the override was not opened")
			}
			t.Cleanup(func() { b.Close() })
			t.Logf("%s (%s)", b, b.Path)
			check(t, b)
		})
	}
}

// emuBLAS opens kind's emulated runtime from a fresh copy with the
// emulated BLAS selected, binds its device to t and opens the BLAS.
func emuBLAS(t *testing.T, kind Kind, env map[string]string) (*BLAS, error) {
	t.Helper()
	rt, d, s := emuOpen(t, kind, env, true)
	bindDevice(t, &testDevice{rt: rt, d: d, s: s, mods: map[string]*Module{}})
	return d.OpenBLAS()
}

// TestBLASAbsent: the emulated runtime has no BLAS of its own; without an
// override, with one naming a missing file, or under PLEXBENCH_NO_BLAS=1,
// OpenBLAS returns none and no error.
func TestBLASAbsent(t *testing.T) {
	dir := emuDir(t)
	blas := emubuild.BLASEnv(dir)
	for _, c := range []struct {
		name string
		vars map[string]string
	}{
		{"no override", nil},
		{"missing file", map[string]string{EnvCUBLASLib: filepath.Join(dir, "nope.so"), EnvROCBLASLib: filepath.Join(dir, "nope.so")}},
		{"PLEXBENCH_NO_BLAS", map[string]string{EnvCUBLASLib: blas[EnvCUBLASLib], EnvROCBLASLib: blas[EnvROCBLASLib], EnvNoBLAS: "1"}},
	} {
		for _, k := range []Kind{CUDA, HIP} {
			vars := emubuild.Env(dir)
			for n, v := range c.vars {
				vars[n] = v
			}
			rt, err := Open(k, Config{Env: fakeEnv(vars), CacheDir: "-"})
			if err != nil {
				t.Fatal(err)
			}
			d, err := rt.Device(0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.OpenBLAS()
			if b != nil || err != nil {
				t.Errorf("%s, %s: OpenBLAS = %v, %v; want none", c.name, k, b, err)
			}
			rt.Close()
		}
	}
}

// TestBLASFaults: a BLAS that loads but fails a call is an error naming the
// call and the vendor's status name.
func TestBLASFaults(t *testing.T) {
	for _, k := range []Kind{CUDA, HIP} {
		t.Run(k.String()+"/create", func(t *testing.T) {
			_, err := emuBLAS(t, k, map[string]string{"PLEXBENCH_EMU_BLAS_FAIL_CREATE": "1", "PLEXBENCH_EMU_BLAS_FAIL_GEMM": ""})
			want := map[Kind]string{CUDA: "cublasCreate_v2: CUBLAS_STATUS_NOT_INITIALIZED (1)", HIP: "rocblas_create_handle: rocblas_status_internal_error (6)"}[k]
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), EnvNoBLAS) || !errors.Is(err, ErrAPI) {
				t.Fatalf("OpenBLAS: %v; want an ErrAPI naming %q and %s", err, want, EnvNoBLAS)
			}
		})
	}
	onBLASDevices(t, map[string]string{"PLEXBENCH_EMU_BLAS_FAIL_CREATE": "", "PLEXBENCH_EMU_BLAS_FAIL_GEMM": "1"}, func(t *testing.T, b *BLAS) {
		_, s := device(t)
		A, B, C := output(t, 2*4), output(t, 2*4), output(t, 4*4)
		err := b.GemmEx(s, Trans, NoTrans, 2, 2, 2, A, BLASF16, 2, B, BLASF16, 2, C, 2)
		want := map[Kind]string{CUDA: "cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED (13)", HIP: "rocblas_gemm_ex: rocblas_status_internal_error (6)"}[b.d.Kind()]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("GemmEx: %v; want %q", err, want)
		}
		// An operand larger than its buffer never reaches the library.
		err = b.GemmEx(s, Trans, NoTrans, 2, 3, 2, A, BLASF16, 2, B.View(0, 2*4), BLASF16, 2, C, 2)
		if err == nil || !strings.Contains(err.Error(), "in buffers of") {
			t.Fatalf("GemmEx past a buffer: %v", err)
		}
	})
}
