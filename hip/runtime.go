package hip

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Config says where to look and where to cache. The zero value searches
// the process's environment and caches under DefaultCacheDir.
type Config struct {
	Env      Env
	CacheDir string // "" = DefaultCacheDir(); "-" = no cache
}

// Runtime is one loaded GPU runtime (the driver library and, when found,
// its compiler). Every call into it runs on its own locked OS thread.
type Runtime struct {
	Kind          Kind
	Path          string // the driver library as opened
	DriverVersion int    // cuDriverGetVersion (13000) / hipDriverGetVersion
	Devices       int
	// Compiler is nil when the runtime compiler is missing; CompilerErr
	// then says why.
	Compiler    *Compiler
	CompilerErr error

	api   driverAPI
	th    *thread
	cache Cache
	env   Env // where the search looked, for the vendor BLAS (blas.go)
	// emulated: the library is hip/emu's (it exports pbemu_runtime), whose
	// device pointers are host pointers: a vendor BLAS must not see them.
	emulated bool
}

// weightTags is the last weight tag handed out (NewWeightTag). It is the
// process's, not a Runtime's: the emulated library is loaded once per
// process and keeps each tag's count across the Runtimes opened on it, so
// a tag must never be handed out twice.
var weightTags atomic.Uint64

// Open loads kind's runtime, initializes it and counts its devices. No
// library, no device: an *Error wrapping ErrNoLibrary or ErrNoDevice. A
// missing compiler is not an error here (Runtime.CompilerErr); Device.Compile
// reports it.
func Open(kind Kind, cfg Config) (*Runtime, error) {
	r, err := open(kind, cfg)
	if err != nil && r != nil {
		r.Close()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// open is Open that returns the partly opened runtime beside an error, so
// that Probe can say how far it got. Nothing is closed.
func open(kind Kind, cfg Config) (*Runtime, error) {
	r := &Runtime{Kind: kind, th: newThread(), env: cfg.Env}
	switch cfg.CacheDir {
	case "":
		r.cache = Cache{Dir: DefaultCacheDir()}
	case "-":
	default:
		r.cache = Cache{Dir: cfg.CacheDir}
	}
	var err error
	r.th.do(func() { err = r.load(cfg.Env) })
	return r, err
}

func (r *Runtime) load(env Env) error {
	var bs []binding
	var cands []string
	what := "libcuda.so.1"
	if r.Kind == HIP {
		bs, cands, what = hipBindings(&r.api), hipCandidates(env), "libamdhip64"
	} else {
		bs, cands = cudaBindings(&r.api), cudaCandidates(env)
	}
	lib, _, err := openFirst(r.Kind, what, cands, requiredNames(bs))
	if err != nil {
		return err
	}
	r.Path = lib.path
	if _, err := lib.sym("pbemu_runtime"); err == nil {
		r.emulated = true
	}
	if missing := bind(lib, bs); missing != "" {
		return &Error{Kind: r.Kind, Op: lib.path, Detail: "missing symbol " + missing, Err: ErrNoLibrary}
	}
	runtimeVersion := 0
	if r.Kind == HIP {
		var v int32
		r.api.runtimeVersion(&v)
		runtimeVersion = int(v)
		bindHIPProps(lib, &r.api, runtimeVersion/10000000)
	}
	// The versions and the compiler need no device (cuDriverGetVersion
	// works before cuInit), so "devices" can report them on a machine
	// without a GPU.
	var v int32
	if rc := r.api.driverVersion(&v); rc == 0 {
		r.DriverVersion = int(v)
	}
	if r.Kind == HIP {
		r.Compiler, r.CompilerErr = openHIPRTC(lib, runtimeVersion)
	} else {
		r.Compiler, r.CompilerErr = openNVRTC(env, r.DriverVersion/1000)
	}
	if r.Compiler != nil {
		r.Compiler.th = r.th
	}
	if rc := r.api.init(0); rc != 0 {
		return r.apiError(initName(r.Kind), rc, ErrNoDevice)
	}
	var n int32
	if rc := r.api.deviceCount(&n); rc != 0 {
		return r.apiError("GetDeviceCount", rc, ErrNoDevice)
	}
	r.Devices = int(n)
	if n == 0 {
		return &Error{Kind: r.Kind, Op: lib.path, Detail: "device count 0 (check " + visibleVar(r.Kind) + ")", Err: ErrNoDevice}
	}
	return nil
}

func initName(k Kind) string {
	if k == HIP {
		return "hipInit"
	}
	return "cuInit"
}

func visibleVar(k Kind) string {
	if k == HIP {
		return "/dev/kfd, the render group, HIP_VISIBLE_DEVICES"
	}
	return "CUDA_VISIBLE_DEVICES"
}

// Close ends the runtime's thread. Devices, buffers and modules must be
// released before.
func (r *Runtime) Close() { r.th.stop() }

// apiError wraps a failed call's code with the vendor's name for it.
// Runs on the thread.
func (r *Runtime) apiError(call string, rc int32, kind error) error {
	name := ""
	switch {
	case r.Kind == CUDA && r.api.cuErrName != nil:
		var p *byte
		if r.api.cuErrName(rc, &p) == 0 {
			name = cString(p)
		}
	case r.Kind == HIP && r.api.hipErrName != nil:
		name = r.api.hipErrName(rc)
	}
	if !strings.HasPrefix(call, "cu") && !strings.HasPrefix(call, "hip") {
		call = map[Kind]string{CUDA: "cu", HIP: "hip"}[r.Kind] + call
	}
	return &Error{Kind: r.Kind, Op: call, Code: int(rc), Name: name, Err: kind}
}

// Device is one opened GPU.
type Device struct {
	rt       *Runtime
	Ordinal  int
	handle   int32
	ctx      uintptr // CUDA's primary context
	Name     string
	Arch     string // "sm_90", "gfx1201" (the ISA name, feature flags dropped)
	Target   string // the full target: "gfx90a:sramecc+:xnack-"; for CUDA = Arch
	Warp     int
	Units    int // SMs / CUs
	MaxBlock int
	Shared   int // bytes of shared memory per block
	// SharedOptIn is the most shared memory a block may have when its
	// kernel opts in (CUDA: 227 KB on an H100/H200; AMD: = Shared).
	SharedOptIn int
	TotalMem    uint64
}

// Kind is the runtime d belongs to.
func (d *Device) Kind() Kind { return d.rt.Kind }

// Device opens device i: the primary context (CUDA) or the current device
// (HIP), its name, arch and limits.
func (r *Runtime) Device(i int) (*Device, error) {
	if i < 0 || i >= r.Devices {
		return nil, &Error{Kind: r.Kind, Op: "device " + strconv.Itoa(i), Detail: fmt.Sprintf("have %d", r.Devices), Err: ErrNoDevice}
	}
	d := &Device{rt: r, Ordinal: i}
	var err error
	r.th.do(func() { err = d.open() })
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Device) open() error {
	r, a := d.rt, &d.rt.api
	if rc := a.deviceGet(&d.handle, int32(d.Ordinal)); rc != 0 {
		return r.apiError("DeviceGet", rc, ErrNoDevice)
	}
	if r.Kind == CUDA {
		if rc := a.primaryCtxRetain(&d.ctx, d.handle); rc != 0 {
			return r.apiError("cuDevicePrimaryCtxRetain", rc, ErrNoDevice)
		}
	}
	if err := d.current(); err != nil {
		return err
	}
	var name [256]byte
	a.deviceName(&name[0], int32(len(name)), d.handle)
	d.Name = cBytes(name[:])
	attr := func(cuda, hip int32) int {
		id := cuda
		if r.Kind == HIP {
			id = hip
		}
		var v int32
		a.deviceAttr(&v, id, d.handle)
		return int(v)
	}
	d.MaxBlock, d.Shared, d.Warp, d.Units = attr(1, 56), attr(8, 74), attr(10, 87), attr(16, 63)
	d.SharedOptIn = max(attr(97, 75), d.Shared)
	if r.Kind == CUDA {
		d.Arch = fmt.Sprintf("sm_%d%d", attr(75, 23), attr(76, 61))
		d.Target = d.Arch
	} else if a.props != nil {
		buf := make([]byte, 8192)
		if rc := a.props(&buf[0], int32(d.Ordinal)); rc == 0 {
			d.Target = cBytes(buf[a.propsArchOffset : a.propsArchOffset+256])
			d.Arch, _, _ = strings.Cut(d.Target, ":")
		}
	}
	var free, total uintptr
	if a.memInfo(&free, &total) == 0 {
		d.TotalMem = uint64(total)
	}
	return nil
}

// current makes d the thread's device. Runs on the thread.
func (d *Device) current() error {
	a := &d.rt.api
	if d.rt.Kind == CUDA {
		if rc := a.ctxSetCurrent(d.ctx); rc != 0 {
			return d.rt.apiError("cuCtxSetCurrent", rc, ErrAPI)
		}
		return nil
	}
	if rc := a.setDevice(int32(d.Ordinal)); rc != 0 {
		return d.rt.apiError("hipSetDevice", rc, ErrAPI)
	}
	return nil
}

// do runs f on the runtime's thread with d current.
func (d *Device) do(f func() error) error {
	var err error
	d.rt.th.do(func() {
		if err = d.current(); err == nil {
			err = f()
		}
	})
	return err
}

// call runs one C call on the thread; a non-zero result becomes an error.
func (d *Device) call(name string, f func() int32) error {
	return d.do(func() error {
		if rc := f(); rc != 0 {
			return d.rt.apiError(name, rc, ErrAPI)
		}
		return nil
	})
}

// Buffer is device memory.
type Buffer struct {
	ptr uintptr
	n   int
}

// Len is the buffer's size in bytes.
func (b Buffer) Len() int { return b.n }

// View is the n bytes of b from byte off: the same memory, for kernel
// arguments and copies (never Free a view). A range outside b is a
// programmer error.
func (b Buffer) View(off, n int) Buffer {
	if off < 0 || n < 0 || off+n > b.n {
		panic(fmt.Sprintf("hip: view [%d,%d) of a %d-byte buffer", off, off+n, b.n))
	}
	return Buffer{ptr: b.ptr + uintptr(off), n: n}
}

// Alloc allocates n bytes of device memory.
func (d *Device) Alloc(n int) (Buffer, error) {
	b := Buffer{n: n}
	err := d.call("MemAlloc", func() int32 { return d.rt.api.malloc(&b.ptr, uintptr(max(n, 1))) })
	return b, err
}

// Free releases b.
func (d *Device) Free(b Buffer) error {
	return d.call("MemFree", func() int32 { return d.rt.api.free(b.ptr) })
}

// Sync waits for all of d's work.
func (d *Device) Sync() error {
	return d.call("Synchronize", func() int32 { return d.rt.api.sync() })
}

// Stream is an in-order queue of work on a device.
type Stream struct {
	d *Device
	h uintptr
}

// NewStream creates a stream.
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{d: d}
	return s, d.call("StreamCreate", func() int32 { return d.rt.api.streamCreate(&s.h, 0) })
}

// Destroy releases s.
func (s *Stream) Destroy() error {
	return s.d.call("StreamDestroy", func() int32 { return s.d.rt.api.streamDestroy(s.h) })
}

// Sync waits for s's work.
func (s *Stream) Sync() error {
	return s.d.call("StreamSynchronize", func() int32 { return s.d.rt.api.streamSync(s.h) })
}

func checkRange(b Buffer, off, n int) error {
	if off < 0 || n < 0 || off+n > b.n {
		return fmt.Errorf("gpu copy: bytes [%d,%d) outside a %d-byte buffer", off, off+n, b.n)
	}
	return nil
}

// Upload copies src to dst at byte offset off. From pageable Go memory the
// call returns once the runtime has staged the bytes, so src may change
// afterwards (../shared/spec/gpu-runtime.md §3).
func (s *Stream) Upload(dst Buffer, off int, src []byte) error {
	if err := checkRange(dst, off, len(src)); err != nil || len(src) == 0 {
		return err
	}
	return s.d.call("MemcpyHtoDAsync", func() int32 {
		return s.d.rt.api.htodAsync(dst.ptr+uintptr(off), unsafe.Pointer(&src[0]), uintptr(len(src)), s.h)
	})
}

// Download copies len(dst) bytes from src at offset off and waits for them
// (a copy into pageable memory completes before the call returns; the
// stream sync makes that explicit).
func (s *Stream) Download(dst []byte, src Buffer, off int) error {
	if err := checkRange(src, off, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	err := s.d.call("MemcpyDtoHAsync", func() int32 {
		return s.d.rt.api.dtohAsync(unsafe.Pointer(&dst[0]), src.ptr+uintptr(off), uintptr(len(dst)), s.h)
	})
	if err != nil {
		return err
	}
	return s.Sync()
}

// Memset sets n bytes of b from off to v.
func (s *Stream) Memset(b Buffer, off, n int, v byte) error {
	if err := checkRange(b, off, n); err != nil {
		return err
	}
	return s.d.call("MemsetD8Async", func() int32 { return s.d.rt.api.memsetD8Async(b.ptr+uintptr(off), v, uintptr(n), s.h) })
}

// Module is loaded device code.
type Module struct {
	d *Device
	h uintptr
}

// Function is one kernel of a module.
type Function struct {
	m    *Module
	h    uintptr
	Name string
	// dynMax is the dynamic shared memory the kernel opted in to (CUDA's
	// MAX_DYNAMIC_SHARED_SIZE_BYTES as this package set it); 0: none yet.
	// Read and written on the runtime's thread only.
	dynMax int
}

// CUDA's CUfunction_attribute numbers (HIP's hipFunction_attribute agrees).
const (
	funcMaxThreads    = 0
	funcStaticShared  = 1
	funcLocalBytes    = 3
	funcRegisters     = 4
	funcMaxDynShared  = 8
	defaultSharedCUDA = 48 << 10 // a block's shared memory on CUDA without an opt-in
)

// Attribute is one of the kernel's attributes by CUDA's CUfunction_attribute
// number (0 max threads per block, 1 static shared bytes, 3 local bytes
// per thread, 4 registers, 8 max dynamic shared bytes); ok is false when
// the runtime does not export the query.
func (f *Function) Attribute(attr int) (v int, ok bool, err error) {
	d := f.m.d
	if d.rt.api.funcGetAttr == nil {
		return 0, false, nil
	}
	var x int32
	err = d.call("FuncGetAttribute", func() int32 { return d.rt.api.funcGetAttr(&x, int32(attr), f.h) })
	return int(x), err == nil, err
}

// OptInShared lets f's blocks take up to n bytes of dynamic shared memory
// beyond CUDA's 48 KB default (cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES));
// at most d.SharedOptIn with the static part. AMD has no opt-in: its
// limit is the same either way, so this does nothing there.
func (f *Function) OptInShared(n int) error {
	d := f.m.d
	var err error
	d.rt.th.do(func() {
		if err = d.current(); err == nil {
			err = f.optIn(n)
		}
	})
	return err
}

// optIn is OptInShared on the runtime's thread.
func (f *Function) optIn(n int) error {
	a := &f.m.d.rt.api
	if f.m.d.rt.Kind != CUDA || n <= f.dynMax {
		return nil
	}
	if a.funcSetAttr == nil {
		return &Error{Kind: CUDA, Op: "cuFuncSetAttribute", Detail: f.Name + ": not exported by the driver", Err: ErrAPI}
	}
	if rc := a.funcSetAttr(f.h, funcMaxDynShared, int32(n)); rc != 0 {
		err := f.m.d.rt.apiError("cuFuncSetAttribute", rc, ErrAPI)
		err.(*Error).Detail = fmt.Sprintf("%s: %d bytes of dynamic shared memory", f.Name, n)
		return err
	}
	f.dynMax = n
	return nil
}

// autoOptIn opts f in when a launch with shared bytes of dynamic shared
// memory would pass CUDA's 48 KB default with f's static shared memory
// (as the driver reports it), so that a kernel sized for the device's
// larger limit launches; beyond that limit the launch fails as it would.
// On the runtime's thread.
func (f *Function) autoOptIn(shared int) {
	a := &f.m.d.rt.api
	if f.m.d.rt.Kind != CUDA || shared <= f.dynMax || a.funcGetAttr == nil || a.funcSetAttr == nil {
		return
	}
	var static int32
	if a.funcGetAttr(&static, funcStaticShared, f.h) != 0 || shared+int(static) <= defaultSharedCUDA {
		return
	}
	if shared+int(static) <= f.m.d.SharedOptIn {
		f.optIn(shared) // a refusal shows in the launch's own error
	}
}

// Compile compiles prog for d (through the on-disk cache) and loads it.
// A cached object the driver refuses is dropped and compiled afresh.
func (d *Device) Compile(prog Program) (*Module, error) {
	c := d.rt.Compiler
	if c == nil {
		return nil, d.rt.CompilerErr
	}
	if err := CheckArch(d.rt.Kind, d.Arch, c.Version); err != nil {
		return nil, err
	}
	prog.Options = append([]string{"-DWARP=" + strconv.Itoa(d.Warp)}, prog.Options...)
	key := c.Key(prog, d.Target)
	if code, ok, _ := d.rt.cache.Get(key); ok {
		if m, err := d.Load(code); err == nil {
			return m, nil
		}
		d.rt.cache.Remove(key)
	}
	code, _, err := c.Compile(prog, d.Target)
	if err != nil {
		return nil, err
	}
	m, err := d.Load(code)
	if err != nil {
		return nil, err
	}
	d.rt.cache.Put(key, code) // a cache that cannot be written only costs time
	return m, nil
}

// Load loads a code object (cubin, HIP ELF).
func (d *Device) Load(code []byte) (*Module, error) {
	if len(code) == 0 {
		return nil, &Error{Kind: d.rt.Kind, Op: "ModuleLoadData", Detail: "empty image", Err: ErrAPI}
	}
	m := &Module{d: d}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&code[0])
	return m, d.call("ModuleLoadData", func() int32 { return d.rt.api.moduleLoadData(&m.h, &code[0]) })
}

// Unload releases m.
func (m *Module) Unload() error {
	return m.d.call("ModuleUnload", func() int32 { return m.d.rt.api.moduleUnload(m.h) })
}

// Function looks up an extern "C" kernel.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{m: m, Name: name}
	err := m.d.call("ModuleGetFunction", func() int32 { return m.d.rt.api.moduleGetFunc(&f.h, m.h, name) })
	if err != nil {
		err.(*Error).Detail = name
	}
	return f, err
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) dims() (uint32, uint32, uint32) {
	return uint32(max(d.X, 1)), uint32(max(d.Y, 1)), uint32(max(d.Z, 1))
}

