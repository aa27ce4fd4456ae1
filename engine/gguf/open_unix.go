//go:build unix

package gguf

// This file owns Open on Unix: a read-only shared mapping of the whole file.

import (
	"fmt"
	"os"
	"syscall"
)

// Open memory-maps path read-only and parses its header, metadata and
// tensor index. Tensor data is not touched until TensorData slices are read.
func Open(path string) (*File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	size := st.Size()
	if size < headerSize {
		// mmap rejects empty files; short ones need no mapping to be refused.
		return nil, fmt.Errorf("gguf %s: %w: file is %d bytes, header needs %d", path, ErrTruncated, size, headerSize)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("gguf %s: file of %d bytes does not fit the address space", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: mmap: %w", path, err)
	}
	f, err := parseBytes(data, path)
	if err != nil {
		syscall.Munmap(data)
		return nil, err
	}
	f.data, f.unmap = data, syscall.Munmap
	return f, nil
}
