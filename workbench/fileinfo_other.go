//go:build !unix

package workbench

import "os"

// inode is 0 where the OS has none to give: path, size and time decide.
func inode(os.FileInfo) uint64 { return 0 }

// diskFree is -1 where the OS does not say.
func diskFree(string) int64 { return -1 }
