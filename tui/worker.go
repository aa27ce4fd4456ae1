package tui

// worker.go owns the background side of a run: the job that calls the
// Runner in a command's goroutine, saves what it returns, and feeds
// progress to the UI through a channel read by a command that re-arms
// itself (bubbletea's realtime pattern). Messages carry the run's ID so a
// view drops those of runs it no longer shows. Pause blocks the progress
// callback, which scoring calls between windows (a multiple-choice run's
// tasks).

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// Runner scores a job: the command line passes workbench.Run, tests a
// fake. The TUI never loads a model itself.
type Runner interface {
	// Run loads what j.Profile names, scores it and keeps it as j.Keep
	// says (workbench.Kept); progress events flow to j.Progress. The TUI
	// decides the job's progress callback, the KLD base to record (BaseOut,
	// or Keep.Base) or compare against (Compare) and where the run is kept.
	// On cancellation it returns the partial report with an error wrapping
	// scoring.ErrStopped, as scoring.Run does.
	Run(ctx context.Context, j workbench.Job) (workbench.Outcome, error)
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, j workbench.Job) (workbench.Outcome, error)

// Run calls f.
func (f RunnerFunc) Run(ctx context.Context, j workbench.Job) (workbench.Outcome, error) {
	return f(ctx, j)
}

// eventMsg is one progress event of run id.
type eventMsg struct {
	id int
	ev scoring.Event
}

// doneMsg ends run id: its report (partial or not), the run's error, and
// where it was saved (files.Report), or why it could not be.
type doneMsg struct {
	id      int
	rep     scoring.Report
	err     error
	files   results.Run
	saved   bool // the report is on disk
	saveErr error
}

// runSpec is what one run does.
type runSpec struct {
	profile    profiles.Profile
	base       string // compare against this KLD base; empty: none
	recordBase bool   // keep a base of this run beside its report
	baseOut    string // record a base here (an A/B's temporary one); empty: none
	// partner is the other side when this run is an A/B's A: the pair is
	// refused before A scores when their tokenizers differ.
	partner *profiles.Profile
	// choice, when it names a task file, scores it instead of the text;
	// such a run records no base.
	choice     workbench.Choice
	resultsDir string
}

// job is a run in flight, shared between the view that shows it and the
// goroutine that runs it.
type job struct {
	id     int
	cancel context.CancelFunc
	gate   *gate
	keep   *atomic.Bool // the user asked to go on past a met stopping rule
	msgs   chan tea.Msg
	ctx    context.Context
	quit   <-chan struct{} // closed when the app quits
}

// newJob prepares run id under parent (the app's context: cancelling it
// abandons every run).
func newJob(parent context.Context, id int) *job {
	ctx, cancel := context.WithCancel(parent)
	return &job{id: id, cancel: cancel, gate: &gate{}, keep: &atomic.Bool{}, msgs: make(chan tea.Msg, 16), ctx: ctx, quit: parent.Done()}
}

// start returns the command that runs spec and the one that delivers its
// first message.
func (j *job) start(r Runner, spec runSpec) tea.Cmd {
	return tea.Batch(j.run(r, spec), j.wait())
}

// run is the command doing the work; it returns no message itself.
func (j *job) run(r Runner, spec runSpec) tea.Cmd {
	return func() tea.Msg {
		defer close(j.msgs)
		// Every run is kept, a stopped one too (the history lists it), with
		// the profile it ran.
		jb := workbench.Job{Profile: spec.profile, Compare: spec.base, BaseOut: spec.baseOut, Partner: spec.partner,
			Choice: spec.choice, KeepGoing: j.keep.Load,
			Keep: workbench.Keep{Root: spec.resultsDir, Unrecorded: true, Profile: true, Base: spec.recordBase}}
		jb.Progress = func(ev scoring.Event) {
			j.send(eventMsg{id: j.id, ev: ev})
			if ev.Kind == scoring.EventWindowDone {
				j.gate.wait(j.ctx)
			}
		}
		out, err := r.Run(j.ctx, jb)
		done := doneMsg{id: j.id, rep: out.Report, err: err}
		switch {
		case out.KeepErr != nil:
			done.saveErr = out.KeepErr
			if errors.Is(err, workbench.ErrNotKept) {
				done.err = nil // the run itself finished
			}
		case out.Record != "":
			done.files, done.saved = results.Run{Report: out.Record}, true
		}
		j.send(done)
		return nil
	}
}

// send delivers msg to the UI. It blocks while the UI is behind (the
// channel is buffered); a stop must not lose the final messages, so it
// gives up only when the app has quit.
func (j *job) send(msg tea.Msg) {
	select {
	case j.msgs <- msg:
	case <-j.quit:
	}
}

// wait is the re-arming command: it delivers the job's next message.
func (j *job) wait() tea.Cmd {
	return func() tea.Msg {
		msg, ok := <-j.msgs
		if !ok {
			return nil
		}
		return msg
	}
}

// stopped reports whether err is a stop, not a failure.
func stopped(err error) bool { return errors.Is(err, scoring.ErrStopped) }

// gate pauses a run between windows.
type gate struct {
	mu     sync.Mutex
	paused bool
	resume chan struct{} // closed on resume
}

// set pauses or resumes.
func (g *gate) set(paused bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if paused == g.paused {
		return
	}
	g.paused = paused
	if paused {
		g.resume = make(chan struct{})
	} else {
		close(g.resume)
	}
}

// wait blocks while paused, until resumed or ctx is cancelled (a stop
// while paused ends the pause).
func (g *gate) wait(ctx context.Context) {
	g.mu.Lock()
	paused, resume := g.paused, g.resume
	g.mu.Unlock()
	if !paused {
		return
	}
	select {
	case <-resume:
	case <-ctx.Done():
	}
}
