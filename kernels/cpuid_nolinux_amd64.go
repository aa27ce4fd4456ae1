//go:build !purego && !linux

package kernels

// requestAMX: only Linux's grant is known here; elsewhere AMX is off.
func requestAMX() bool { return false }
