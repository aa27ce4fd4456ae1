package results

// trace.go keeps a run's token trace beside its report (TracePath) and
// reads it back for `plexbench worst` and the TUI.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"plexbench/internal/outfile"
	"plexbench/scoring"
)

// ErrNoTrace marks a report kept without a token trace.
var ErrNoTrace = errors.New("no token trace")

// writeTrace writes rep's trace beside the report at path, or removes a
// trace an earlier run of the same name left there when rep has none.
func writeTrace(report string, rep *scoring.Report) error {
	path := TracePath(report)
	if rep.Trace == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("token trace: %w", err)
		}
		return nil
	}
	data, err := rep.Trace.Encode()
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, data)
}

// ReadTrace reads the trace kept beside the report at path and checks that
// it is rep's; a report without one is ErrNoTrace.
func ReadTrace(report string, rep *scoring.Report) (*scoring.TokenTrace, error) {
	path := TracePath(report)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (%s is missing): it was kept by a plexbench that recorded no per-token data, "+
			"or without its sidecar; rerun it to list its tokens", report, ErrNoTrace, path)
	}
	t, err := scoring.ReadTrace(path)
	if err != nil {
		return nil, err
	}
	if err := scoring.CheckTrace(t, rep); err != nil {
		return nil, fmt.Errorf("%w %s: not the trace of %s: %v", scoring.ErrBadTrace, path, report, err)
	}
	return t, nil
}
