package main

// choice.go owns the text progress of a multiple-choice run (`score
// --hellaswag`, `--winogrande`, `--multiple-choice`): the running accuracy
// after each task with HellaSwag's Wilson 95% interval or the others' ±,
// as llama-perplexity prints them.

import (
	"fmt"
	"time"

	"plexbench/scoring"
)

// choice renders a multiple-choice run's event.
func (p *progressPrinter) choice(e scoring.Event) {
	c := e.Choice
	switch e.Kind {
	case scoring.EventStarted:
		fmt.Fprintf(p.out, "plexbench: %s, ctx %d: %d tasks, %d tokens through prefill\n",
			e.Method, e.Ctx, c.TasksTotal, e.PrefillTotal)
	case scoring.EventWindowDone:
		p.status(fmt.Sprintf("task %d/%d  %s  %.0f tok/s  ETA %s", c.TasksDone, c.TasksTotal, c.Figure(e.Method),
			e.MeanTokensPerSecond, e.ETA.Round(time.Second)), c.TasksDone == c.TasksTotal)
	case scoring.EventFinished:
		status := p.finished(e)
		fmt.Fprintf(p.out, "plexbench: %s in %s: %s over %d tasks, %d right (%.0f tok/s prefill)\n",
			status, e.Elapsed.Round(time.Millisecond), c.Figure(e.Method), c.TasksDone, c.Correct, e.MeanTokensPerSecond)
	}
}