// Launch queues f on s. The parameters are copied by the runtime during
// the call, so args may be reused when Launch returns.
func (s *Stream) Launch(f *Function, grid, block Dim3, shared int, args *Args) error {
	gx, gy, gz := grid.dims()
	bx, by, bz := block.dims()
	var pin runtime.Pinner
	defer pin.Unpin()
	var params unsafe.Pointer
	if args != nil {
		params = args.params(&pin)
	}
	err := s.d.call("LaunchKernel", func() int32 {
		if shared > f.dynMax {
			f.autoOptIn(shared)
		}
		return s.d.rt.api.launch(f.h, gx, gy, gz, bx, by, bz, uint32(shared), s.h, params, nil)
	})
	if err != nil {
		err.(*Error).Detail = f.Name
	}
	return err
}

// Event marks a point in a stream, for timing.
type Event struct {
	d *Device
	h uintptr
}

// NewEvent creates an event.
func (d *Device) NewEvent() (*Event, error) {
	e := &Event{d: d}
	return e, d.call("EventCreate", func() int32 { return d.rt.api.eventCreate(&e.h, 0) })
}

// Record queues e on s.
func (s *Stream) Record(e *Event) error {
	return s.d.call("EventRecord", func() int32 { return s.d.rt.api.eventRecord(e.h, s.h) })
}

