//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

func acquire(path string, mode Mode) (*Lock, error) {
	name := Name(path)
	how := syscall.LOCK_SH
	if mode == Exclusive {
		how = syscall.LOCK_EX
	}
	// A holder leaving removes the lock file while holding it exclusively;
	// a process that opened it just before then locks a file no longer
	// there, sees that, and opens the new one.
	for range 100 {
		f, err := open(name, mode)
		if err != nil {
			return nil, err
		}
		if f == nil {
			return &Lock{path: path, mode: mode}, nil // locks nothing
		}
		if err := flock(f, how|syscall.LOCK_NB); err != nil {
			pid := readPID(f)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &InUseError{Path: path, PID: pid}
			}
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if stillThere(f, name) {
			writePID(f, mode) // fails harmlessly on a lock file only read
			return &Lock{path: path, f: f, mode: mode}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: the lock file keeps being replaced", name)
}

// open opens (making it when missing) the lock file name. A shared lock
// falls back to a lock file it can only read, and to none (nil, nil) where
// none can be made. It makes none in a folder whose mode lets no one write
// (shared read-only data, even to root): nothing there is written or
// removed without changing that first, and no lock file is left there.
func open(name string, mode Mode) (*os.File, error) {
	if mode == Shared {
		if fi, err := os.Stat(filepath.Dir(name)); err == nil && fi.Mode().Perm()&0o222 == 0 {
			if f, err := os.Open(name); err == nil {
				return f, nil
			}
			return nil, nil
		}
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil || mode == Exclusive {
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		return f, nil
	}
	if f, err := os.Open(name); err == nil {
		return f, nil
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return nil, nil
	}
	return nil, fmt.Errorf("lock %s: %w", name, err)
}

// stillThere reports whether the open file f is still the one at name.
func stillThere(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(name)
	return err == nil && os.SameFile(a, b)
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// release removes the lock file if no one else holds it (only an
// exclusive holder may: see acquire), then drops the lock.
func release(l *Lock) {
	if flock(l.f, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		os.Remove(Name(l.path))
	}
	l.f.Close()
}
