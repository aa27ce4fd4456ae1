//go:build unix

package outfile

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid may still run (EPERM: it runs as
// another user).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
