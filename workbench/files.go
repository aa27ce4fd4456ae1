package workbench

// files.go owns the files a job reads and writes as one set: checked
// before any work (outfile.Files: no output is a folder or lacks one, none
// is an input or another output) and locked while the run holds them
// (filelock: the base it compares against shared, the base it records and
// its journal exclusive), so that a second run, or `bases gc`, is refused
// at start instead of destroying what this one reads or writes.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"plexbench/internal/filelock"
	"plexbench/internal/outfile"
)

// Files is the set of files j reads and writes, each under the score
// flag that names it (the journal as "the run journal"). A command adds
// its own (a card, the progress file, the results root) and checks the
// whole set before any work.
func (j Job) Files() *outfile.Files {
	var f outfile.Files
	p := j.Profile
	f.In("--model", p.Model)
	f.In("--tokenizer", p.Tokenizer)
	f.In("--perplexity", p.Text)
	f.In("--perplexity", p.Corpora...)
	f.In("--perplexity-tokens", p.Tokens)
	for _, c := range j.choices() {
		f.In(c.Flag, c.Path)
	}
	f.In("--perplexity-kld", j.Compare)
	f.Out("--perplexity-output", j.Report)
	f.Out("--perplexity-kld-base-out", j.BaseOut)
	if jp, err := journalPath(j); err == nil {
		f.Out("the run journal", jp)
	}
	return &f
}

// begin starts j: its loading (see SignalContext), its files checked,
// its locks taken; the caller releases them when the run ends.
func (j Job) begin(ctx context.Context) (locks, error) {
	if err := loading(ctx); err != nil {
		return nil, err
	}
	if err := j.Files().Check(); err != nil {
		return nil, err
	}
	return j.lock()
}

// begin starts a measurement of several runs (floor, noise, a sweep): its
// loading, and exclusive locks on the files it writes, given as flag,
// path pairs; the caller releases them when it ends.
func begin(ctx context.Context, writes ...string) (locks, error) {
	if err := loading(ctx); err != nil {
		return nil, err
	}
	var ls locks
	for i := 0; i+1 < len(writes); i += 2 {
		if err := ls.take(filelock.Exclusive, writes[i], writes[i+1]); err != nil {
			ls.release()
			return nil, err
		}
	}
	return ls, nil
}

// Files is the set of files a sweep reads and writes: the texts or
// tokens, the base model and the models, the base and the runs' journals.
func (j SweepJob) Files() *outfile.Files {
	f := j.Job.Files()
	f.In("--base-model", modelFiles(j.BaseModel)...)
	f.In("the sweep model", modelFiles(j.Models...)...)
	s := &sweepRun{j: j}
	jobs := []Job{s.baseJob()}
	for _, m := range j.Models {
		jobs = append(jobs, s.modelJob(m))
	}
	w := sweepWrites(j.Base, jobs)
	for i := 0; i+1 < len(w); i += 2 {
		f.Out(w[i], w[i+1])
	}
	return f
}

// sweepWrites is what a sweep writes, as begin takes it: the base, and
// each run's journal, once (two models of one file name share a journal
// name, which checkSweep refuses, saying so).
func sweepWrites(base string, jobs []Job) []string {
	w := []string{"--perplexity-kld-base-out", base}
	for _, j := range jobs {
		if jp, err := journalPath(j); err == nil && !slices.Contains(w, jp) {
			w = append(w, "the run journal", jp)
		}
	}
	return w
}

// lock takes j's locks: shared on the base it compares against, exclusive
// on the base it records and on its journal.
func (j Job) lock() (locks, error) {
	var ls locks
	jp, _ := journalPath(j)
	err := ls.take(filelock.Shared, "--perplexity-kld", j.Compare)
	if err == nil {
		err = ls.take(filelock.Exclusive, "--perplexity-kld-base-out", j.BaseOut)
	}
	if err == nil {
		err = ls.take(filelock.Exclusive, "the run journal", jp)
	}
	if err != nil {
		ls.release()
		return nil, err
	}
	return ls, nil
}

// locks are the locks a run holds.
type locks []*filelock.Lock

// take locks path (named by flag) in mode; "" is skipped, and so is a file
// that is not a regular one (a device, a FIFO), whose writes are not
// replaced by a rename. Symlinks are followed: every name of a file takes
// the lock beside the file itself.
func (ls *locks) take(mode filelock.Mode, flag, path string) error {
	if path == "" || path == outfile.Stdout {
		return nil
	}
	if mode == filelock.Shared {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return nil // an unreadable input is the run's to report
		}
	} else if !outfile.Atomic(path) {
		return nil
	}
	target, err := outfile.Resolve(path)
	if err != nil {
		return nil
	}
	l, err := filelock.Acquire(target, mode)
	var iu *filelock.InUseError
	if errors.As(err, &iu) {
		return fmt.Errorf("%s %w", flag, &filelock.InUseError{Path: path, PID: iu.PID})
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	*ls = append(*ls, l)
	return nil
}

// release gives the locks back.
func (ls locks) release() {
	for _, l := range ls {
		l.Release()
	}
}
