// Package emubuild builds the emulated CUDA and HIP runtimes of hip/emu for
// tests, with the compile commands of the Makefile's gpu-emu target, into
// a directory named by a hash of the sources and the compiler, so a test
// run builds them once and later runs reuse them; ForTest and
// FreshForTest are what every device test calls. Nothing outside tests
// imports it: plexbench reaches the emulation only through the usual
// library overrides (Env gives them).
package emubuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ErrNoCompiler: no host C++ compiler ($CXX, c++, g++, clang++) is on PATH.
var ErrNoCompiler = errors.New("no C++ compiler (CXX, c++, g++ or clang++) to build the emulated GPU runtime")

// The libraries, as the Makefile names them.
const (
	CUDALib   = "libcuda.so.1"
	NVRTCLib  = "libnvrtc.so"
	HIPLib    = "libamdhip64.so"
	HIPRTCLib = "libhiprtc.so.6" // found beside HIPLib by the runtime major (6)
	// The emulated vendor BLAS (blas.cc): no part of the runtime, selected
	// only by BLASEnv.
	CUBLASLib  = "libcublas.so.12"
	ROCBLASLib = "librocblas.so.4"
)

var sources = []string{"runtime.cc", "rtc.cc", "blas.cc", "common.h", "pbemu_device.h"}

// Compiler is the C++ compiler the build uses: $CXX, else the first of
// c++, g++, clang++ on PATH.
func Compiler() (string, error) {
	names := []string{"c++", "g++", "clang++"}
	if c := os.Getenv("CXX"); c != "" {
		names = []string{c}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoCompiler
}

// Build compiles the sources in src (hip/emu) into
// $TMPDIR/plexbench-gpu-emu-HASH, unless that directory exists, and
// returns it. Concurrent builders (test binaries of several packages) race
// harmlessly: each builds in its own directory and the first rename wins.
func Build(src string) (string, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return "", err
	}
	cxx, err := Compiler()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "emubuild/1\n%s\n", cxx)
	if st, err := os.Stat(cxx); err == nil {
		fmt.Fprintf(h, "%d %d\n", st.Size(), st.ModTime().UnixNano())
	}
	for _, f := range sources {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("gpu emulator sources: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	dir := filepath.Join(os.TempDir(), "plexbench-gpu-emu-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, HIPRTCLib)); err == nil {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "plexbench-gpu-emu-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	flags := []string{"-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", "-Wl,-Bsymbolic", "-pthread"}
	rtc := []string{`-DPBEMU_DEVICE_H_PATH="` + filepath.Join(src, "pbemu_device.h") + `"`, `-DPBEMU_DEFAULT_CXX="` + cxx + `"`}
	jobs := []struct {
		out  string
		args []string
	}{
		{CUDALib, []string{filepath.Join(src, "runtime.cc"), "-ldl"}},
		{HIPLib, []string{"-DPBEMU_HIP", filepath.Join(src, "runtime.cc"), "-ldl"}},
		{NVRTCLib, append(rtc, filepath.Join(src, "rtc.cc"))},
		{HIPRTCLib, append(append([]string{"-DPBEMU_HIP"}, rtc...), filepath.Join(src, "rtc.cc"))},
		{CUBLASLib, []string{filepath.Join(src, "blas.cc"), "-ldl"}},
		{ROCBLASLib, []string{"-DPBEMU_HIP", filepath.Join(src, "blas.cc"), "-ldl"}},
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append(append(append([]string{}, flags...), "-o", filepath.Join(tmp, j.out)), j.args...)
			if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("building %s: %s %s: %v\n%s", j.out, cxx, strings.Join(args, " "), err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	for link, target := range map[string]string{"libnvrtc.so.13": NVRTCLib, "libamdhip64.so.6": HIPLib, "libhiprtc.so": HIPRTCLib} {
		if err := os.Symlink(target, filepath.Join(tmp, link)); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, HIPRTCLib)); serr != nil {
			return "", fmt.Errorf("gpu emulator: %w", err)
		}
	}
	return dir, nil
}

// Env is the override environment that selects the libraries in dir.
func Env(dir string) map[string]string {
	return map[string]string{
		"PLEXBENCH_CUDA_LIB":  filepath.Join(dir, CUDALib),
		"PLEXBENCH_NVRTC_LIB": filepath.Join(dir, NVRTCLib),
		"PLEXBENCH_HIP_LIB":   filepath.Join(dir, HIPLib),
	}
}

// BLASEnv is the override environment that selects dir's emulated vendor
// BLAS (cuBLAS beside CUDA, rocBLAS beside HIP); without it the emulated
// runtime has none and the products run on plexbench's own kernels.
func BLASEnv(dir string) map[string]string {
	return map[string]string{
		"PLEXBENCH_CUBLAS_LIB":  filepath.Join(dir, CUBLASLib),
		"PLEXBENCH_ROCBLAS_LIB": filepath.Join(dir, ROCBLASLib),
	}
}

// Fresh copies the libraries of dir into to. The loader keeps one copy of
// a library per path for the life of a process, and the emulator reads its
// environment (faults, memory size) once per copy: a fresh copy is a fresh
// device.
func Fresh(dir, to string) error {
	for _, f := range []string{CUDALib, NVRTCLib, HIPLib, HIPRTCLib, CUBLASLib, ROCBLASLib} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

var built struct {
	once     sync.Once
	dir, src string
	err      error
}

// ForTest is Build(src) once per test binary. Without a C++ compiler it
// skips t, unless PLEXBENCH_EXPECT_GPU_EMU=1 says one was installed (CI's
// .ci/run does), when the missing compiler fails t.
func ForTest(t testing.TB, src string) string {
	t.Helper()
	built.once.Do(func() { built.dir, built.err = Build(src) })
	if errors.Is(built.err, ErrNoCompiler) && os.Getenv("PLEXBENCH_EXPECT_GPU_EMU") != "1" {
		t.Skipf("skipped: %v (the device tests run on the emulated runtime, which needs one)", built.err)
	}
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// FreshForTest is a fresh copy (Fresh) of ForTest's libraries in a
// temporary folder of t: a device whose faults and memory size come from
// the environment t sets before opening it.
func FreshForTest(t testing.TB, src string) string {
	t.Helper()
	dir, fresh := ForTest(t, src), t.TempDir()
	if err := Fresh(dir, fresh); err != nil {
		t.Fatal(err)
	}
	return fresh
}
