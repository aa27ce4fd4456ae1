//go:build !gpu

package hip

// emu_limits_test.go: the vendors' launch rules as the emulated runtimes
// enforce them (so a kernel that launches there launches on the device):
// threads per block, __launch_bounds__, shared memory static + dynamic
// with CUDA's opt-in, and the poison in fresh memory.

import (
	"encoding/binary"
	"runtime"
	"testing"
	"unsafe"

	"plexbench/kernels/gpu"
)

const emuLimitKernels = `
PB_KERNEL void big_static(float* y) {
    __shared__ float s[10240]; // 40 KB
    extern __shared__ float dyn[];
    s[threadIdx.x] = (float)threadIdx.x;
    dyn[threadIdx.x] = 1.0f;
    __syncthreads();
    y[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x] + dyn[threadIdx.x];
}
PB_KERNEL void __launch_bounds__(64) bounded(float* y) { y[threadIdx.x] = 1.0f; }
PB_KERNEL void uninit(const unsigned* fresh, unsigned* y) {
    __shared__ unsigned s[4], t[4];
    extern __shared__ unsigned dyn[];
    y[threadIdx.x] = s[threadIdx.x];
    y[4 + threadIdx.x] = t[threadIdx.x];
    y[8 + threadIdx.x] = dyn[threadIdx.x];
    y[12 + threadIdx.x] = fresh[threadIdx.x];
}
`

// rawLaunch launches f exactly as asked: no automatic opt-in.
func rawLaunch(s *Stream, f *Function, block, shared int, a *Args) error {
	var pin runtime.Pinner
	defer pin.Unpin()
	params := a.params(&pin)
	return s.d.call("LaunchKernel", func() int32 {
		return s.d.rt.api.launch(f.h, 1, 1, 1, uint32(block), 1, 1, uint32(shared), s.h, params, unsafe.Pointer(nil))
	})
}

// TestEmuLaunchLimits: 40 KB of static shared memory and 10 KB of dynamic
// fail on CUDA without the opt-in (CUDA_ERROR_INVALID_VALUE, as a real
// driver) and run with it (explicit, or Stream.Launch's own); the opt-in
// stops at the device's maximum; AMD's 64 KB holds either way; 1025
// threads and a block past __launch_bounds__ fail.
func TestEmuLaunchLimits(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, nil)
		load := func() *Module {
			m, err := d.Compile(Program{Name: "limits.cu", Source: gpu.Dialect() + "#line 1 \"limits.cu\"\n" + emuLimitKernels})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		fn := func(m *Module, name string) *Function {
			f, err := m.Function(name)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		y, _ := d.Alloc(4 * 1024)
		var a Args
		a.Ptr(y, 0)
		invalid := emuName(k, "CUDA_ERROR_INVALID_VALUE (1)", "hipErrorInvalidValue (1)")
		m := load()
		big := fn(m, "big_static")
		const block = 128
		check := func() {
			t.Helper()
			out := make([]byte, 4*block)
			s.Download(out, y, 0)
			for i := range block {
				if got, want := bytesF32(out[4*i : 4*i+4])[0], float32(block-1-i)+1; got != want {
					t.Fatalf("big_static: y[%d] = %g, want %g", i, got, want)
				}
			}
		}
		if k == CUDA {
			wantErr(t, "40 KB static + 10 KB dynamic, no opt-in", rawLaunch(s, big, block, 10<<10, &a), ErrAPI, invalid)
			if v, ok, err := big.Attribute(funcStaticShared); err != nil || !ok || v != 40<<10 {
				t.Errorf("static shared attribute after a launch: %d %v %v", v, ok, err)
			}
			// Stream.Launch opts in by itself: 50 KB is within the device's maximum.
			if err := s.Launch(fn(m, "big_static"), Dim3{X: 1}, Dim3{X: block}, 10<<10, &a); err != nil {
				t.Fatalf("Stream.Launch with its opt-in: %v", err)
			}
			check()
			// A fresh module: the explicit opt-in.
			big2 := fn(load(), "big_static")
			wantErr(t, "fresh module, no opt-in", rawLaunch(s, big2, block, 10<<10, &a), ErrAPI, invalid)
			if err := big2.OptInShared(10 << 10); err != nil {
				t.Fatal(err)
			}
			if err := rawLaunch(s, big2, block, 10<<10, &a); err != nil {
				t.Fatalf("opted in: %v", err)
			}
			if v, _, _ := big2.Attribute(funcMaxDynShared); v != 10<<10 {
				t.Errorf("MAX_DYNAMIC_SHARED_SIZE_BYTES %d after the opt-in", v)
			}
			wantErr(t, "dynamic beyond the opt-in", rawLaunch(s, big2, block, 12<<10, &a), ErrAPI, invalid)
			wantErr(t, "opt-in beyond the device", big2.OptInShared(200<<10), ErrAPI, invalid)
		} else {
			if err := rawLaunch(s, big, block, 10<<10, &a); err != nil {
				t.Fatalf("50 KB on AMD: %v", err)
			}
			check()
			wantErr(t, "40 KB static + 30 KB dynamic on AMD", rawLaunch(s, big, block, 30<<10, &a), ErrAPI, invalid)
		}
		wantErr(t, "1025 threads", s.Launch(fn(m, "bounded"), Dim3{X: 1}, Dim3{X: 1025}, 0, &a), ErrAPI, invalid)
		if err := s.Launch(fn(m, "bounded"), Dim3{X: 1}, Dim3{X: 64}, 0, &a); err != nil {
			t.Errorf("64 threads within __launch_bounds__(64): %v", err)
		}
		wantErr(t, "65 threads past __launch_bounds__(64)", s.Launch(fn(m, "bounded"), Dim3{X: 1}, Dim3{X: 65}, 0, &a), ErrAPI,
			emuName(k, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)", "hipErrorLaunchOutOfResources (701)"))
		if v, ok, _ := fn(m, "bounded").Attribute(funcMaxThreads); !ok || v != 64 {
			t.Errorf("MAX_THREADS_PER_BLOCK of bounded: %d", v)
		}
	})
}

