//go:build !unix

package gguf

// This file owns Open where mmap is unavailable: the file is read whole.

import (
	"fmt"
	"os"
)

// Open reads path into memory and parses its header, metadata and tensor index.
func Open(path string) (*File, error) {
	if err := checkRegular(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf %s: %w", path, err)
	}
	f, err := parseBytes(data, path)
	if err != nil {
		return nil, err
	}
	f.data = data
	return f, nil
}
