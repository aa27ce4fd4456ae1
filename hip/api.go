package hip

// api.go owns the C entry points: one Go function table with the same
// shapes for CUDA and HIP (../shared/spec/gpu-runtime.md §2), filled from
// each runtime's names. Types follow §3: int/enum → int32, unsigned →
// uint32, size_t and every handle and device pointer → uintptr.

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverAPI is the device runtime. CUDA-only entries (contexts) are nil
// for HIP and the reverse.
type driverAPI struct {
	init             func(flags uint32) int32
	driverVersion    func(v *int32) int32
	runtimeVersion   func(v *int32) int32 // HIP only
	deviceCount      func(n *int32) int32
	deviceGet        func(dev *int32, ordinal int32) int32
	setDevice        func(ordinal int32) int32 // HIP only
	deviceName       func(buf *byte, n int32, dev int32) int32
	deviceAttr       func(v *int32, attr int32, dev int32) int32
	memInfo          func(free, total *uintptr) int32
	props            func(buf *byte, dev int32) int32 // HIP only: hipGetDevicePropertiesR0600 or the legacy call
	propsArchOffset  int
	primaryCtxRetain func(ctx *uintptr, dev int32) int32 // CUDA only
	ctxSetCurrent    func(ctx uintptr) int32             // CUDA only
	streamCreate     func(s *uintptr, flags uint32) int32
	streamSync       func(s uintptr) int32
	streamDestroy    func(s uintptr) int32
	malloc           func(p *uintptr, n uintptr) int32
	free             func(p uintptr) int32
	memsetD8Async    func(p uintptr, v uint8, n uintptr, s uintptr) int32
	htodAsync        func(dst uintptr, src unsafe.Pointer, n uintptr, s uintptr) int32
	dtohAsync        func(dst unsafe.Pointer, src uintptr, n uintptr, s uintptr) int32
	moduleLoadData   func(m *uintptr, image *byte) int32
	moduleGetFunc    func(f *uintptr, m uintptr, name string) int32
	moduleUnload     func(m uintptr) int32
	launch           func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	funcSetAttr      func(f uintptr, attr int32, v int32) int32 // cuFuncSetAttribute; HIP's hipFuncSetAttribute takes host functions: unbound
	funcGetAttr      func(v *int32, attr int32, f uintptr) int32
	eventCreate      func(e *uintptr, flags uint32) int32
	eventRecord      func(e uintptr, s uintptr) int32
	eventSync        func(e uintptr) int32
	eventElapsed     func(ms *float32, start, end uintptr) int32
	eventDestroy     func(e uintptr) int32
	sync             func() int32
	cuErrName        func(code int32, s **byte) int32 // CUDA
	hipErrName       func(code int32) string          // HIP
	// The emulator's own (hip/emu), for the weight traffic count.
	markWeights func(p uintptr, n uintptr, tag uint64) int32
	traffic     func(tag uint64, weight, read *uint64) int32
}

// binding ties a function-table field to its C name.
type binding struct {
	fn       any // pointer to a func field
	name     string
	optional bool
}

func cudaBindings(a *driverAPI) []binding {
	return []binding{
		{&a.init, "cuInit", false},
		{&a.driverVersion, "cuDriverGetVersion", false},
		{&a.deviceCount, "cuDeviceGetCount", false},
		{&a.deviceGet, "cuDeviceGet", false},
		{&a.deviceName, "cuDeviceGetName", false},
		{&a.deviceAttr, "cuDeviceGetAttribute", false},
		{&a.memInfo, "cuMemGetInfo_v2", false},
		{&a.primaryCtxRetain, "cuDevicePrimaryCtxRetain", false},
		{&a.ctxSetCurrent, "cuCtxSetCurrent", false},
		{&a.streamCreate, "cuStreamCreate", false},
		{&a.streamSync, "cuStreamSynchronize", false},
		{&a.streamDestroy, "cuStreamDestroy_v2", false},
		{&a.malloc, "cuMemAlloc_v2", false},
		{&a.free, "cuMemFree_v2", false},
		{&a.memsetD8Async, "cuMemsetD8Async", false},
		{&a.htodAsync, "cuMemcpyHtoDAsync_v2", false},
		{&a.dtohAsync, "cuMemcpyDtoHAsync_v2", false},
		{&a.moduleLoadData, "cuModuleLoadData", false},
		{&a.moduleGetFunc, "cuModuleGetFunction", false},
		{&a.moduleUnload, "cuModuleUnload", false},
		{&a.launch, "cuLaunchKernel", false},
		{&a.funcSetAttr, "cuFuncSetAttribute", true},
		{&a.funcGetAttr, "cuFuncGetAttribute", true},
		{&a.markWeights, "pbemu_mark_weights", true},
		{&a.traffic, "pbemu_traffic", true},
		{&a.eventCreate, "cuEventCreate", false},
		{&a.eventRecord, "cuEventRecord", false},
		{&a.eventSync, "cuEventSynchronize", false},
		{&a.eventElapsed, "cuEventElapsedTime", false},
		{&a.eventDestroy, "cuEventDestroy_v2", false},
		{&a.sync, "cuCtxSynchronize", false},
		{&a.cuErrName, "cuGetErrorName", true},
	}
}