// Elapsed waits for end and returns the milliseconds between start and end.
func Elapsed(start, end *Event) (float32, error) {
	d := end.d
	var ms float32
	err := d.call("EventSynchronize", func() int32 { return d.rt.api.eventSync(end.h) })
	if err == nil {
		err = d.call("EventElapsedTime", func() int32 { return d.rt.api.eventElapsed(&ms, start.h, end.h) })
	}
	return ms, err
}

// Destroy releases e.
func (e *Event) Destroy() error {
	return e.d.call("EventDestroy", func() int32 { return e.d.rt.api.eventDestroy(e.h) })
}

// CheckArch says whether this package's kernels and the named compiler
// can target arch, by the compiler's version, before anything is compiled
// (hiprtc aborts the whole process on a target its device libraries lack;
// NVRTC refuses one it does not know with an unhelpful option error).
// CUDA needs sm_70+ (the *_sync warp intrinsics) and an NVRTC that knows
// the arch: nvrtcArchs; NVRTC 13 dropped sm_70 and sm_72. HIP needs a
// known gfx family and a hiprtc of the ROCm that brought the target:
// hipArchs. An unknown compiler version is not refused.
func CheckArch(kind Kind, arch, compilerVersion string) error {
	bad := func(why string) error {
		return &Error{Kind: kind, Op: "arch " + arch, Detail: why, Err: ErrUnsupportedArch}
	}
	if kind == CUDA {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(arch, "sm_"), "a"))
		if err != nil || !strings.HasPrefix(arch, "sm_") {
			return bad("not an sm_XX name")
		}
		if n < 70 {
			return bad("kernels need sm_70 or newer")
		}
		v := nvrtcVersion(compilerVersion)
		if v >= 1300 && n < 75 {
			return bad(fmt.Sprintf("NVRTC %d.%d dropped it (CUDA 13 supports sm_75 and newer; use NVRTC 12)", v/100, v%100))
		}
		for _, a := range nvrtcArchs {
			if strings.TrimPrefix(arch, "sm_") == a.arch && v > 0 && v < a.since {
				return bad(fmt.Sprintf("NVRTC %d.%d cannot target it (NVRTC %d.%d or newer needed)", v/100, v%100, a.since/100, a.since%100))
			}
		}
		return nil
	}
	if !strings.HasPrefix(arch, "gfx") || len(arch) < 6 {
		return bad("not a gfx name")
	}
	switch fam := arch[3:5]; {
	case arch[3] == '9' && len(arch) == 6, fam == "10", fam == "11", fam == "12":
	default:
		return bad("unknown AMD family")
	}
	v := hipRuntimeVersion(compilerVersion)
	for _, a := range hipArchs {
		if strings.HasPrefix(arch, a.prefix) && v > 0 && v < a.since {
			return bad(fmt.Sprintf("hiprtc of HIP runtime %d cannot target it (ROCm %d.%d or newer needed)", v, a.since/10000000,
				a.since/100000%100))
		}
	}
	return nil
}

