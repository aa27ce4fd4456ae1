package hip

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"plexbench/kernels"
)

// TestDeviceGemmEx: GemmEx through the loaded vendor BLAS (the emulated
// one without a GPU, the real one with -tags gpu) against a float64
// reference of the same rounded operands, for F16, BF16 and F32, odd
// sizes, in the engine's layout (y = x·Wᵀ as Trans/NoTrans over row-major
// W and x, tight leading dimensions) and plain NoTrans/NoTrans with padded
// ones; guard bytes catch writes past C.
func TestDeviceGemmEx(t *testing.T) {
	onBLASDevices(t, map[string]string{"PLEXBENCH_EMU_BLAS_FAIL_CREATE": "", "PLEXBENCH_EMU_BLAS_FAIL_GEMM": ""}, checkGemmEx)
}

func checkGemmEx(t *testing.T, b *BLAS) {
	_, s := device(t)
	r := rand.New(rand.NewPCG(31, 32))
	types := []struct {
		typ kernels.Type
		bt  BLASType
	}{{kernels.F16, BLASF16}, {kernels.BF16, BLASBF16}, {kernels.F32, BLASF32}}
	for _, ty := range types {
		worst := 0.0
		for _, c := range []struct{ m, n, k int }{{1, 1, 1}, {17, 33, 130}, {130, 17, 33}, {33, 130, 17}, {1, 17, 64}} {
			for _, trans := range []bool{true, false} {
				// Column-major operands: op(A) m×k, op(B) k×n. Trans/NoTrans
				// stores A as k×m (lda = k): a row-major m×k W, as the engine
				// passes weights; NoTrans/NoTrans stores A m×k with lda = m+5.
				ta, lda, acols := Trans, c.k, c.m
				ldb, ldc := c.k, c.m
				if !trans {
					ta, lda, acols = NoTrans, c.m+5, c.k
					ldb, ldc = c.k+3, c.m+2
				}
				av, bv := randF32(r, lda*acols, 1), randF32(r, ldb*c.n, 1)
				ab, bb := stored(t, ty.typ, av), stored(t, ty.typ, bv)
				at := func(i, l int) float64 { // op(A)[i][l]
					if ta == Trans {
						return float64(av[l+i*lda])
					}
					return float64(av[i+l*lda])
				}
				bA, bB, bC := upload(t, ab), upload(t, bb), output(t, 4*ldc*c.n)
				if err := b.GemmEx(s, ta, NoTrans, c.m, c.n, c.k, bA, ty.bt, lda, bB, ty.bt, ldb, bC, ldc); err != nil {
					t.Fatal(err)
				}
				got := bytesF32(download(t, bC, 4*ldc*c.n))
				for j := range c.n {
					for i := range c.m {
						var want, mag float64
						for l := range c.k {
							p := at(i, l) * float64(bv[l+j*ldb])
							want += p
							mag += math.Abs(p)
						}
						worst = max(worst, math.Abs(float64(got[i+j*ldc])-want)/(mag+1e-30))
					}
				}
			}
		}
		check(t, b.Name+" GemmEx "+ty.typ.String()+" (err/Σ|a·b|)", worst, 1e-5)
	}
}

// stored rounds v to typ in place (the values the reference sees) and
// returns its bytes as typ stores them.
func stored(t *testing.T, typ kernels.Type, v []float32) []byte {
	t.Helper()
	out := make([]byte, typ.RowBytes(len(v)))
	if err := kernels.Quantize(typ, v, out); err != nil {
		t.Fatal(err)
	}
	if err := kernels.Dequantize(typ, out, v); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBLASSearchOrder(t *testing.T) {
	env := fakeEnv(map[string]string{"CUDA_PATH": "/cp"}, "/usr/local/cuda-12.4/lib64")
	got := cublasCandidates(env, 12)
	want := []string{"libcublas.so.12", "libcublas.so.11", "/cp/lib64/libcublas.so.12", "/cp/lib64/libcublas.so.11",
		"/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.11",
		"/usr/local/cuda-12.4/lib64/libcublas.so.12", "/usr/local/cuda-12.4/lib64/libcublas.so.11",
		"libcublas.so.13", "/cp/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda-12.4/lib64/libcublas.so.13"}
	if !slices.Equal(got, want) {
		t.Errorf("cublas candidates (driver 12):\n got %q\nwant %q", got, want)
	}
	if got := cublasCandidates(fakeEnv(map[string]string{EnvCUBLASLib: "/x/libcublas.so.12"}), 13); !slices.Equal(got, []string{"/x/libcublas.so.12"}) {
		t.Errorf("cublas override: %q", got)
	}
	got = rocblasCandidates(fakeEnv(map[string]string{"ROCM_PATH": "/r"}, "/opt/rocm-6.2.0/lib"))
	if len(got) != 16 || got[0] != "/r/lib/librocblas.so.5" || got[4] != "librocblas.so.5" || got[12] != "/opt/rocm-6.2.0/lib/librocblas.so.5" {
		t.Errorf("rocblas candidates: %q", got)
	}
	if got := rocblasCandidates(fakeEnv(map[string]string{EnvROCBLASLib: "/x/librocblas.so.4"})); !slices.Equal(got, []string{"/x/librocblas.so.4"}) {
		t.Errorf("rocblas override: %q", got)
	}
}

// TestDeviceToHalf: to_f16 and to_bf16 round f32 activations exactly as
// the CPU's vec_dot_type does (kernels.F32ToF16, F32ToBF16), specials and
// ties included.
func TestDeviceToHalf(t *testing.T) { onDevices(t, checkToHalf) }

func checkToHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	x := randF32(r, 1001, 70000) // past f16's range too
	x = append(x, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		1+1.0/2048, 1+3.0/2048, 1+1.0/256, 6e-8, 3e-8, -65520, 65519)
	for _, c := range []struct {
		name string
		cpu  func(float32) uint16
	}{{"to_f16", kernels.F32ToF16}, {"to_bf16", kernels.F32ToBF16}} {
		f := fn(t, "matmul.cu", c.name)
		bx, by := upload(t, f32Bytes(x)), output(t, 2*len(x))
		var a Args
		a.Ptr(bx, 0).Ptr(by, 0).U64(uint64(len(x)))
		launch(t, f, Dim3{X: (len(x) + 255) / 256}, Dim3{X: 256}, &a)
		got := download(t, by, 2*len(x))
		bad := 0
		for i, v := range x {
			if g, w := uint16(got[2*i])|uint16(got[2*i+1])<<8, c.cpu(v); g != w {
				if bad++; bad <= 3 {
					t.Errorf("%s(%g) = %#04x, CPU %#04x", c.name, v, g, w)
				}
			}
		}
		check(t, c.name+" (mismatches)", float64(bad), 0)
	}
}
