//go:build !unix

package main

import "os"

// inode is 0 where the OS has none to give: path, size and time decide.
func inode(os.FileInfo) uint64 { return 0 }
