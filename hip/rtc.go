package hip

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Program is one kernel source to compile.
type Program struct {
	Name    string   // file name for messages, e.g. "rmsnorm.cu"
	Source  string   // the full text, dialect header included
	Options []string // extra options, e.g. "-DWARP=32"
}

// Compiler is a loaded runtime compiler (NVRTC or hiprtc). It needs no
// device: CI compile-checks sources with it.
type Compiler struct {
	Kind    Kind
	Path    string // the library holding the RTC symbols
	Version string // "nvrtc 13.0", "hiprtc 9.0 (HIP runtime 50221153)"
	ident   string // the cache key's compiler part
	api     rtcAPI
	th      *thread
	owned   bool // th belongs to this compiler
}

// Close releases a compiler opened with OpenCompiler.
func (c *Compiler) Close() {
	if c != nil && c.owned {
		c.th.stop()
	}
}

// OpenCompiler loads the runtime compiler of kind alone (for HIP also
// libamdhip64, which carries or locates hiprtc); no device is needed.
func OpenCompiler(kind Kind, env Env) (*Compiler, error) {
	th := newThread()
	var c *Compiler
	var err error
	th.do(func() {
		if kind == HIP {
			var lib *library
			lib, _, err = openFirst(HIP, "libamdhip64", hipCandidates(env), []string{"hipRuntimeGetVersion"})
			if err != nil {
				return
			}
			var rv int32
			var rtv func(*int32) int32
			p, _ := lib.sym("hipRuntimeGetVersion")
			purego.RegisterFunc(&rtv, p)
			rtv(&rv)
			c, err = openHIPRTC(lib, int(rv))
		} else {
			c, err = openNVRTC(env, 0)
		}
	})
	if err != nil {
		th.stop()
		return nil, err
	}
	c.th, c.owned = th, true
	return c, nil
}

// openHIPRTC finds hiprtc: libhiprtc beside libamdhip64 (ROCm 7 has it
// only there), else the hiprtc names libamdhip64 itself exports (ROCm ≤ 6;
// Debian's 5.2 has no libhiprtc). Runs on the thread.
func openHIPRTC(hip *library, runtimeVersion int) (*Compiler, error) {
	major := runtimeVersion / 10000000
	if major == 0 {
		major = 5
	}
	c := &Compiler{Kind: HIP}
	bs := rtcBindings(&c.api, "hiprtc")
	lib, tried, err := openFirst(HIP, "libhiprtc", hiprtcCandidates(hip.path, major), requiredNames(bs))
	if err != nil {
		lib = hip
		for _, n := range requiredNames(bs) {
			if _, serr := hip.sym(n); serr != nil {
				detail := describeAttempts(append(tried, attempt{path: hip.path, why: "missing symbol " + n, seen: true}))
				return nil, &Error{Kind: HIP, Op: "hiprtc", Detail: detail, Err: ErrNoCompiler}
			}
		}
	}
	bind(lib, bs)
	c.Path = loadedPath(lib.path)
	if c.Path == "" {
		c.Path = lib.path
	}
	var ma, mi int32
	c.api.version(&ma, &mi)
	c.Version = fmt.Sprintf("hiprtc %d.%d (HIP runtime %d)", ma, mi, runtimeVersion)
	// hiprtcVersion is a constant; the runtime version and the files
	// (hiprtc's library and comgr beside it) identify the compiler.
	c.ident = c.Version + " " + fileIdentity(c.Path) + emulatorIdent(lib)
	if comgr, _ := filepath.Glob(filepath.Join(filepath.Dir(c.Path), "libamd_comgr.so.*")); len(comgr) > 0 {
		c.ident += " " + fileIdentity(comgr[0])
	}
	return c, nil
}

// openNVRTC finds libnvrtc (majors above driverMajor last) and preloads
// its builtins library by absolute path: libnvrtc dlopens it by bare name
// at the first compile and fails with rc 7 when the loader cannot see it.
func openNVRTC(env Env, driverMajor int) (*Compiler, error) {
	c := &Compiler{Kind: CUDA}
	bs := rtcBindings(&c.api, "nvrtc")
	lib, _, err := openFirst(CUDA, "libnvrtc", nvrtcCandidates(env, driverMajor), requiredNames(bs))
	if err != nil {
		err.(*Error).Err = ErrNoCompiler
		return nil, err
	}
	bind(lib, bs)
	c.Path = loadedPath(lib.path)
	if c.Path == "" {
		c.Path = lib.path
	}
	var ma, mi int32
	c.api.version(&ma, &mi)
	c.Version = fmt.Sprintf("nvrtc %d.%d", ma, mi)
	c.ident = c.Version + " " + fileIdentity(c.Path) + emulatorIdent(lib)
	if b, _ := filepath.Glob(filepath.Join(filepath.Dir(c.Path), fmt.Sprintf("libnvrtc-builtins.so.%d.*", ma))); len(b) > 0 {
		purego.Dlopen(b[0], purego.RTLD_NOW|purego.RTLD_GLOBAL)
	}
	return c, nil
}

