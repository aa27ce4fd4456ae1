package main

// choice.go owns the multiple-choice flags (`--hellaswag`, `--winogrande`,
// `--multiple-choice`, their task counts and `--parallel`), which `score`
// and `tui` bind and check alike, and the text progress of such a run:
// the running accuracy after each task with HellaSwag's Wilson 95%
// interval or the others' ±, as llama-perplexity prints them.

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"plexbench/scoring"
	"plexbench/workbench"
)

// bindChoiceFlags binds the multiple-choice flags to c.
func bindChoiceFlags(fs *pflag.FlagSet, c *workbench.Choice) {
	fs.StringVar(&c.HellaSwag, "hellaswag", "", "score this HellaSwag task file as llama-perplexity --hellaswag does (acc_norm; the report's hellaswag object)")
	fs.IntVar(&c.HellaSwagTasks, "hellaswag-tasks", scoring.DefaultHellaSwagTasks, "with --hellaswag: the number of tasks drawn, as llama-perplexity draws them")
	fs.StringVar(&c.Winogrande, "winogrande", "", "score this Winogrande CSV as llama-perplexity --winogrande does (the report's winogrande object)")
	fs.IntVar(&c.WinograndeTasks, "winogrande-tasks", 0, "with --winogrande: the number of tasks drawn, as llama-perplexity draws them (0: all, in file order)")
	fs.StringVar(&c.MultipleChoice, "multiple-choice", "", "score this binary multiple-choice task file as llama-perplexity --multiple-choice does\n"+
		"(MMLU, ARC, TruthfulQA in its format; the report's multiple_choice object)")
	fs.IntVar(&c.MultipleChoiceTasks, "multiple-choice-tasks", 0, "with --multiple-choice: the number of tasks drawn, as llama-perplexity draws them (0: all, in file order)")
	fs.IntVar(&c.Parallel, "parallel", 0, "with a task file: llama-perplexity's -np; a task's tokens must fit in max(4, N)·ctx (padded to 256)\n"+
		"and its answers number at most max(4, N) (0: the least llama-perplexity accepts for the file)")
}

// checkChoiceFlags checks the parsed multiple-choice flags of the command
// cmd: a task count goes with its file and is one the mode can draw,
// --parallel goes with a task file. What the run cannot take beside a
// task file is workbench's to refuse (workbench.CheckChoice).
func checkChoiceFlags(fs *pflag.FlagSet, cmd string, c workbench.Choice) error {
	for _, m := range []struct {
		mode, file string
		count      int
	}{{"hellaswag", c.HellaSwag, c.HellaSwagTasks}, {"winogrande", c.Winogrande, c.WinograndeTasks},
		{"multiple-choice", c.MultipleChoice, c.MultipleChoiceTasks}} {
		if givenFlag(fs, m.mode+"-tasks") && m.file == "" {
			return fmt.Errorf("%s: --%s-tasks needs --%s FILE", cmd, m.mode, m.mode)
		}
		if m.mode == "hellaswag" && m.count < 1 {
			return fmt.Errorf("%s: --%s-tasks %d: want at least 1", cmd, m.mode, m.count)
		}
		if m.count < 0 {
			return fmt.Errorf("%s: --%s-tasks %d: want 0 (all) or more", cmd, m.mode, m.count)
		}
	}
	switch {
	case givenFlag(fs, "parallel") && c.HellaSwag == "" && c.Winogrande == "" && c.MultipleChoice == "":
		return fmt.Errorf("%s: --parallel needs --hellaswag, --winogrande or --multiple-choice FILE", cmd)
	case c.Parallel < 0:
		return fmt.Errorf("%s: --parallel %d: want 0 (the least llama-perplexity accepts) or more", cmd, c.Parallel)
	}
	return nil
}

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
