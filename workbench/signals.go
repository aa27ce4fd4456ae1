package workbench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"plexbench/internal/outfile"
)

// SignalContext returns a context cancelled by the first SIGINT or SIGTERM:
// a run then stops after the window in flight and writes what it has. A
// second signal removes the temporary files still being written and ends
// the process at once with status 130. stop releases the signals.
func SignalContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(fmt.Errorf("%v", s))
		case <-done:
			return
		}
		select {
		case <-sigs:
			outfile.RemoveTemps()
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(context.Canceled)
	}
}