// ArchOption is the compiler's target option for target ("sm_90",
// "gfx90a"; a HIP target's feature suffix is kept: "gfx90a:xnack-").
func (c *Compiler) ArchOption(target string) string {
	if c.Kind == CUDA {
		return "--gpu-architecture=" + target
	}
	return "--offload-arch=" + target
}

// options are the full option list for prog on target: the arch, C++17
// (hiprtc defaults to C++14), no contraction of a multiply and an add
// into one rounding (NVRTC's --fmad=false, clang's -ffp-contract=off:
// both fuse by default; the CPU twins and the emulator never do), then
// prog's. No fast-math (../shared/spec/gpu-runtime.md §2).
func (c *Compiler) options(prog Program, target string) []string {
	noContract := "-ffp-contract=off"
	if c.Kind == CUDA {
		noContract = "--fmad=false"
	}
	opts := []string{c.ArchOption(target), "-std=c++17", noContract}
	return append(opts, prog.Options...)
}

// Key is prog's cache key on target.
func (c *Compiler) Key(prog Program, target string) CacheKey {
	return CacheKey{Source: prog.Source, Options: c.options(prog, target), Target: target, Compiler: c.ident}
}

// Compile compiles prog for target and returns the code object (a cubin
// for CUDA, an ELF code object for HIP) and the log (warnings survive a
// good compile). Success is decided by the return code.
func (c *Compiler) Compile(prog Program, target string) (code []byte, log string, err error) {
	c.th.do(func() { code, log, err = c.compile(prog, target) })
	return
}

func (c *Compiler) compile(prog Program, target string) ([]byte, string, error) {
	var p uintptr
	if rc := c.api.create(&p, prog.Source, prog.Name, 0, nil, nil); rc != 0 {
		return nil, "", c.rtcError("CreateProgram", rc, prog.Name, ErrCompile)
	}
	defer c.api.destroy(&p)
	opts := c.options(prog, target)
	var pin runtime.Pinner
	defer pin.Unpin()
	cstrs := make([]*byte, len(opts))
	for i, o := range opts {
		b := append([]byte(o), 0)
		pin.Pin(&b[0])
		cstrs[i] = &b[0]
	}
	pin.Pin(&cstrs[0])
	rc := c.api.compile(p, int32(len(opts)), unsafe.Pointer(&cstrs[0]))
	log := c.programLog(p)
	if rc != 0 {
		return nil, log, c.rtcError("CompileProgram", rc, prog.Name+" for "+target+": "+firstLines(log, 3), ErrCompile)
	}
	var n uintptr
	if rc := c.api.codeSize(p, &n); rc != 0 || n == 0 {
		return nil, log, c.rtcError("GetCode", rc, prog.Name+" for "+target+": no code", ErrCompile)
	}
	code := make([]byte, n)
	if rc := c.api.code(p, &code[0]); rc != 0 {
		return nil, log, c.rtcError("GetCode", rc, prog.Name, ErrCompile)
	}
	return code, log, nil
}

func (c *Compiler) programLog(p uintptr) string {
	var n uintptr
	if c.api.logSize(p, &n) != 0 || n <= 1 {
		return ""
	}
	buf := make([]byte, n)
	c.api.log(p, &buf[0])
	return strings.TrimSpace(cBytes(buf))
}

func (c *Compiler) rtcError(call string, rc int32, detail string, kind error) error {
	prefix := "nvrtc"
	if c.Kind == HIP {
		prefix = "hiprtc"
	}
	e := &Error{Kind: c.Kind, Op: prefix + call, Code: int(rc), Detail: detail, Err: kind}
	if c.api.errorString != nil {
		e.Name = c.api.errorString(rc)
	}
	return e
}

// firstLines joins the first n non-empty lines of s with " | ".
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return strings.Join(out, " | ")
}

// emulatorIdent is what the emulated compiler (hip/emu) says changes its
// code beyond its file (its traffic hooks), for the cache key; "" for a
// vendor's compiler.
func emulatorIdent(lib *library) string {
	p, err := lib.sym("pbemu_rtc_ident")
	if err != nil {
		return ""
	}
	var ident func() string
	purego.RegisterFunc(&ident, p)
	return " " + ident()
}