// nvrtcArchs are the CUDA targets newer than NVRTC 11.0 and the NVRTC
// version (major·100 + minor) that brought each.
var nvrtcArchs = []struct {
	arch  string
	since int
}{
	{"86", 1101}, {"87", 1104}, {"89", 1108}, {"90", 1108}, {"90a", 1200},
	{"100", 1208}, {"100a", 1208}, {"101", 1208}, {"120", 1208}, {"120a", 1208}, {"103", 1209}, {"121", 1209}, {"110", 1300},
}

// hipArchs are the AMD targets (by prefix) newer than ROCm 5.2's and the
// HIP runtime version that brought each: RDNA3 (gfx11) with ROCm 5.5,
// MI300 (gfx940–942) with 6.0, RDNA4 (gfx12) with 6.4, MI350 (gfx950)
// with 7.0 (taken late rather than early: a refusal costs a message,
// a compiler that lacks the target the process).
var hipArchs = []struct {
	prefix string
	since  int
}{
	{"gfx11", 50500000}, {"gfx94", 60000000}, {"gfx12", 60400000}, {"gfx950", 70000000},
}

// nvrtcVersion reads "nvrtc M.m" as M·100 + m; 0 when absent.
func nvrtcVersion(compilerVersion string) int {
	rest, ok := strings.CutPrefix(compilerVersion, "nvrtc ")
	if !ok {
		return 0
	}
	ma, mi, _ := strings.Cut(rest, ".")
	a, err1 := strconv.Atoi(ma)
	b, err2 := strconv.Atoi(strings.Fields(mi + " ")[0])
	if err1 != nil || err2 != nil {
		return 0
	}
	return a*100 + b
}

