//go:build !unix

package outfile

// writable cannot tell elsewhere: a folder is taken as writable, and a
// write that fails says so.
func writable(dir string) bool { return true }
