// Package hip loads a GPU runtime at run time, without cgo: the CUDA
// driver (libcuda.so.1) and NVRTC, or HIP (libamdhip64) and hiprtc, are
// found by a search of the usual places and override variables
// (search.go), opened with purego's dlopen, and called through one Go
// function table that has the same shapes for both (api.go). Device
// kernels are C++ sources in one dialect, compiled at run time with
// nvrtc or hiprtc for the device's exact target and cached on disk by a
// key of source, options, target and compiler (cache.go).
//
// On top of that it offers devices, buffers, streams, modules, launches
// and events, each Runtime's calls running on its own locked OS thread
// (thread.go), and Probe, which says what was found and why a runtime is
// unusable. Every error wraps one of the sentinels in errors.go. It knows
// nothing of models; the kernels' sources live in kernels/gpu.
//
// Building needs nothing GPU-related (CGO_ENABLED=0 works); without a
// library, Open returns an error wrapping ErrNoLibrary.
package hip
