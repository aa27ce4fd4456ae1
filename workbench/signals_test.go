package workbench

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"plexbench/scoring"
)

// TestSignalGate: under a SignalContext a first signal ends the process
// at once while the work is loading, but only cancels the context once a
// run scores its windows (it stops between windows), after which no
// loading begins; a second signal always ends the process. Without a
// SignalContext, loading and watch change nothing.
func TestSignalGate(t *testing.T) {
	t.Parallel()
	start := func() (context.Context, chan<- os.Signal, <-chan string) {
		sigs, exits := make(chan os.Signal, 2), make(chan string, 2)
		ctx, stop := signalContext(sigs, func(s os.Signal, why string) { exits <- s.String() + " " + why })
		t.Cleanup(stop)
		return ctx, sigs, exits
	}
	wait := func(exits <-chan string) string {
		select {
		case e := <-exits:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no exit")
			return ""
		}
	}

	ctx, sigs, exits := start()
	if err := loading(ctx); err != nil {
		t.Fatal(err)
	}
	sigs <- syscall.SIGTERM
	if e := wait(exits); e != "terminated before scoring began: stopped" {
		t.Errorf("a signal while loading: exit %q", e)
	}

	ctx, sigs, exits = start()
	var seen []scoring.EventKind
	progress := watch(ctx, func(e scoring.Event) { seen = append(seen, e.Kind) })
	progress(scoring.Event{Kind: scoring.EventStarted})
	sigs <- os.Interrupt
	<-ctx.Done()
	select {
	case e := <-exits:
		t.Fatalf("a signal while scoring ended the process: %q", e)
	case <-time.After(50 * time.Millisecond):
	}
	if err := loading(ctx); !errors.Is(err, scoring.ErrStopped) {
		t.Errorf("loading after a stop: %v", err)
	}
	sigs <- os.Interrupt
	if e := wait(exits); e != "interrupt " {
		t.Errorf("the second signal: exit %q", e)
	}
	if len(seen) != 1 || seen[0] != scoring.EventStarted {
		t.Errorf("events passed on: %v", seen)
	}

	plain, cancel := context.WithCancel(context.Background())
	if err := loading(plain); err != nil || watch(plain, nil) != nil {
		t.Errorf("without a SignalContext: %v", err)
	}
	cancel()
	if err := loading(plain); !errors.Is(err, scoring.ErrStopped) {
		t.Errorf("loading on a cancelled context: %v", err)
	}
}
