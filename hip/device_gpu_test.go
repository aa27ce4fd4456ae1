//go:build gpu

package hip

// device_gpu_test.go: the device tests' helpers on a real GPU.

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"plexbench/kernels/gpu"
)

type kernelFn = *Function

// The one device all tests share (opening a runtime per test costs
// seconds): PLEXBENCH_GPU_BACKEND=cuda|hip picks the runtime, else CUDA is
// tried first, then HIP.
var dev struct {
	once sync.Once
	rt   *Runtime
	d    *Device
	s    *Stream
	mods map[string]*Module
	err  error
}

func device(t *testing.T) (*Device, *Stream) {
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
			dev.rt, dev.d, dev.s, dev.mods = rt, d, s, map[string]*Module{}
			fmt.Printf("DEVICE %s:%d %s %q warp %d, %d units, compiler %s\n", k, d.Ordinal, d.Target, d.Name, d.Warp, d.Units, rt.Compiler.Version)
			return
		}
		dev.err = errors.Join(errs...)
	})
	if dev.err != nil {
		t.Fatalf("no device: %v", dev.err)
	}
	return dev.d, dev.s
}

func fn(t *testing.T, file, entry string) kernelFn {
	t.Helper()
	d, _ := device(t)
	m := dev.mods[file]
	if m == nil {
		src, err := gpu.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if m, err = d.Compile(Program{Name: file, Source: src}); err != nil {
			t.Fatalf("compile %s: %v", file, err)
		}
		t.Logf("%s compiled and loaded in %.0f ms", file, time.Since(start).Seconds()*1e3)
		dev.mods[file] = m
	}
	f, err := m.Function(entry)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func warpSize(t *testing.T) int {
	d, _ := device(t)
	return d.Warp
}

// upload copies b into a fresh buffer with 256 guard bytes after it.
func upload(t *testing.T, b []byte) Buffer {
	t.Helper()
	d, s := device(t)
	buf, err := d.Alloc(len(b) + 256)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Free(buf) })
	if err := s.Memset(buf, 0, len(b)+256, guard); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(buf, 0, b); err != nil {
		t.Fatal(err)
	}
	return buf
}

// output is a guarded buffer of n bytes.
func output(t *testing.T, n int) Buffer { return upload(t, make([]byte, n)) }

// download reads n bytes and checks the guard bytes after them.
func download(t *testing.T, b Buffer, n int) []byte {
	t.Helper()
	_, s := device(t)
	out := make([]byte, n+256)
	if err := s.Download(out, b, 0); err != nil {
		t.Fatal(err)
	}
	for i, c := range out[n:] {
		if c != guard {
			t.Fatalf("write past the output: guard byte %d is %#x", i, c)
		}
	}
	return out[:n]
}

func launch(t *testing.T, f kernelFn, grid, block Dim3, a *Args) {
	t.Helper()
	_, s := device(t)
	if err := s.Launch(f, grid, block, 0, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
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
