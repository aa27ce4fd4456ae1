package hip

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeEnv is an environment of the given variables and a file system
// rooted nowhere (Glob sees only the listed paths).
func fakeEnv(vars map[string]string, files ...string) Env {
	return Env{
		Getenv: func(k string) string { return vars[k] },
		Glob: func(p string) ([]string, error) {
			var out []string
			for _, f := range files {
				if ok, _ := filepath.Match(p, f); ok {
					out = append(out, f)
				}
			}
			return out, nil
		},
	}
}

func TestHIPSearchOrder(t *testing.T) {
	env := fakeEnv(map[string]string{"ROCM_PATH": "/r", "HIP_PATH": "/h"},
		"/opt/rocm-6.2.1/lib", "/opt/rocm-6.10.0/lib", "/opt/rocm-5.7.0/lib")
	got := hipCandidates(env)
	want := []string{
		"/r/lib/libamdhip64.so.7", "/r/lib/libamdhip64.so.6", "/r/lib/libamdhip64.so.5",
		"/h/lib/libamdhip64.so.7", "/h/lib/libamdhip64.so.6", "/h/lib/libamdhip64.so.5",
		"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
		"/opt/rocm/lib/libamdhip64.so.7", "/opt/rocm/lib/libamdhip64.so.6", "/opt/rocm/lib/libamdhip64.so.5",
		"/opt/rocm-6.10.0/lib/libamdhip64.so.7", "/opt/rocm-6.10.0/lib/libamdhip64.so.6", "/opt/rocm-6.10.0/lib/libamdhip64.so.5",
		"/opt/rocm-6.2.1/lib/libamdhip64.so.7", "/opt/rocm-6.2.1/lib/libamdhip64.so.6", "/opt/rocm-6.2.1/lib/libamdhip64.so.5",
		"/opt/rocm-5.7.0/lib/libamdhip64.so.7", "/opt/rocm-5.7.0/lib/libamdhip64.so.6", "/opt/rocm-5.7.0/lib/libamdhip64.so.5",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := hipCandidates(fakeEnv(map[string]string{EnvHIPLib: "/x/libamdhip64.so"})); !slices.Equal(got, []string{"/x/libamdhip64.so"}) {
		t.Errorf("override: %v", got)
	}
}

func TestHIPRTCBesideRuntime(t *testing.T) {
	got := hiprtcCandidates("/opt/rocm/lib/libamdhip64.so.7", 7)
	if got[0] != "/opt/rocm/lib/libhiprtc.so.7" || got[1] != "libhiprtc.so.7" {
		t.Errorf("got %v", got)
	}
	if got := hiprtcCandidates("libamdhip64.so.5", 5); got[0] != "libhiprtc.so.5" || len(got) != 3 {
		t.Errorf("bare: %v", got)
	}
}

func TestCUDASearchOrder(t *testing.T) {
	if got := cudaCandidates(fakeEnv(nil)); !slices.Equal(got, []string{"libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"}) {
		t.Errorf("libcuda: %v", got)
	}
	for _, c := range cudaCandidates(fakeEnv(nil)) {
		if strings.HasSuffix(c, "libcuda.so") {
			t.Errorf("%s: the unversioned name is the toolkit's stub", c)
		}
	}
	env := fakeEnv(map[string]string{"VIRTUAL_ENV": "/v", "CUDA_HOME": "/ch"},
		"/v/lib/python3.12/site-packages", "/usr/local/cuda-12.4/lib64", "/usr/local/cuda-13.0/lib64")
	got := nvrtcCandidates(env, 0)
	want := []string{
		"/v/lib/python3.12/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
		"/v/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
		"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", // 11.x's SONAME (Debian 12's non-free NVRTC 11.8)
		"/ch/lib64/libnvrtc.so.13", "/ch/lib64/libnvrtc.so.12", "/ch/lib64/libnvrtc.so.11.2",
		"/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so.11.2",
		"/usr/local/cuda-13.0/lib64/libnvrtc.so.13", "/usr/local/cuda-13.0/lib64/libnvrtc.so.12", "/usr/local/cuda-13.0/lib64/libnvrtc.so.11.2",
		"/usr/local/cuda-12.4/lib64/libnvrtc.so.13", "/usr/local/cuda-12.4/lib64/libnvrtc.so.12", "/usr/local/cuda-12.4/lib64/libnvrtc.so.11.2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A CUDA 12 driver: every 13 goes after every 12, order kept otherwise.
	got = nvrtcCandidates(env, 12)
	for i, c := range got {
		if soMajor(c) == 13 && i < 9 {
			t.Errorf("driver 12: %s at %d, before the 12s", c, i)
		}
	}
	if got[0] != "/v/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" {
		t.Errorf("driver 12: first %s", got[0])
	}
}

// TestOpenFirstFakeDirs: a file that is not a library and a real library
// lacking the symbols are passed over and named; absent paths are counted.
func TestOpenFirstFakeDirs(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "libamdhip64.so.7")
	if err := os.WriteFile(junk, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cands := []string{filepath.Join(dir, "absent", "libamdhip64.so.7"), junk}
	libm := "/lib/x86_64-linux-gnu/libm.so.6"
	if _, err := os.Stat(libm); err == nil {
		wrong := filepath.Join(dir, "libamdhip64.so.6")
		if err := os.Symlink(libm, wrong); err != nil {
			t.Fatal(err)
		}
		cands = append(cands, wrong)
	}
	_, tried, err := openFirst(HIP, "libamdhip64", cands, []string{"hipInit"})
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("err %v: want ErrNoLibrary", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, junk) || !strings.Contains(msg, "1 other paths absent") {
		t.Errorf("message %q", msg)
	}
	if len(cands) == 3 && (!strings.Contains(msg, "missing symbol hipInit") || tried[2].why != "missing symbol hipInit") {
		t.Errorf("message %q: want the library without hipInit named", msg)
	}
	t.Log(msg)
}

// TestOpenNoLibrary: a runtime whose library is nowhere is ErrNoLibrary,
// one line, no panic.
func TestOpenNoLibrary(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []Kind{CUDA, HIP} {
		none := filepath.Join(dir, "none.so")
		env := fakeEnv(map[string]string{EnvHIPLib: none, EnvCUDALib: none, EnvNVRTCLib: none}) // NVRTC 11.2 may be installed (Debian non-free)
		_, err := Open(k, Config{Env: env, CacheDir: "-"})
		if !errors.Is(err, ErrNoLibrary) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", k, err)
		}
		st := Probe(k, Config{Env: env, CacheDir: "-"})
		if !errors.Is(st.Err, ErrNoLibrary) || st.Library != "" {
			t.Errorf("%s probe: %+v", k, st)
		}
		if _, err := OpenCompiler(k, env); err == nil {
			t.Errorf("%s: compiler opened from nothing", k)
		}
	}
}

// TestOpenThisMachine: whatever this machine has, Open and Probe return a
// typed error or a runtime, never panic.
func TestOpenThisMachine(t *testing.T) {
	for _, k := range []Kind{CUDA, HIP} {
		st := Probe(k, Config{CacheDir: "-"})
		t.Logf("%s: library %q compiler %q devices %d err %v", k, st.Library, st.Compiler, len(st.Devices), st.Err)
		if st.Err != nil {
			var e *Error
			if !errors.As(st.Err, &e) {
				t.Errorf("%s: untyped error %v", k, st.Err)
			}
		}
	}
}

func TestSOMajor(t *testing.T) {
	for p, want := range map[string]int{"libnvrtc.so.13": 13, "/a/libnvrtc.so.12.4": 12, "libcuda.so": 0} {
		if got := soMajor(p); got != want {
			t.Errorf("%s: %d", p, got)
		}
	}
}