func hipBindings(a *driverAPI) []binding {
	return []binding{
		{&a.init, "hipInit", false},
		{&a.driverVersion, "hipDriverGetVersion", false},
		{&a.runtimeVersion, "hipRuntimeGetVersion", false},
		{&a.deviceCount, "hipGetDeviceCount", false},
		{&a.deviceGet, "hipDeviceGet", false},
		{&a.setDevice, "hipSetDevice", false},
		{&a.deviceName, "hipDeviceGetName", false},
		{&a.deviceAttr, "hipDeviceGetAttribute", false},
		{&a.memInfo, "hipMemGetInfo", false},
		{&a.streamCreate, "hipStreamCreateWithFlags", false},
		{&a.streamSync, "hipStreamSynchronize", false},
		{&a.streamDestroy, "hipStreamDestroy", false},
		{&a.malloc, "hipMalloc", false},
		{&a.free, "hipFree", false},
		{&a.memsetD8Async, "hipMemsetD8Async", false},
		{&a.htodAsync, "hipMemcpyHtoDAsync", false},
		{&a.dtohAsync, "hipMemcpyDtoHAsync", false},
		{&a.moduleLoadData, "hipModuleLoadData", false},
		{&a.moduleGetFunc, "hipModuleGetFunction", false},
		{&a.moduleUnload, "hipModuleUnload", false},
		{&a.launch, "hipModuleLaunchKernel", false},
		{&a.funcGetAttr, "hipFuncGetAttribute", true},
		{&a.markWeights, "pbemu_mark_weights", true},
		{&a.traffic, "pbemu_traffic", true},
		{&a.eventCreate, "hipEventCreateWithFlags", false},
		{&a.eventRecord, "hipEventRecord", false},
		{&a.eventSync, "hipEventSynchronize", false},
		{&a.eventElapsed, "hipEventElapsedTime", false},
		{&a.eventDestroy, "hipEventDestroy", false},
		{&a.sync, "hipDeviceSynchronize", false},
		{&a.hipErrName, "hipGetErrorName", true},
	}
}

// requiredNames are the names a candidate library must export.
func requiredNames(bs []binding) []string {
	var out []string
	for _, b := range bs {
		if !b.optional {
			out = append(out, b.name)
		}
	}
	return out
}

// bind fills the table from lib. Missing optional names stay nil; a
// missing required name was rejected by openFirst already, but is checked
// again so that no nil function is ever called.
func bind(lib *library, bs []binding) (missing string) {
	for _, b := range bs {
		p, err := lib.sym(b.name)
		if err != nil {
			if !b.optional {
				return b.name
			}
			continue
		}
		purego.RegisterFunc(b.fn, p)
	}
	return ""
}

// bindHIPProps picks the property call whose layout we know: ROCm 6+'s
// R0600 (gcnArchName at byte 1160) or the legacy one (byte 396, ROCm 5).
func bindHIPProps(lib *library, a *driverAPI, runtimeMajor int) {
	if p, err := lib.sym("hipGetDevicePropertiesR0600"); err == nil {
		purego.RegisterFunc(&a.props, p)
		a.propsArchOffset = 1160
		return
	}
	if runtimeMajor >= 6 {
		return // a legacy call with an unknown layout: leave the arch unread
	}
	if p, err := lib.sym("hipGetDeviceProperties"); err == nil {
		purego.RegisterFunc(&a.props, p)
		a.propsArchOffset = 396
	}
}

// rtcAPI is NVRTC or hiprtc; the shapes are the same.
type rtcAPI struct {
	create      func(prog *uintptr, src string, name string, nh int32, headers, names unsafe.Pointer) int32
	compile     func(prog uintptr, n int32, opts unsafe.Pointer) int32
	logSize     func(prog uintptr, n *uintptr) int32
	log         func(prog uintptr, buf *byte) int32
	codeSize    func(prog uintptr, n *uintptr) int32 // hiprtcGetCodeSize, nvrtcGetCUBINSize
	code        func(prog uintptr, buf *byte) int32
	destroy     func(prog *uintptr) int32
	version     func(major, minor *int32) int32
	errorString func(code int32) string
}

func rtcBindings(a *rtcAPI, prefix string) []binding {
	codeSize, code := "GetCodeSize", "GetCode"
	if prefix == "nvrtc" {
		codeSize, code = "GetCUBINSize", "GetCUBIN"
	}
	return []binding{
		{&a.create, prefix + "CreateProgram", false},
		{&a.compile, prefix + "CompileProgram", false},
		{&a.logSize, prefix + "GetProgramLogSize", false},
		{&a.log, prefix + "GetProgramLog", false},
		{&a.codeSize, prefix + codeSize, false},
		{&a.code, prefix + code, false},
		{&a.destroy, prefix + "DestroyProgram", false},
		{&a.version, prefix + "Version", false},
		{&a.errorString, prefix + "GetErrorString", true},
	}
}

// cString copies a NUL-terminated C string.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for i := 0; i < 256; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(p), i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cBytes is buf up to its first NUL.
func cBytes(buf []byte) string {
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i])
		}
	}
	return string(buf)
}
