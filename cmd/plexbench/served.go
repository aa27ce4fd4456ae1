package main

// served.go owns what `score` does with a served model's failure: a
// server that keeps failing a request ends the run with its one line, the
// windows scored before it written as a partial report and the journal
// kept for --resume.

import (
	"errors"

	"plexbench/served"
)

// keepsPartial says whether a run that failed with err still writes its
// partial report: a server's failure, not the run's.
func keepsPartial(err error) bool { return errors.Is(err, served.ErrServer) }
