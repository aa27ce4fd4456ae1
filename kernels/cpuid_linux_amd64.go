//go:build !purego

package kernels

import "syscall"

// archReqXcompPerm is arch_prctl's ARCH_REQ_XCOMP_PERM (Linux 5.16+): it
// grants the process a dynamically enabled state component (AMX's tile
// data); until then the first AMX instruction traps. Older kernels, and
// ones whose XSAVE setup lacks the component, refuse it.
const archReqXcompPerm = 0x1023

func requestAMX() bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatTileData, 0)
	return errno == 0
}
