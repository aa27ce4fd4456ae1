// Package filelock owns the advisory locks that keep two plexbench
// processes (or two runs in one) off the same file: a run holds a shared
// lock on a base it reads and an exclusive lock on a base it writes and on
// its journal, and `bases gc` removes only a base it can lock exclusively.
//
// The lock is not taken on the file itself, which an atomic write replaces
// by a rename (a new inode), but on a small file beside it, PATH.lock,
// holding the pid of the process that last took it. On unix it is an
// flock(2) lock, which the kernel drops with the process: a lock file left
// by a killed process (SIGKILL cannot be handled) locks nothing, and the
// next run takes it over. The last holder to leave removes it. Elsewhere
// locking is a no-op.
//
// Locks never wait: a lock another holder's mode excludes is refused at
// once with an *InUseError naming the holder's pid.
//
// It imports only the standard library so that every writer can use it.
package filelock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Mode is how a lock is held.
type Mode int

const (
	// Shared is a reader's lock: any number may hold it together.
	Shared Mode = iota
	// Exclusive is a writer's lock: no other lock on the file is held.
	Exclusive
)

// ErrInUse marks a lock refused because another holder has the file.
var ErrInUse = errors.New("in use")

// InUseError is a lock refused because another holder has the file.
type InUseError struct {
	Path string // the file asked for (not its lock file)
	PID  int    // the holder's, as its lock file says; 0 when unknown
}

func (e *InUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s: in use by pid %d", e.Path, e.PID)
	}
	return e.Path + ": in use by another process"
}

// Is makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Is(target error) bool { return target == ErrInUse }

// Name is the lock file of path.
func Name(path string) string { return path + ".lock" }

// Lock is a held lock; Release gives it back.
type Lock struct {
	path string   // the file locked
	f    *os.File // the open lock file; nil for a lock that locks nothing
	mode Mode
}

// Acquire locks path in mode, at once or not at all. The lock file is made
// beside path; where it cannot be made (a base read from a read-only
// folder), a shared lock locks nothing and is still granted, and an
// exclusive one fails.
func Acquire(path string, mode Mode) (*Lock, error) {
	l, err := acquire(path, mode)
	if err != nil {
		return nil, err
	}
	if l.f != nil {
		held.add(l)
	}
	return l, nil
}

// Release gives the lock back, removing the lock file when no one else
// holds it. It is safe on nil and twice.
func (l *Lock) Release() {
	if l == nil || !held.take(l) {
		return // a lock that locks nothing, or released already
	}
	release(l)
}

// Path is the file the lock is on.
func (l *Lock) Path() string { return l.path }

// ReleaseAll releases every lock this process holds, for a signal handler
// that ends the process next (the kernel would drop them; releasing them
// also removes the lock files).
func ReleaseAll() {
	for _, l := range held.all() {
		l.Release()
	}
}

// readPID is the pid a lock file holds (its first line); 0 when it holds
// none.
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// writePID writes this process's pid as the lock file's first line. An
// exclusive holder truncates what was there; shared holders write over
// each other (the first line is always one of theirs).
func writePID(f *os.File, mode Mode) {
	if mode == Exclusive {
		f.Truncate(0)
	}
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
}

// registry is the set of locks this process holds.
type registry struct {
	sync.Mutex
	m map[*Lock]struct{}
}

// held is this process's registry. It is process-wide on purpose: a
// signal handler has no other way to reach the locks.
var held = &registry{m: map[*Lock]struct{}{}}

func (r *registry) add(l *Lock) {
	r.Lock()
	r.m[l] = struct{}{}
	r.Unlock()
}

// take removes l and reports whether it was there: only one of two
// releases racing (a signal handler's and the run's) releases it.
func (r *registry) take(l *Lock) bool {
	r.Lock()
	defer r.Unlock()
	_, ok := r.m[l]
	delete(r.m, l)
	return ok
}

func (r *registry) all() []*Lock {
	r.Lock()
	defer r.Unlock()
	out := make([]*Lock, 0, len(r.m))
	for l := range r.m {
		out = append(out, l)
	}
	return out
}
