package hip

// device_helpers_test.go: what the device tests (device_test.go) call to
// compile, upload, launch and download, on whichever device onDevices
// bound to the test: the real GPU (device_gpu_test.go, -tags gpu) or the
// emulated CUDA and HIP runtimes of hip/emu (emu_runtime_test.go). Both go
// through this package's own loading, compiling and launching path.

import (
	"sync"
	"testing"
	"time"

	"plexbench/kernels/gpu"
)

type kernelFn = *Function

// testDevice is one opened device and stream with the modules compiled on it.
type testDevice struct {
	rt   *Runtime
	d    *Device
	s    *Stream
	mu   sync.Mutex
	mods map[string]*Module
}

// bound maps each running device test to its device.
var bound sync.Map // *testing.T → *testDevice

// bindDevice makes td the device of t (and of nothing else) until t ends.
func bindDevice(t *testing.T, td *testDevice) {
	bound.Store(t, td)
	t.Cleanup(func() { bound.Delete(t) })
}

func device(t *testing.T) (*Device, *Stream) {
	td := boundDevice(t)
	return td.d, td.s
}

func boundDevice(t *testing.T) *testDevice {
	t.Helper()
	v, ok := bound.Load(t)
	if !ok {
		t.Fatal("no device bound to this test: run it through onDevices")
	}
	return v.(*testDevice)
}

func fn(t *testing.T, file, entry string) kernelFn {
	t.Helper()
	td := boundDevice(t)
	td.mu.Lock()
	m := td.mods[file]
	if m == nil {
		src, err := gpu.Source(file)
		if err != nil {
			td.mu.Unlock()
			t.Fatal(err)
		}
		start := time.Now()
		if m, err = td.d.Compile(Program{Name: file, Source: src}); err != nil {
			td.mu.Unlock()
			t.Fatalf("compile %s: %v", file, err)
		}
		t.Logf("%s compiled and loaded in %.0f ms", file, time.Since(start).Seconds()*1e3)
		td.mods[file] = m
	}
	td.mu.Unlock()
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

func launch(t *testing.T, f kernelFn, grid, block Dim3, a *Args, shared ...int) {
	t.Helper()
	_, s := device(t)
	if err := s.Launch(f, grid, block, append(shared, 0)[0], a); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
}
