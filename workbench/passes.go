package workbench

// passes.go owns measurements made of several runs over one text (floor,
// noise): each pass is a Job scored on a bench, told to the caller as it
// starts, a comparison takes its tokens from its base, and a pass that
// stops early fails the measurement.

import (
	"context"
	"errors"
	"fmt"

	"plexbench/profiles"
	"plexbench/scoring"
)

// passes is a multi-pass measurement in progress.
type passes struct {
	ctx      context.Context
	name     string // "floor", "noise": in errors
	pass, of int
	// tell, when set, is told of each pass as it starts and returns where
	// that pass's progress goes (nil: nowhere).
	tell func(pass, passes int, what string) func(scoring.Event)
}

// run scores job as the next pass on b, with b's profile.
func (ps *passes) run(b *Bench, what string, job Job) (scoring.Report, error) {
	ps.pass++
	job.Profile = b.profile
	if job.Compare != "" {
		job.Profile.Text, job.Profile.Tokens = "", "" // the base carries the tokens
	}
	if ps.tell != nil {
		job.Progress = ps.tell(ps.pass, ps.of, what)
	}
	out, err := watched(ps.ctx, job, b.run)
	if err == nil && out.Report.Partial {
		err = errors.New(out.Report.PartialReason)
	}
	if err != nil {
		return out.Report, ps.fail(what, err)
	}
	return out.Report, nil
}

// runOn is run on a bench of p's own (another model, other engine
// settings), released after the pass.
func (ps *passes) runOn(p profiles.Profile, what string, job Job) (scoring.Report, error) {
	if err := loading(ps.ctx); err != nil {
		return scoring.Report{}, err
	}
	b, err := Open(p)
	if err != nil {
		ps.pass++
		return scoring.Report{}, ps.fail(what, err)
	}
	defer b.Close()
	return ps.run(b, what, job)
}

func (ps *passes) fail(what string, err error) error {
	return fmt.Errorf("%s pass %d (%s): %w", ps.name, ps.pass, what, err)
}
