package hip

import (
	"bytes"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// fakeCUDA builds testdata/fakecuda.c into a shared object named
// libcuda.so.1 and libnvrtc.so.13 (one object, two links), returns an
// Env that points the search at it and a setter for its behaviour.
// Skipped without a C compiler.
func fakeCUDA(t *testing.T) (Env, func(initRC, devices, ccMajor int32), *library) {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if cc, err = exec.LookPath("cc"); err != nil {
			t.Skip("no C compiler: the fake CUDA driver cannot be built")
		}
	}
	dir := t.TempDir()
	so := filepath.Join(dir, "libfakecuda.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, "testdata/fakecuda.c").CombinedOutput(); err != nil {
		t.Fatalf("building the fake driver: %v\n%s", err, out)
	}
	for _, n := range []string{"libcuda.so.1", "libnvrtc.so.13"} {
		if err := os.Symlink(so, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	lib := &library{path: so, handle: h}
	var set func(int32, int32, int32)
	p, _ := lib.sym("fake_set")
	purego.RegisterFunc(&set, p)
	set(0, 1, 9)
	env := fakeEnv(map[string]string{EnvCUDALib: filepath.Join(dir, "libcuda.so.1"), EnvNVRTCLib: filepath.Join(dir, "libnvrtc.so.13")})
	return env, set, lib
}

func fakeCounter(t *testing.T, lib *library, name string) int32 {
	var f func() int32
	p, err := lib.sym(name)
	if err != nil {
		t.Fatal(err)
	}
	purego.RegisterFunc(&f, p)
	return f()
}

// TestFakeCUDAEndToEnd drives the whole CUDA path against the fake
// driver: open, device attributes, buffers, a compile through the cache,
// a cache entry the driver refuses, a launch whose four parameters the
// fake kernel reads through the pointer array, events.
func TestFakeCUDAEndToEnd(t *testing.T) {
	env, _, lib := fakeCUDA(t)
	cache := t.TempDir()
	rt, err := Open(CUDA, Config{Env: env, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.DriverVersion != 13000 || rt.Devices != 1 || rt.Compiler == nil || rt.Compiler.Version != "nvrtc 13.0" {
		t.Fatalf("runtime %+v compiler %+v (%v)", rt, rt.Compiler, rt.CompilerErr)
	}
	d, err := rt.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "Fake H200" || d.Arch != "sm_90" || d.Warp != 32 || d.Units != 132 || d.MaxBlock != 1024 || d.TotalMem != 141<<30 {
		t.Fatalf("device %+v", d)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	n := 37
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) - 3.5
	}
	bx, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	by, _ := d.Alloc(4*n + 8)
	if err := s.Upload(bx, 0, f32le(x)); err != nil {
		t.Fatal(err)
	}
	if err := s.Memset(by, 0, 4*n+8, 0xA5); err != nil {
		t.Fatal(err)
	}
	prog := Program{Name: "scale.cu", Source: `extern "C" __global__ void scale_f32(float* y, const float* x, int n, float s) {}`}
	m, err := d.Compile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if c := fakeCounter(t, lib, "fake_compiles"); c != 1 {
		t.Errorf("compiles %d, want 1", c)
	}
	f, err := m.Function("scale_f32")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Function("nope"); !errors.Is(err, ErrAPI) || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing kernel: %v", err)
	}
	var a Args
	a.Ptr(by, 0).Ptr(bx, 0).I32(int32(n)).F32(-2.25)
	e0, _ := d.NewEvent()
	e1, _ := d.NewEvent()
	s.Record(e0)
	if err := s.Launch(f, Dim3{X: 3}, Dim3{X: 64}, 128, &a); err != nil {
		t.Fatal(err)
	}
	s.Record(e1)
	if ms, err := Elapsed(e0, e1); err != nil || ms != 1.5 {
		t.Errorf("elapsed %g %v", ms, err)
	}
	out := make([]byte, 4*n+8)
	if err := s.Download(out, by, 0); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		if got := math.Float32frombits(le32(out[4*i:])); got != v*-2.25 {
			t.Fatalf("y[%d] = %g, want %g", i, got, v*-2.25)
		}
	}
	if !bytes.Equal(out[4*n:], bytes.Repeat([]byte{0xA5}, 8)) {
		t.Errorf("guard bytes %x", out[4*n:])
	}
	var launch [7]int32
	var last func(int32) int32
	p, _ := lib.sym("fake_last_launch")
	purego.RegisterFunc(&last, p)
	for i := range launch {
		launch[i] = last(int32(i))
	}
	if launch != [7]int32{3, 1, 1, 64, 1, 1, 128} {
		t.Errorf("launch dims %v", launch)
	}
	if err := s.Download(make([]byte, 8), bx, 4*n-4); err == nil {
		t.Error("a download past the buffer's end was accepted")
	}
	m.Unload()

	// From the cache: no compile. A corrupt entry: dropped, compiled again.
	if _, err := d.Compile(prog); err != nil {
		t.Fatal(err)
	}
	if c := fakeCounter(t, lib, "fake_compiles"); c != 1 {
		t.Errorf("after a cached compile: compiles %d, want 1", c)
	}
	ents, _ := filepath.Glob(filepath.Join(cache, "*.bin"))
	if len(ents) != 1 {
		t.Fatalf("cache entries %v", ents)
	}
	os.WriteFile(ents[0], []byte("garbage"), 0o644)
	if _, err := d.Compile(prog); err != nil {
		t.Fatal(err)
	}
	if c := fakeCounter(t, lib, "fake_compiles"); c != 2 {
		t.Errorf("after a corrupt entry: compiles %d, want 2", c)
	}
	if b, _ := os.ReadFile(ents[0]); !bytes.HasPrefix(b, []byte("FAKECUBIN")) {
		t.Errorf("the corrupt entry was not replaced: %q", b)
	}
	// Options reach the compiler: the fake's "cubin" echoes them.
	code, _, err := rt.Compiler.Compile(prog, "sm_90")
	if err != nil || !strings.Contains(string(code), "--gpu-architecture=sm_90 -std=c++17") {
		t.Errorf("code %q err %v", code, err)
	}
	// A compile error: ErrCompile, the log's first lines, one line.
	_, log, err := rt.Compiler.Compile(Program{Name: "bad.cu", Source: "#error boom"}, "sm_90")
	if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "NVRTC_ERROR_COMPILATION") || !strings.Contains(err.Error(), "boom") ||
		strings.Contains(err.Error(), "\n") || !strings.Contains(log, "1 error") {
		t.Errorf("compile error: %v (log %q)", err, log)
	}
	for _, b := range []Buffer{bx, by} {
		if err := d.Free(b); err != nil {
			t.Error(err)
		}
	}
	s.Destroy()
}

