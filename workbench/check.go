package workbench

// check.go owns Check: what Run would refuse of a job, found before any
// weight loads (the model's header and hyper-parameters, the base's
// header, the files), so that a caller with two runs to make — an A/B —
// refuses the pair before the first starts; and the warnings a run
// deserves before it starts (a context past the model's trained one).

import (
	"fmt"
	"path/filepath"
	"slices"

	"plexbench/engine"
	"plexbench/hip"
	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/scoring"
)

// Checked is what Check found of a job that can run.
type Checked struct {
	// Ctx is the context the run takes (its own, or its base's); 0 for a
	// multiple-choice run. CtxTrain is the model's trained context
	// (n_ctx_train; 0 when the file does not say).
	Ctx, CtxTrain int
	// Warnings are to be shown before the run starts, each one line.
	Warnings []string
}

// Check is what Run would refuse of j before scoring, found without
// loading weights or tokenizing: its files (outputs that can be written,
// inputs that are regular files and there), its journal, its stopping
// rule, its task file, its model's header and hyper-parameters against
// its engine settings (the KV cache type against the head size, memory,
// FlashPrefill), its backend's name, and its geometry, against the header
// of the base it compares with and within its KV cache. The refusals are
// Run's own errors. A profile that names a server has no model file to
// check: its files, rule and task file are checked, the rest when the run
// reaches the server.
func Check(j Job) (Checked, error) {
	var c Checked
	if err := j.Files().Check(); err != nil {
		return c, err
	}
	if _, err := journalPath(j); err != nil {
		return c, err
	}
	p := j.Profile
	if _, err := StopRule(p); err != nil {
		return c, err
	}
	if err := checkInputs(p); err != nil {
		return c, err
	}
	for _, in := range append([]string{p.Text, p.Tokens}, p.Corpora...) {
		if in == "" {
			continue
		}
		if _, err := outfile.StatInput(in); err != nil {
			return c, err
		}
	}
	kvLen, err := checkChoice(&j)
	if err != nil {
		return c, err
	}
	if p.KVLen == 0 {
		p.KVLen = kvLen
	}
	if p.Server != "" {
		return c, nil // no model file here: the server is reached, and checked, when the run opens it
	}
	path, err := modelPath(p)
	if err != nil {
		return c, err
	}
	opts, err := Options(p)
	if err != nil {
		return c, err
	}
	if p.Backend != "" && p.Backend != "cpu" {
		if _, err := hip.ParseKind(p.Backend); err != nil {
			return c, err
		}
	}
	mc, err := engine.Check(path, opts)
	if err != nil {
		return c, err
	}
	c.CtxTrain = mc.CtxTrain
	if len(j.choices()) > 0 {
		return c, nil
	}
	if c.Ctx, err = checkGeometry(j, opts.KVLen); err != nil {
		return c, err
	}
	if c.CtxTrain > 0 && c.Ctx > c.CtxTrain {
		c.Warnings = append(c.Warnings, CtxTrainWarning(c.Ctx, c.CtxTrain, modelName(p.Model)))
	}
	return c, nil
}

// CtxTrainWarning is the warning for a run at ctx on a model trained at
// train: llama.cpp's words (llama_context's n_ctx_seq > n_ctx_train
// warning), then what it means and what to do.
func CtxTrainWarning(ctx, train int, model string) string {
	return fmt.Sprintf("n_ctx_seq (%d) > n_ctx_train (%d) -- possible training context overflow: %s was trained on %d-token contexts, so perplexity at ctx %d measures extrapolation (--perplexity-ctx %d or less stays within it)",
		ctx, train, model, train, ctx, train)
}

// modelName is how warnings name the model a profile gives.
func modelName(model string) string {
	if model == "" {
		return "the demo model"
	}
	return filepath.Base(model)
}

// CheckCorpora is Check for RunCorpora: a job of several corpora is
// refused as RunCorpora refuses it, else checked as its first corpus's
// run (the others are scored alike), each corpus a readable file.
func CheckCorpora(j Job) (Checked, error) {
	cs := j.Profile.Corpora
	if len(cs) <= 1 {
		return Check(j)
	}
	if err := checkCorpora(j); err != nil {
		return Checked{}, err
	}
	if err := checkInputs(j.Profile); err != nil {
		return Checked{}, err
	}
	for _, in := range cs {
		if _, err := outfile.StatInput(in); err != nil {
			return Checked{}, err
		}
	}
	j.Profile.Text, j.Profile.Corpora = cs[0], nil
	return Check(j)
}

// checkGeometry is the ctx j's run takes, or the geometry's refusal:
// against the header of the base it compares with, within kvLen.
func checkGeometry(j Job, kvLen int) (int, error) {
	req, err := request(j)
	if err != nil {
		return 0, err
	}
	var h *scoring.BaseHeader
	if j.Compare != "" {
		bi, err := scoring.ReadBaseInfo(j.Compare)
		if err != nil {
			return 0, err
		}
		h = &bi.Header
	}
	g, err := scoring.CheckGeometry(req, h, j.Compare, kvLen)
	return g.Ctx, err
}

// CheckPair checks both sides of an A/B (A first) with check (nil:
// Check) before either runs: the first refusal, naming its side and
// profile and saying that neither started; else the warnings of both,
// each naming its side ("A and B" when they share one).
func CheckPair(jobs [2]Job, check func(Job) (Checked, error)) ([]string, error) {
	if check == nil {
		check = Check
	}
	var ws [2][]string
	for i, j := range jobs {
		c, err := check(j)
		if err != nil {
			return nil, fmt.Errorf("%s cannot run, so neither side was started: %w", sideName(i, j.Profile), err)
		}
		ws[i] = c.Warnings
	}
	var out []string
	for _, w := range ws[0] {
		if slices.Contains(ws[1], w) {
			out = append(out, "A and B: "+w)
		} else {
			out = append(out, "A: "+w)
		}
	}
	for _, w := range ws[1] {
		if !slices.Contains(ws[0], w) {
			out = append(out, "B: "+w)
		}
	}
	return out, nil
}

// sideName names side i of an A/B (0: A) and its profile.
func sideName(i int, p profiles.Profile) string {
	s := string("AB"[i])
	switch {
	case p.Name != "" && p.Source != "":
		s += fmt.Sprintf(" (%s, %s)", p.Name, p.Source)
	case p.Name != "":
		s += " (" + p.Name + ")"
	}
	return s
}