// hipRuntimeVersion reads N from a HIP compiler's "… (HIP runtime N)"
// (major·10⁷ + minor·10⁵ + patch); 0 when absent.
func hipRuntimeVersion(compilerVersion string) int {
	_, rest, ok := strings.Cut(compilerVersion, "HIP runtime ")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimRight(rest, ")"))
	return n
}

// Status is what Probe found for one runtime.
type Status struct {
	Kind     Kind
	Library  string // the driver library opened ("" if none)
	Driver   int
	Compiler string // the compiler's version and library, or ""
	Devices  []DeviceInfo
	Err      error // why the runtime is unusable; nil when a device is usable
}

// DeviceInfo describes one device Probe found.
type DeviceInfo struct {
	Ordinal  int
	Name     string
	Arch     string
	Target   string
	Warp     int
	Units    int
	TotalMem uint64
	Err      error // why the device is unusable (arch)
}

// Probe opens kind's runtime, lists its devices and closes it again.
func Probe(kind Kind, cfg Config) Status {
	st := Status{Kind: kind}
	r, err := open(kind, cfg)
	defer r.Close()
	st.Library, st.Driver = r.Path, r.DriverVersion
	if r.Compiler != nil {
		st.Compiler = r.Compiler.Version + " (" + r.Compiler.Path + ")"
	}
	if err != nil {
		st.Err = err
		return st
	}
	usable := false
	for i := range r.Devices {
		d, err := r.Device(i)
		if err != nil {
			st.Devices = append(st.Devices, DeviceInfo{Ordinal: i, Err: err})
			continue
		}
		info := DeviceInfo{Ordinal: i, Name: d.Name, Arch: d.Arch, Target: d.Target, Warp: d.Warp, Units: d.Units, TotalMem: d.TotalMem}
		if r.Compiler != nil {
			info.Err = CheckArch(kind, d.Arch, r.Compiler.Version)
		}
		usable = usable || info.Err == nil
		st.Devices = append(st.Devices, info)
	}
	switch {
	case r.Compiler == nil:
		st.Err = r.CompilerErr
	case !usable:
		st.Err = &Error{Kind: kind, Op: r.Path, Detail: "no device with a supported architecture", Err: ErrUnsupportedArch}
	}
	return st
}

