//go:build unix

package outfile

import "syscall"

// writable reports whether this process may make files in folder dir.
func writable(dir string) bool {
	return syscall.Access(dir, 0x2 /* W_OK */) == nil
}
