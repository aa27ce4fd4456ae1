//go:build gpu

package hip

// device_gpu_test.go: the device tests on a real GPU (device_helpers_test.go
// has the helpers they share with the emulated runtime).

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"plexbench/kernels/gpu"
)

// The one device all tests share (opening a runtime per test costs
// seconds): PLEXBENCH_GPU_BACKEND=cuda|hip picks the runtime, else CUDA is
// tried first, then HIP.
var dev struct {
	once sync.Once
	td   *testDevice
	err  error
}

func realDevice(t *testing.T) *testDevice {
	t.Helper()
	dev.once.Do(func() {
		kinds := []Kind{CUDA, HIP}
		if b := os.Getenv("PLEXBENCH_GPU_BACKEND"); b != "" {
			k, err := ParseKind(b)
			if err != nil {
				dev.err = err
				return
			}
			kinds = []Kind{k}
		}
		var errs []error
		for _, k := range kinds {
			rt, err := Open(k, Config{CacheDir: os.Getenv("PLEXBENCH_KERNEL_CACHE")})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			d, err := rt.Device(0)
			if err != nil {
				errs = append(errs, err)
				rt.Close()
				continue
			}
			s, err := d.NewStream()
			if err != nil {
				errs = append(errs, err)
				rt.Close()
				continue
			}
			dev.td = &testDevice{rt: rt, d: d, s: s, mods: map[string]*Module{}}
			fmt.Printf("DEVICE %s:%d %s %q warp %d, %d units, compiler %s\n", k, d.Ordinal, d.Target, d.Name, d.Warp, d.Units, rt.Compiler.Version)
			return
		}
		dev.err = errors.Join(errs...)
	})
	if dev.err != nil {
		t.Fatalf("no device: %v", dev.err)
	}
	return dev.td
}

// boundsDevice is the device whose runtime reads the kernels' launch
// bounds for the NVRTC compile test: the GPU.
func boundsDevice(t *testing.T) *testDevice { return realDevice(t) }

// onDevices runs check on the GPU (one check, no subtests: the CHECK
// lines and test names are what scripts/gpu-check.sh reads).
func onDevices(t *testing.T, check func(*testing.T)) {
	bindDevice(t, realDevice(t))
	check(t)
}

// timePick times pick over 512 rows of a 151936 vocabulary with events
// and logs the bandwidth (the row is read twice).
func timePick(t *testing.T, f kernelFn) {
	d, s := device(t)
	rows, V := 512, 151936
	bx, err := d.Alloc(4 * rows * V)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(bx)
	s.Memset(bx, 0, 4*rows*V, 0)
	bi, bm, ba, bsum, bp := output(t, 4*rows), output(t, 4*rows), output(t, 4*rows), output(t, 8*rows), output(t, 4*rows)
	var a Args
	a.Ptr(bx, 0).I32(int32(V)).Ptr(bi, 0).I32(1).Ptr(bm, 0).Ptr(ba, 0).Ptr(bsum, 0).Ptr(bp, 0)
	e0, _ := d.NewEvent()
	e1, _ := d.NewEvent()
	defer e0.Destroy()
	defer e1.Destroy()
	s.Launch(f, Dim3{X: rows}, Dim3{X: 256}, 0, &a) // warm-up
	s.Record(e0)
	for range 10 {
		s.Launch(f, Dim3{X: rows}, Dim3{X: 256}, 0, &a)
	}
	s.Record(e1)
	ms, err := Elapsed(e0, e1)
	if err != nil {
		t.Fatal(err)
	}
	ms /= 10
	t.Logf("TIME pick_f32 512×151936: %.3f ms, %.0f GB/s (one read of the row)", ms, float64(4*rows*V)/(float64(ms)*1e6))
}

// TestDeviceCache: a second compile of a source hits the on-disk cache
// and loads the same kernels.
func TestDeviceCache(t *testing.T) {
	bindDevice(t, realDevice(t))
	d, _ := device(t)
	src, _ := gpu.Source("swiglu.cu")
	prog := Program{Name: "swiglu.cu", Source: src, Options: []string{fmt.Sprintf("-DPB_CACHE_PROBE=%d", time.Now().UnixNano())}} // a fresh key: the first compile is cold
	t0 := time.Now()
	m1, err := d.Compile(prog)
	if err != nil {
		t.Fatal(err)
	}
	cold := time.Since(t0)
	t1 := time.Now()
	m2, err := d.Compile(prog)
	if err != nil {
		t.Fatal(err)
	}
	warm := time.Since(t1)
	m1.Unload()
	if _, err := m2.Function("swiglu_f32"); err != nil {
		t.Fatal(err)
	}
	m2.Unload()
	t.Logf("compile cold %.0f ms, from the cache %.1f ms", cold.Seconds()*1e3, warm.Seconds()*1e3)
	ratio := warm.Seconds() / cold.Seconds()
	check(t, "kernel cache (warm/cold time)", ratio, 0.5)
}

// onBLASDevices runs check with the GPU's vendor BLAS (cuBLAS, rocBLAS)
// as the usual search finds it; skipped when there is none. env is the
// emulator's (faults): unused here.
func onBLASDevices(t *testing.T, env map[string]string, check func(*testing.T, *BLAS)) {
	bindDevice(t, realDevice(t))
	d, _ := device(t)
	b, err := d.OpenBLAS()
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Skip("no vendor BLAS found beside the runtime")
	}
	defer b.Close()
	fmt.Printf("BLAS %s (%s)\n", b, b.Path)
	check(t, b)
}
