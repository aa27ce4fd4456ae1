package gguf

// This file owns what Open checks before it opens a path.

import (
	"errors"
	"fmt"
	"io/fs"

	"plexbench/internal/outfile"
)

// checkRegular refuses, at once, a path that is not a regular file: a
// FIFO would block the open until a writer came, a device never ends, a
// directory is not a model (outfile.CheckInput).
func checkRegular(path string) error {
	err := outfile.CheckInput(path)
	var pe *fs.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	return fmt.Errorf("gguf %w", err) // "PATH: is a FIFO, not a regular file"
}