// TestEmuPoison: fresh device memory and shared memory (static and
// dynamic) read as 0xFF bytes (PLEXBENCH_EMU_POISON=0 turns it off:
// TestEmuPoisonOff).
func TestEmuPoison(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_POISON": "1"})
		m, err := d.Compile(Program{Name: "limits.cu", Source: gpu.Dialect() + "#line 1 \"limits.cu\"\n" + emuLimitKernels})
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("uninit")
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := d.Alloc(16)
		y, _ := d.Alloc(64)
		var a Args
		a.Ptr(fresh, 0).Ptr(y, 0)
		if err := s.Launch(f, Dim3{X: 1}, Dim3{X: 4}, 16, &a); err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 64)
		s.Download(out, y, 0)
		for i := range 16 {
			if v := binary.LittleEndian.Uint32(out[4*i:]); v != 0xffffffff {
				t.Errorf("word %d (%s) = %#x, want the poison", i, []string{"static", "static", "dynamic", "fresh"}[i/4], v)
			}
		}
	})
}

const emuTrafficKernels = `
PB_KERNEL void copy_twice(const float* w, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = w[i] + w[n - 1 - i] * x[i];
}
`

// TestEmuTraffic: with PLEXBENCH_EMU_TRAFFIC=1 the emulator counts the
// bytes kernels load from memory marked as weights, per tag: here each
// of n weights is loaded twice, the unmarked x not at all.
func TestEmuTraffic(t *testing.T) {
	bothKinds(t, func(t *testing.T, k Kind) {
		_, d, s := emuFresh(t, k, map[string]string{"PLEXBENCH_EMU_TRAFFIC": "1"})
		m, err := d.Compile(Program{Name: "traffic.cu", Source: gpu.Dialect() + "#line 1 \"traffic.cu\"\n" + emuTrafficKernels})
		if err != nil {
			t.Fatal(err)
		}
		f, err := m.Function("copy_twice")
		if err != nil {
			t.Fatal(err)
		}
		const n = 1000
		w, _ := d.Alloc(4 * n)
		x, _ := d.Alloc(4 * n)
		y, _ := d.Alloc(4 * n)
		tag, other := d.NewWeightTag(), d.NewWeightTag()
		if err := d.MarkWeights(w, tag); err != nil {
			t.Fatal(err)
		}
		if err := d.MarkWeights(y, other); err != nil { // written, never loaded
			t.Fatal(err)
		}
		var a Args
		a.Ptr(w, 0).Ptr(x, 0).Ptr(y, 0).I32(n)
		for range 3 {
			if err := s.Launch(f, Dim3{X: (n + 127) / 128}, Dim3{X: 128}, 0, &a); err != nil {
				t.Fatal(err)
			}
		}
		wb, rb, ok := d.WeightTraffic(tag)
		if !ok || wb != 4*n || rb != 3*2*4*n {
			t.Errorf("traffic: ok %v, %d weight bytes (want %d), %d read (want %d)", ok, wb, 4*n, rb, 3*2*4*n)
		}
		if wb, rb, _ := d.WeightTraffic(other); wb != 4*n || rb != 0 {
			t.Errorf("the written buffer: %d weight bytes, %d read", wb, rb)
		}
		d.Free(w)
		if wb, _, _ := d.WeightTraffic(tag); wb != 0 {
			t.Errorf("freed weights still marked: %d bytes", wb)
		}
	})
	// Off: not counted, and said so.
	_, d, _ := emuFresh(t, CUDA, map[string]string{"PLEXBENCH_EMU_TRAFFIC": "0"})
	if _, _, ok := d.WeightTraffic(d.NewWeightTag()); ok {
		t.Error("traffic reported with PLEXBENCH_EMU_TRAFFIC=0")
	}
}

// TestEmuArchRefused: a device whose arch the compiler's version cannot
// target (the emulated hiprtc says ROCm 6.4; gfx950 needs 7.0) is refused
// in one line before anything is compiled.
func TestEmuArchRefused(t *testing.T) {
	_, d, _ := emuFresh(t, HIP, map[string]string{"PLEXBENCH_EMU_ARCH": "gfx950"})
	src, err := gpu.Source("swiglu.cu")
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Compile(Program{Name: "swiglu.cu", Source: src})
	wantErr(t, "gfx950 with hiprtc 6.4", err, ErrUnsupportedArch, "gfx950", "ROCm 7.0")
}

// TestEmuPoisonOff: PLEXBENCH_EMU_POISON=0 leaves fresh memory as the host
// gives it: a 64 MB allocation is fresh zero pages (glibc maps any block
// above 32 MB), poisoned otherwise.
func TestEmuPoisonOff(t *testing.T) {
	for _, c := range []struct {
		poison string
		want   byte
	}{{"0", 0}, {"1", 0xff}} {
		_, d, s := emuFresh(t, CUDA, map[string]string{"PLEXBENCH_EMU_POISON": c.poison})
		b, err := d.Alloc(64 << 20)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 16)
		if err := s.Download(out, b, 32<<20); err != nil {
			t.Fatal(err)
		}
		for i, v := range out {
			if v != c.want {
				t.Fatalf("PLEXBENCH_EMU_POISON=%s: byte %d of a fresh allocation is %#x, want %#x", c.poison, i, v, c.want)
			}
		}
		d.Free(b)
	}
}
