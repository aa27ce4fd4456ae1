package hip

// search.go owns where the runtime libraries are looked for
// (../shared/spec/gpu-runtime.md §1) and the opening of the first candidate
// that loads and exports every required symbol.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ebitengine/purego"
)

// Kind names a GPU runtime.
type Kind int

const (
	CUDA Kind = iota
	HIP
)

func (k Kind) String() string {
	if k == HIP {
		return "hip"
	}
	return "cuda"
}

// ParseKind maps "cuda" or "hip" to a Kind.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "cuda":
		return CUDA, nil
	case "hip":
		return HIP, nil
	}
	return 0, fmt.Errorf("gpu runtime %q: want cuda or hip", s)
}

// Override environment variables: a path to the library file. When set,
// only that file is tried.
const (
	EnvHIPLib   = "PLEXBENCH_HIP_LIB"
	EnvCUDALib  = "PLEXBENCH_CUDA_LIB"
	EnvNVRTCLib = "PLEXBENCH_NVRTC_LIB"
	// EnvCUDAPrefix names a venv or conda prefix holding NVIDIA's wheels.
	EnvCUDAPrefix = "PLEXBENCH_CUDA_PREFIX"
)

// Env is where the search reads the environment and the file system; the
// zero value uses the process's.
type Env struct {
	Getenv func(string) string
	Glob   func(string) ([]string, error)
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

func (e Env) glob(p string) []string {
	g := e.Glob
	if g == nil {
		g = filepath.Glob
	}
	m, _ := g(p)
	return m
}

var hipMajors = []int{7, 6, 5}

// hipCandidates lists libamdhip64 paths in search order: the override;
// $ROCM_PATH/lib, $HIP_PATH/lib; the bare SONAMEs (the loader's path);
// /opt/rocm/lib, then /opt/rocm-*/lib newest first. Majors 7, 6, 5 at each.
func hipCandidates(env Env) []string {
	return rocmCandidates(env, EnvHIPLib, "libamdhip64", hipMajors)
}

// rocmCandidates is the ROCm search order for lib.so.N, N in majors: the
// override variable alone when set; else $ROCM_PATH/lib, $HIP_PATH/lib,
// the bare SONAMEs, /opt/rocm/lib, /opt/rocm-*/lib newest first.
func rocmCandidates(env Env, override, lib string, majors []int) []string {
	if p := env.getenv(override); p != "" {
		return []string{p}
	}
	var dirs []string
	for _, v := range []string{"ROCM_PATH", "HIP_PATH"} {
		if d := env.getenv(v); d != "" {
			dirs = append(dirs, filepath.Join(d, "lib"))
		}
	}
	var out []string
	add := func(dir string) {
		for _, m := range majors {
			name := lib + ".so." + strconv.Itoa(m)
			if dir != "" {
				name = filepath.Join(dir, name)
			}
			out = append(out, name)
		}
	}
	for _, d := range dirs {
		add(d)
	}
	add("")
	add("/opt/rocm/lib")
	for _, d := range newestFirst(env.glob("/opt/rocm-*/lib"), "/opt/rocm-") {
		add(d)
	}
	return dedupe(out)
}

// hiprtcCandidates lists libhiprtc paths: beside libamdhip64 when its
// directory is known, else the bare SONAMEs; the runtime's major first.
func hiprtcCandidates(hipPath string, major int) []string {
	majors := []int{major}
	for _, m := range hipMajors {
		if m != major {
			majors = append(majors, m)
		}
	}
	dir := ""
	if strings.ContainsRune(hipPath, '/') {
		dir = filepath.Dir(hipPath)
	}
	var out []string
	for _, m := range majors {
		name := "libhiprtc.so." + strconv.Itoa(m)
		if dir != "" {
			out = append(out, filepath.Join(dir, name))
		}
		out = append(out, name)
	}
	return dedupe(out)
}

// cudaCandidates lists libcuda.so.1 paths: the override, the loader's,
// WSL's. Never the unversioned libcuda.so (the toolkit's link stub).
func cudaCandidates(env Env) []string {
	if p := env.getenv(EnvCUDALib); p != "" {
		return []string{p}
	}
	return []string{"libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"}
}

// nvrtcSonames are NVRTC's SONAME versions, newest first: every 11.x
// release (Debian 12's non-free 11.8 included) is libnvrtc.so.11.2.
var nvrtcSonames = []string{"13", "12", "11.2"}

// nvrtcCandidates lists libnvrtc paths in cuda-pathfinder's order: the
// override; NVIDIA's wheels under a named prefix ($PLEXBENCH_CUDA_PREFIX,
// $VIRTUAL_ENV, $CONDA_PREFIX; site- or dist-packages); the bare SONAMEs; $CUDA_PATH/lib64,
// $CUDA_HOME/lib64; /usr/local/cuda/lib64; /usr/local/cuda-*/lib64 newest
// first. Majors above the driver's (driverMajor > 0) go last: an NVRTC
// newer than the driver emits code it cannot load.
func nvrtcCandidates(env Env, driverMajor int) []string {
	return toolkitCandidates(env, driverMajor, EnvNVRTCLib, "libnvrtc", nvrtcSonames, func(sp string) []string {
		return []string{filepath.Join(sp, "nvidia", "cu13", "lib", "libnvrtc.so.13"),
			filepath.Join(sp, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12")}
	})
}

// toolkitCandidates is the CUDA toolkit search order for lib.so.N, N in
// sonames (nvrtcCandidates says it): the override variable alone when set;
// wheels(site-packages) under each named prefix; the bare SONAMEs; the
// toolkit directories. Majors above driverMajor (when > 0) go last.
func toolkitCandidates(env Env, driverMajor int, override, lib string, sonames []string, wheels func(sitePackages string) []string) []string {
	if p := env.getenv(override); p != "" {
		return []string{p}
	}
	var out []string
	for _, v := range []string{EnvCUDAPrefix, "VIRTUAL_ENV", "CONDA_PREFIX"} {
		pre := env.getenv(v)
		if pre == "" {
			continue
		}
		sps := env.glob(filepath.Join(pre, "lib", "python3*", "site-packages"))
		sps = append(sps, env.glob(filepath.Join(pre, "lib", "python3*", "dist-packages"))...) // Debian's pip
		for _, sp := range sps {
			out = append(out, wheels(sp)...)
		}
	}
	add := func(dir string) {
		for _, m := range sonames {
			name := lib + ".so." + m
			if dir != "" {
				name = filepath.Join(dir, name)
			}
			out = append(out, name)
		}
	}
	add("")
	for _, v := range []string{"CUDA_PATH", "CUDA_HOME"} {
		if d := env.getenv(v); d != "" {
			add(filepath.Join(d, "lib64"))
		}
	}
	add("/usr/local/cuda/lib64")
	for _, d := range newestFirst(env.glob("/usr/local/cuda-*/lib64"), "/usr/local/cuda-") {
		add(d)
	}
	out = dedupe(out)
	if driverMajor > 0 {
		slices.SortStableFunc(out, func(a, b string) int {
			return boolInt(soMajor(a) > driverMajor) - boolInt(soMajor(b) > driverMajor)
		})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// soMajor is N in "…/libx.so.N" (0 when absent).
func soMajor(p string) int {
	i := strings.LastIndex(p, ".so.")
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(strings.SplitN(p[i+4:], ".", 2)[0])
	return n
}

var versionRE = regexp.MustCompile(`\d+`)

// newestFirst sorts paths whose component after prefix is a dotted
// version ("/opt/rocm-6.2.1/lib") newest first.
func newestFirst(paths []string, prefix string) []string {
	ver := func(p string) []int {
		var v []int
		for _, s := range versionRE.FindAllString(strings.TrimPrefix(p, prefix), -1) {
			n, _ := strconv.Atoi(s)
			v = append(v, n)
		}
		return v
	}
	out := slices.Clone(paths)
	slices.SortStableFunc(out, func(a, b string) int { return slices.Compare(ver(b), ver(a)) })
	return out
}

func dedupe(s []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range s {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// library is an opened shared object.
type library struct {
	path   string
	handle uintptr
}

func (l *library) sym(name string) (uintptr, error) { return purego.Dlsym(l.handle, name) }

// attempt is one candidate that was tried and why it was rejected.
type attempt struct {
	path string
	why  string
	seen bool // the file exists (or the loader found it): worth naming
}

// openFirst opens the first candidate that loads and exports every name
// in required. The error names the library and the most telling reason.
func openFirst(kind Kind, what string, cands, required []string) (*library, []attempt, error) {
	var tried []attempt
	for _, p := range cands {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			msg := err.Error()
			tried = append(tried, attempt{path: p, why: shortDlerror(msg), seen: !strings.Contains(msg, "No such file")})
			continue
		}
		lib := &library{path: p, handle: h}
		var missing string
		for _, name := range required {
			if _, err := lib.sym(name); err != nil {
				missing = name
				break
			}
		}
		if missing != "" {
			purego.Dlclose(h)
			tried = append(tried, attempt{path: p, why: "missing symbol " + missing, seen: true})
			continue
		}
		return lib, tried, nil
	}
	return nil, tried, &Error{Kind: kind, Op: what, Detail: describeAttempts(tried), Err: ErrNoLibrary}
}

// shortDlerror drops dlerror's "path: " prefix when it only repeats the path.
func shortDlerror(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg[:i], "/") {
		return msg[i+2:]
	}
	return msg
}

// describeAttempts is one line: the rejected files that exist, then how
// many were simply absent.
func describeAttempts(tried []attempt) string {
	var named []string
	absent := 0
	for _, a := range tried {
		if a.seen {
			named = append(named, a.path+": "+a.why)
		} else {
			absent++
		}
	}
	s := strings.Join(named, "; ")
	switch {
	case len(tried) == 0:
		return "no candidates"
	case absent == len(tried):
		return fmt.Sprintf("not found (tried %d paths)", absent)
	case absent > 0:
		s += fmt.Sprintf("; %d other paths absent", absent)
	}
	return s
}