// NewWeightTag is a fresh tag for MarkWeights: one per model.
func (d *Device) NewWeightTag() uint64 { return weightTags.Add(1) }

// MarkWeights tells an emulated runtime that counts weight traffic
// (hip/emu with PLEXBENCH_EMU_TRAFFIC=1) that b holds weights under tag;
// elsewhere it does nothing. A freed buffer is unmarked.
func (d *Device) MarkWeights(b Buffer, tag uint64) error {
	if d.rt.api.markWeights == nil || b.n == 0 {
		return nil
	}
	return d.call("pbemu_mark_weights", func() int32 { return d.rt.api.markWeights(b.ptr, uintptr(b.n), tag) })
}

// WeightTraffic is the bytes marked as tag's weights and the bytes every
// launch so far loaded from them; ok is false unless the runtime counts
// (hip/emu with PLEXBENCH_EMU_TRAFFIC=1).
func (d *Device) WeightTraffic(tag uint64) (weight, read uint64, ok bool) {
	if d.rt.api.traffic == nil {
		return 0, 0, false
	}
	err := d.do(func() error {
		if rc := d.rt.api.traffic(tag, &weight, &read); rc != 0 {
			return d.rt.apiError("pbemu_traffic", rc, ErrAPI)
		}
		return nil
	})
	return weight, read, err == nil
}
