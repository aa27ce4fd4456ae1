//go:build unix

package workbench

import (
	"os"
	"syscall"
)

// inode is the file's inode number: a file replaced by another of the same
// size and time is still told apart.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// diskFree is the space an unprivileged writer has in dir's file system
// (-1 when the OS does not say).
func diskFree(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
