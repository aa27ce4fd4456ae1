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

// choiceFigure is the running accuracy and its interval or ±.
func choiceFigure(method string, c *scoring.ChoiceProgress) string {
	if method == scoring.MethodHellaSwag {
		return fmt.Sprintf("acc_norm %.4f%% [%.4f%%, %.4f%%]", c.Accuracy, c.CI95Low, c.CI95High)
	}
	return fmt.Sprintf("accuracy %.4f ± %.4f%%", c.Accuracy, c.Uncertainty)
}

// choice renders a multiple-choice run's event.
func (p *progressPrinter) choice(e scoring.Event) {
	c := e.Choice
	switch e.Kind {
	case scoring.EventStarted:
		fmt.Fprintf(p.out, "plexbench: %s, ctx %d: %d tasks, %d tokens through prefill\n",
			e.Method, e.Ctx, c.TasksTotal, e.PrefillTotal)
	case scoring.EventWindowDone:
		p.status(fmt.Sprintf("task %d/%d  %s  %.0f tok/s  ETA %s", c.TasksDone, c.TasksTotal, choiceFigure(e.Method, c),
			e.MeanTokensPerSecond, e.ETA.Round(time.Second)), c.TasksDone == c.TasksTotal)
	case scoring.EventFinished:
		status := p.finished(e)
		fmt.Fprintf(p.out, "plexbench: %s in %s: %s over %d tasks, %d right (%.0f tok/s prefill)\n",
			status, e.Elapsed.Round(time.Millisecond), choiceFigure(e.Method, c), c.TasksDone, c.Correct, e.MeanTokensPerSecond)
	}
}
