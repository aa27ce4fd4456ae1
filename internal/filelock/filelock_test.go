package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func skipOther(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("locks lock nothing here")
	}
}

// TestModes: shared locks go together; an exclusive one excludes every
// other, refused at once naming this process's pid; the lock file goes
// with the last holder.
func TestModes(t *testing.T) {
	t.Parallel()
	skipOther(t)
	p := filepath.Join(t.TempDir(), "b.kld")
	r1, err := Acquire(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Acquire(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(p, Exclusive)
	var iu *InUseError
	if !errors.As(err, &iu) || !errors.Is(err, ErrInUse) || iu.PID != os.Getpid() || iu.Path != p {
		t.Fatalf("exclusive beside two shared: %v", err)
	}
	if want := p + ": in use by pid " + strconv.Itoa(os.Getpid()); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	r1.Release()
	if _, err := os.Stat(Name(p)); err != nil {
		t.Errorf("the lock file went while r2 holds it: %v", err)
	}
	if _, err := Acquire(p, Exclusive); !errors.Is(err, ErrInUse) {
		t.Fatalf("exclusive beside one shared: %v", err)
	}
	r2.Release()
	r2.Release()
	if _, err := os.Stat(Name(p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the last holder left the lock file: %v", err)
	}
	w, err := Acquire(p, Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(p, Shared); !errors.Is(err, ErrInUse) {
		t.Fatalf("shared beside exclusive: %v", err)
	}
	ReleaseAll()
	if _, err := os.Stat(Name(p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReleaseAll left the lock file: %v", err)
	}
	w.Release() // released already: nothing to do
	var none *Lock
	none.Release()
}

// TestStaleLockFile: a lock file left by a process that is gone (as
// SIGKILL leaves it) locks nothing; the next holder takes it over and
// writes its own pid.
func TestStaleLockFile(t *testing.T) {
	t.Parallel()
	skipOther(t)
	p := filepath.Join(t.TempDir(), "b.kld")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Name(p), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(p, Exclusive)
	if err != nil {
		t.Fatalf("a stale lock file refused: %v", err)
	}
	_, err = Acquire(p, Exclusive)
	var iu *InUseError
	if !errors.As(err, &iu) || iu.PID != os.Getpid() {
		t.Errorf("second exclusive: %v, want this process's pid", err)
	}
	l.Release()
}

// TestReadOnlyFolder: a shared lock on a file in a folder no one may
// write to (mode r-x, as the shared data) is granted, locks nothing and
// leaves no lock file there, also for root; an exclusive one fails where
// the lock file cannot be made.
func TestReadOnlyFolder(t *testing.T) {
	t.Parallel()
	skipOther(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "b.kld")
	os.WriteFile(p, nil, 0o644)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	l, err := Acquire(p, Shared)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(Name(p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lock file in a read-only folder: %v", err)
	}
	l.Release()
	if os.Geteuid() == 0 {
		return // root makes the exclusive lock's file anyway
	}
	if _, err := Acquire(p, Exclusive); err == nil || errors.Is(err, ErrInUse) {
		t.Errorf("exclusive in a read-only folder: %v", err)
	}
}
