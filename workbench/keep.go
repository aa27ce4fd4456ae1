package workbench

// keep.go is the one record keeper: every run that keeps a record —
// `score`, `ab`, `floor`, `noise`, `sweep`, the TUI's runner — is kept
// here, as its Job's Keep says, and the path comes back in its Outcome.
// The naming and writing are the results store's (results.Keep).

import (
	"errors"
	"fmt"
	"os"
	"time"

	"plexbench/results"
)

// Keep says where a job's run is kept. Its zero value keeps nothing.
type Keep struct {
	// Root is the results root the record goes under; "" keeps nothing.
	Root string
	// Unrecorded also keeps a run that is no record — stopped, failed
	// part-way, or not describable — under a stopped-run name, as the
	// TUI's history lists them; else only records are kept.
	Unrecorded bool
	// Profile writes the profile the run ran beside it (NAME.toml).
	Profile bool
	// Base records the run's KLD base and keeps it beside it (NAME.kld):
	// the base is written at a pending name in the root while the run
	// scores and moved when it is kept, so no temporary name reaches a
	// record. Ignored for a job that names its own BaseOut or scores a
	// task file.
	Base bool
}

// ErrNotKept marks a run that finished but could not be kept.
var ErrNotKept = errors.New("not kept")

// Kept runs run on j and keeps what it returns as j.Keep says: the one
// record keeper. Bench.Score, ScoreCorpora, Floor and Noise go through
// it (so Run, RunCorpora and Sweep do); a Runner that scores another way
// (a test's fake engine) wraps its run in it to keep runs as Score does. The outcome names where the run was kept (Record); a
// failure to keep is its KeepErr, and the error when the run itself
// succeeded.
func Kept(j Job, run func(Job) (Outcome, error)) (Outcome, error) {
	k := j.Keep
	if k.Root == "" {
		return run(j)
	}
	started := time.Now()
	pending := ""
	if k.Base && j.BaseOut == "" && len(j.choices()) == 0 {
		var err error
		if pending, err = results.PendingBase(k.Root, started); err != nil {
			return Outcome{}, err
		}
		j.BaseOut = pending
	}
	out, err := run(j)
	keepable := out.Report.Object != "" && (k.Unrecorded || (err == nil && out.Report.Record != nil && !out.Report.Partial))
	if !keepable {
		if pending != "" {
			os.Remove(pending) // a base nothing will name
		}
		return out, err
	}
	x := results.Beside{Unrecorded: k.Unrecorded, Model: j.Profile.Model, Started: started, PendingBase: pending}
	if k.Profile {
		x.Profile = &j.Profile
	}
	kept, kerr := results.Keep(k.Root, &out.Report, x)
	if kerr != nil {
		out.KeepErr = fmt.Errorf("run %w in %s: %v", ErrNotKept, k.Root, kerr)
		if err == nil {
			err = out.KeepErr
		}
		return out, err
	}
	out.Record = kept.Report
	return out, err
}
