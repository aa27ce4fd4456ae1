package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"plexbench/internal/filelock"
	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
)

// hold takes a lock on path for the test, as another run would hold it.
func hold(t *testing.T, path string, mode filelock.Mode) *filelock.Lock {
	t.Helper()
	l, err := filelock.Acquire(path, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return l
}

// noLockFiles fails when a lock file is left in dir.
func noLockFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("left %s", e.Name())
		}
	}
}

// TestFilesInUse: a run is refused at start, in one line naming the flag,
// the file and the holder's pid, when it would write a base another run
// reads or writes, read a base another run writes, or keep a journal
// another run keeps; runs reading one base go together; once the holder
// is gone the same run goes through, and leaves no lock file.
func TestFilesInUse(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	out := f.at("new.kld")
	inUse := fmt.Sprintf(": in use by pid %d", os.Getpid())
	refused := func(l *filelock.Lock, args []string, flag, path string) {
		t.Helper()
		before := folderState(t, f.dir)
		code, stdout, stderr := runCLI(t, append(f.score(), args...)...)
		if want := "plexbench: " + flag + " " + path + inUse + "\n"; code != 1 || stdout != "" || stderr != want {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", args, code, stderr, want)
		}
		after := folderState(t, f.dir)
		for name, sum := range after {
			if before[name] != sum {
				t.Errorf("%q wrote %s", args, name)
			}
		}
		l.Release()
	}
	refused(hold(t, out, filelock.Exclusive), []string{"--perplexity-kld-base-out", out}, "--perplexity-kld-base-out", out)
	refused(hold(t, f.base, filelock.Shared), []string{"--perplexity-kld-base-out", f.base}, "--perplexity-kld-base-out", f.base)
	refused(hold(t, f.base, filelock.Exclusive), []string{"--perplexity-kld", f.base}, "--perplexity-kld", f.base)
	report := f.at("r.json")
	refused(hold(t, report+".journal", filelock.Exclusive), []string{"--perplexity-output", report}, "the run journal", report+".journal")

	reader := hold(t, f.base, filelock.Shared)
	if code, _, stderr := runCLI(t, append(f.score(), "--quiet", "--perplexity-kld", f.base)...); code != 0 {
		t.Errorf("a second reader of the base: exit %d, %s", code, stderr)
	}
	reader.Release()
	if code, _, stderr := runCLI(t, append(f.score(), "--quiet", "--perplexity-kld-base-out", out, "--perplexity-output", report)...); code != 0 {
		t.Fatalf("with no holder: exit %d, %s", code, stderr)
	}
	noLockFiles(t, f.dir)
}

// TestTwoRunsOneBase: while a run records a base, a second run given the
// same --perplexity-kld-base-out is refused at start naming the first
// run's pid, and the first run's base and journal are left alone; once
// the first is killed (SIGKILL: its lock file stays), its lock is gone
// with it.
func TestTwoRunsOneBase(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	base := f.at("long.kld")
	long := []string{"score", "--model", f.model, "--perplexity", shareddata.Path(t, "tinystories", "tinystories_val.txt"),
		"--perplexity-ctx", "64", "--threads", "1", "--quiet", "--perplexity-kld-base-out", base}
	first := startChild(t, long)
	if !first.waitJournal(t, base+".journal", 1) {
		t.Fatal("the first run ended before its first window")
	}
	code, _, stderr := runCLI(t, append(f.score(), "--perplexity-kld-base-out", base)...)
	if want := fmt.Sprintf("plexbench: --perplexity-kld-base-out %s: in use by pid %d\n", base, first.cmd.Process.Pid); code != 1 || stderr != want {
		t.Errorf("second run: exit %d, stderr %q; want %q", code, stderr, want)
	}
	select {
	case <-first.done:
		t.Fatal("the first run ended while the second was refused")
	default:
	}
	first.signal(syscall.SIGKILL)
	for _, p := range []string{base, base + ".journal"} {
		if _, err := os.Stat(filelock.Name(p)); err != nil {
			t.Fatalf("a killed run's lock file: %v", err)
		}
		l, err := filelock.Acquire(p, filelock.Exclusive)
		if err != nil {
			t.Fatalf("the killed run's lock is still held: %v", err)
		}
		l.Release()
	}
	noLockFiles(t, f.dir)
}

// TestBasesGCSkipsBaseInUse: `bases gc` (and --dry-run) leaves alone an
// unreferenced base a run holds, saying so with the holder's pid, and
// removes it once the run is gone.
func TestBasesGCSkipsBaseInUse(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	root := t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	orphan := filepath.Join(root, "orphan.kld")
	copyFile(t, f.base, orphan) // no record refers to it
	reader := hold(t, orphan, filelock.Shared)
	for _, dry := range []bool{true, false} {
		args := []string{"bases", "gc"}
		if dry {
			args = append(args, "--dry-run")
		}
		code, stdout, stderr := runCLIEnv(t, env, args...)
		want := fmt.Sprintf("1 in use left alone (%s: in use by pid %d)", orphan, os.Getpid())
		if code != 0 || stdout != "" || !strings.Contains(stderr, "0 of 1 bases") || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, want)
		}
		if _, err := os.Stat(orphan); err != nil {
			t.Fatalf("%q removed a base in use: %v", args, err)
		}
	}
	reader.Release()
	if code, stdout, stderr := runCLIEnv(t, env, "bases", "gc"); code != 0 || stdout != orphan+"\n" {
		t.Fatalf("gc once released: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the released base is still there: %v", err)
	}
	noLockFiles(t, root)
}

// TestRunFailingAtEndKeepsJournal: a run whose record cannot be written
// at its end (a folder where the record goes) fails, keeps its journal
// beside the report, and --resume finishes it: the same report, the
// record written, the journal gone.
func TestRunFailingAtEndKeepsJournal(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	args := append(f.score()[:len(f.score())-1], "4", "--quiet", "--perplexity-output", f.at("r.json"))
	code, _, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatal(stderr)
	}
	want := loadReportFile(t, f.at("r.json"))
	record := want.Record.Name + ".json"
	os.Rename(f.at("r.json"), f.at("ref.json"))

	root := t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	if err := os.Mkdir(filepath.Join(root, record), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLIEnv(t, env, args...)
	if code != 1 || !strings.Contains(stderr, record) {
		t.Fatalf("a record that cannot be written: exit %d, %s", code, stderr)
	}
	journal := f.at("r.json.journal")
	if n, err := scoring.JournalWindows(journal); err != nil || n != 4 {
		t.Fatalf("journal after the failure: %d windows, %v", n, err)
	}
	os.Remove(filepath.Join(root, record))
	if code, _, stderr := runCLIEnv(t, env, append(args, "--resume")...); code != 0 {
		t.Fatalf("--resume: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished run kept its journal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, record)); err != nil {
		t.Errorf("record: %v", err)
	}
	if a, b := withoutTimings(loadReportFile(t, f.at("r.json"))), withoutTimings(want); a != b {
		t.Errorf("the resumed report differs beyond timings:\n%s\nvs\n%s", a, b)
	}
}
