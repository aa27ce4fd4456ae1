package hip

import (
	"errors"
	"fmt"
)

// The kinds of failure callers test with errors.Is. Every error this
// package returns wraps exactly one of them.
var (
	// ErrNoLibrary: the runtime's library (libcuda.so.1, libamdhip64) was
	// not found or is not usable (not a library, a symbol missing).
	ErrNoLibrary = errors.New("runtime library not found")
	// ErrNoDevice: the library loaded but reports no usable device.
	ErrNoDevice = errors.New("no device")
	// ErrNoCompiler: a device is present but the runtime compiler
	// (libnvrtc, hiprtc) is missing.
	ErrNoCompiler = errors.New("runtime compiler missing")
	// ErrUnsupportedArch: the device's architecture is one this build's
	// kernels or the installed compiler cannot target.
	ErrUnsupportedArch = errors.New("unsupported architecture")
	// ErrCompile: a kernel source failed to compile (the log is in the error).
	ErrCompile = errors.New("kernel compile failed")
	// ErrAPI: a runtime call returned an error code.
	ErrAPI = errors.New("runtime call failed")
)

// Error is one failed step: which runtime, which call or library, the
// vendor's code and name when there is one.
type Error struct {
	Kind   Kind
	Op     string // the C call or the library, e.g. "hipInit", "libcuda.so.1"
	Code   int    // the vendor result code; 0 when none
	Name   string // the vendor's name for Code, e.g. "hipErrorNoDevice"
	Detail string // one line of context (a path, a log excerpt)
	Err    error  // one of the sentinel errors
}

func (e *Error) Error() string {
	s := e.Kind.String() + ": " + e.Op
	if e.Code != 0 || e.Name != "" {
		if e.Name != "" {
			s += fmt.Sprintf(": %s (%d)", e.Name, e.Code)
		} else {
			s += fmt.Sprintf(": error %d", e.Code)
		}
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + " [" + e.Err.Error() + "]"
}

func (e *Error) Unwrap() error { return e.Err }
