package results

// gc.go owns removing a base for `bases gc`: only under the base's
// exclusive lock, so that a base a run is reading or writing (it holds the
// lock: see workbench) is left alone, and no run starts on it meanwhile.

import (
	"os"

	"plexbench/internal/filelock"
	"plexbench/internal/outfile"
)

// RemoveBase removes the base at path unless a run holds it: the error
// then wraps filelock.ErrInUse and names the holder's pid. With dryRun it
// only checks.
func RemoveBase(path string, dryRun bool) error {
	target, err := outfile.Resolve(path)
	if err != nil {
		return err
	}
	l, err := filelock.Acquire(target, filelock.Exclusive)
	if err != nil {
		return err
	}
	defer l.Release()
	if dryRun {
		return nil
	}
	return os.Remove(path)
}
