package main

// hellaswag.go owns the text progress of a `score --hellaswag` run: the
// running acc_norm and its Wilson 95% interval after each task, as
// llama-perplexity prints them.

import (
	"fmt"
	"time"

	"plexbench/scoring"
)

// hellaswag renders a HellaSwag run's event.
func (p *progressPrinter) hellaswag(e scoring.Event) {
	h := e.HellaSwag
	switch e.Kind {
	case scoring.EventStarted:
		fmt.Fprintf(p.out, "plexbench: hellaswag, ctx %d: %d tasks, %d tokens through prefill\n",
			e.Ctx, h.TasksTotal, e.PrefillTotal)
	case scoring.EventWindowDone:
		p.status(fmt.Sprintf("task %d/%d  acc_norm %.4f%% [%.4f%%, %.4f%%]  %.0f tok/s  ETA %s",
			h.TasksDone, h.TasksTotal, h.Accuracy, h.CI95Low, h.CI95High,
			e.MeanTokensPerSecond, e.ETA.Round(time.Second)), h.TasksDone == h.TasksTotal)
	case scoring.EventFinished:
		status := p.finished(e)
		fmt.Fprintf(p.out, "plexbench: %s in %s: acc_norm = %.8f%% [%.4f%%, %.4f%%] over %d tasks (%.0f tok/s prefill)\n",
			status, e.Elapsed.Round(time.Millisecond), h.Accuracy, h.CI95Low, h.CI95High, h.TasksDone, e.MeanTokensPerSecond)
	}
}
