package workbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"plexbench/internal/filelock"
	"plexbench/internal/outfile"
	"plexbench/scoring"
)

// SignalContext returns a context cancelled by the first SIGINT or SIGTERM.
// Once a run scores its windows, it then stops after the window in flight
// and writes what it has. Before that — while a model loads, a text is
// read, a base or task file opens, any of which may take long or block on
// a FIFO — there is nothing to keep, so the first signal ends the process
// at once. A second signal always does. Ending at once removes the
// temporary files still being written and the locks held, with status 130.
// stop releases the signals.
func SignalContext() (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, release := signalContext(sigs, func(s os.Signal, why string) {
		if why != "" {
			fmt.Fprintf(os.Stderr, "plexbench: %v %s\n", s, why)
		}
		outfile.RemoveTemps()
		filelock.ReleaseAll()
		os.Exit(130)
	})
	return ctx, func() {
		signal.Stop(sigs)
		release()
	}
}

// signalContext is SignalContext on the signals sigs delivers, ending the
// process with exit (why says, when not empty, what the signal cut short).
func signalContext(sigs <-chan os.Signal, exit func(s os.Signal, why string)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	g := &signalGate{cancel: cancel}
	ctx = context.WithValue(ctx, gateKey{}, g)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			if !g.signal(s) {
				exit(s, "before scoring began: stopped")
				return
			}
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			exit(s, "")
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		cancel(context.Canceled)
	}
}

// signalGate says what a signal does to the runs under a SignalContext:
// stop them between windows (scoring) or end the process (not scoring).
type signalGate struct {
	mu        sync.Mutex
	scoring   bool
	signalled bool
	cancel    context.CancelCauseFunc
}

type gateKey struct{}

// signal records a first signal and cancels the context; it reports
// whether a run is scoring (and will stop between windows).
func (g *signalGate) signal(s os.Signal) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.signalled = true
	g.cancel(fmt.Errorf("%v", s))
	return g.scoring
}

// loading marks ctx's work as loading (a model, a text, a base): a first
// signal now ends the process at once. Work already stopped by one is not
// begun: the error wraps scoring.ErrStopped. The caller must have nothing
// unwritten to lose (a finished run's record written, or nothing kept
// anyway on a stop).
func loading(ctx context.Context) error {
	if g, ok := ctx.Value(gateKey{}).(*signalGate); ok {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.signalled {
			g.scoring = false
			return nil
		}
	}
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w before scoring began: %w", scoring.ErrStopped, context.Cause(ctx))
}

// watch passes a run's events on to progress (nil: none) and marks ctx's
// work as scoring once its windows start: from then a first signal stops
// the run after the window in flight, and it writes what it has.
func watch(ctx context.Context, progress func(scoring.Event)) func(scoring.Event) {
	g, ok := ctx.Value(gateKey{}).(*signalGate)
	if !ok {
		return progress
	}
	return func(e scoring.Event) {
		if e.Kind == scoring.EventStarted {
			g.mu.Lock()
			g.scoring = true
			g.mu.Unlock()
		}
		if progress != nil {
			progress(e)
		}
	}
}

// watched runs j with its events watched (watch). Watching is no caller's
// progress: a run given none reports no time held by it.
func watched(ctx context.Context, j Job, run func(context.Context, Job) (Outcome, error)) (Outcome, error) {
	caller := j.Progress
	j.Progress = watch(ctx, caller)
	out, err := run(ctx, j)
	if caller == nil {
		out.Report.ProgressHeldSeconds = 0
	}
	return out, err
}

// StoppedBeforeScoring reports whether err is a stop that came before a
// run scored anything (loading), so that there is no report to write.
func StoppedBeforeScoring(err error, rep *scoring.Report) bool {
	return errors.Is(err, scoring.ErrStopped) && rep.Object == ""
}