// TestFakeCUDAErrors: cuInit failing, no devices, an old GPU, a missing
// NVRTC: each a typed error, one line, no panic.
func TestFakeCUDAErrors(t *testing.T) {
	env, set, _ := fakeCUDA(t)
	defer set(0, 1, 9)
	set(100, 1, 9)
	_, err := Open(CUDA, Config{Env: env, CacheDir: "-"})
	if !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "cuInit: CUDA_ERROR_NO_DEVICE (100)") {
		t.Errorf("cuInit 100: %v", err)
	}
	set(0, 0, 9)
	st := Probe(CUDA, Config{Env: env, CacheDir: "-"})
	if !errors.Is(st.Err, ErrNoDevice) || !strings.Contains(st.Err.Error(), "CUDA_VISIBLE_DEVICES") || st.Compiler == "" {
		t.Errorf("no devices: %+v", st)
	}
	set(0, 1, 6)
	st = Probe(CUDA, Config{Env: env, CacheDir: "-"})
	if !errors.Is(st.Err, ErrUnsupportedArch) || len(st.Devices) != 1 || st.Devices[0].Arch != "sm_60" {
		t.Errorf("sm_60: %+v", st)
	}
	set(0, 1, 9)
	noRTC := env
	noRTC.Getenv = func(k string) string {
		if k == EnvNVRTCLib {
			return "/nonexistent/libnvrtc.so.13"
		}
		return env.Getenv(k)
	}
	st = Probe(CUDA, Config{Env: noRTC, CacheDir: "-"})
	if !errors.Is(st.Err, ErrNoCompiler) || len(st.Devices) != 1 || st.Devices[0].Name != "Fake H200" {
		t.Errorf("no nvrtc: %+v", st)
	}
	rt, err := Open(CUDA, Config{Env: noRTC, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	d, _ := rt.Device(0)
	if _, err := d.Compile(Program{Name: "x.cu", Source: "x"}); !errors.Is(err, ErrNoCompiler) {
		t.Errorf("compile without nvrtc: %v", err)
	}
	if _, err := rt.Device(1); !errors.Is(err, ErrNoDevice) {
		t.Errorf("device 1 of 1: %v", err)
	}
}

func f32le(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		u := math.Float32bits(x)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
