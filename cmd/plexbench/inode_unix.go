//go:build unix

package main

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
