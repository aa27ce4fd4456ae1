package main

// summary.go owns score's summary: the few lines a person reads on a
// terminal (or with --summary) instead of the JSON report, which goes to
// a file: model, text, windows, PPL ±, KLD when compared, speed, and
// where the report went.

import (
	"fmt"
	"io"
	"path/filepath"

	"plexbench/scoring"
	"plexbench/workbench/demo"
)

// writeSummary writes rep's summary to w; report is where the JSON report
// was written ("": nowhere, and the last line says how to get it).
func writeSummary(w io.Writer, rep *scoring.Report, report string) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-9s%s\n", label, fmt.Sprintf(format, args...))
	}
	m := rep.Config.Model
	model := filepath.Base(m.Path)
	if p, err := demo.ModelPath(); err == nil && p == m.Path {
		model = demo.ModelName + ", the embedded demo"
	}
	if m.Architecture != "" {
		model += fmt.Sprintf(" (%s, %.1f MB)", m.Architecture, float64(m.Size)/1e6)
	}
	line("model", "%s", model)
	switch {
	case rep.Choice() != nil:
		ch := rep.Choice()
		line("tasks", "%s: %d of %d (%s)", rep.Method, ch.Tasks, ch.TasksInFile, filepath.Base(rep.Text))
		line("accuracy", "%s%%", scoring.PM(ch.Accuracy, ch.Uncertainty))
	case rep.CorporaAverage != nil:
		a := rep.CorporaAverage
		line("corpora", "%d, %d tokens", a.Macro.Corpora, a.TokenWeighted.Tokens)
		line("PPL", "%.4f token-weighted, %.4f macro; %.4f bits per byte token-weighted",
			a.TokenWeighted.Perplexity, a.Macro.Perplexity, a.TokenWeighted.BitsPerByte)
	default:
		text := rep.Text
		if text == "" && rep.KLD != nil {
			text = "the base's tokens"
		}
		line("text", "%s (%d tokens)", filepath.Base(text), rep.Tokens)
		line("windows", "%d of %d, %s ctx %d", rep.WindowsScored, rep.WindowsTotal, rep.Method, rep.Ctx)
		line("PPL", "%s (%s bits per byte)", scoring.PM(rep.Perplexity, rep.PerplexityUncertainty),
			scoring.PM(rep.BitsPerByte, rep.BitsPerByteUncertainty))
		if k := rep.KLD; k != nil {
			line("KLD", "%s (token SE), same top %s, vs %s",
				scoring.PM(k.MeanKLD, k.MeanKLDUncertainty), scoring.Percent(k.SameTop, 2), filepath.Base(k.Base))
		}
	}
	line("speed", "%.0f tok/s prefill, %.1f s", rep.PrefillTokensPerSecond, rep.ElapsedSeconds)
	if rep.Partial {
		line("partial", "%s", rep.PartialReason)
	}
	if report != "" {
		line("report", "%s", report)
	} else {
		line("report", "not written: -o FILE writes the JSON report (as does a pipe: plexbench score | jq)")
	}
}
