// floor.go owns `plexbench floor`: a model scored against its own bases,
// so the user knows what the KLD figures of that protocol can resolve.
//
//  1. the model records a llama.cpp base (whole 16-bit rows);
//  2. it is compared with that base — the floor of a full-vocabulary
//     comparison, and on the same tokens the top-k KLD (kld.top_k_coarsened)
//     — while it records its compact top-k base;
//  3. it is compared with its top-k base: the measured floor, 0 by
//     construction for a deterministic engine;
//  4. with --against, a second model is compared with the llama.cpp base:
//     its full-vocabulary KLD and its top-k KLD on the same tokens, what
//     the top-k coarsening hides of a real difference.
//
// The last self-compare is kept as a record carrying the floor object, in
// the same compare group as every run against the same top-k base (keep
// it with --perplexity-kld-base-out); compare marks results within 2× of
// the floor.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"plexbench/engine"
	"plexbench/profiles"
	"plexbench/scoring"
)

func runFloor(args []string) int {
	fs := newFlags("floor", "[--model M.gguf] [--profile P.toml] [--against C.gguf] [flags]")
	p := profiles.Default()
	p.BindFlags(fs)
	profilePath := fs.String("profile", "", "TOML profile; flags given beside it override its settings")
	against := fs.String("against", "", "also compare this model with the full-vocabulary base: its full and top-k KLD on the same tokens")
	topOut := fs.String("perplexity-kld-base-out", "", "keep the top-k base here (default: a temporary file); runs compared with it share the floor's compare group")
	fullOut := fs.String("full-base-out", "", "keep the llama.cpp-format full-vocabulary base here (default: a temporary file)")
	output := fs.String("perplexity-output", "", "write the floor's JSON report here (default: stdout)")
	results := fs.String("results", "", "results root the floor's record is written under (default $PLEXBENCH_RESULTS, else ./plexbench-results)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("floor: unexpected argument %q", fs.Arg(0)))
	}
	p, err := withProfile(fs, p, *profilePath)
	if err != nil {
		return fail(err)
	}
	if p.Method != "" && p.Method != scoring.MethodChunks {
		return fail(fmt.Errorf("floor: --perplexity-method %s: the full-vocabulary base is llama.cpp's, which holds chunks only", p.Method))
	}
	if *against != "" {
		if _, err := os.Stat(*against); err != nil {
			return fail(fmt.Errorf("floor: --against: %w", err))
		}
	}
	tmp, err := os.MkdirTemp("", "plexbench-floor-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	stem := strings.TrimSuffix(filepath.Base(p.Model), filepath.Ext(p.Model))
	if p.Model == "" {
		stem = "demo"
	}
	k := p.KLDTopK
	if k == 0 {
		k = scoring.DefaultTopK
	}
	full, top := *fullOut, *topOut
	if full == "" {
		full = filepath.Join(tmp, stem+".full.kld")
	}
	if top == "" {
		top = filepath.Join(tmp, fmt.Sprintf("%s.top%d.kld", stem, k))
	}

	ctx, stop := signalContext()
	defer stop()
	started := time.Now()
	f := floorRun{ctx: ctx, p: p, quiet: *quiet, passes: 3}
	if *against != "" {
		f.passes = 4
	}
	rep, err := f.measure(full, top, k, *against)
	f.close()
	if err != nil {
		if errors.Is(err, scoring.ErrStopped) {
			fmt.Fprintf(os.Stderr, "plexbench: floor: %v: nothing kept\n", err)
			return 130
		}
		return fail(err)
	}
	if ri, err := recordInfo(p, rep, started, time.Now()); err != nil {
		rep.Warnings = append(rep.Warnings, "not kept as a record: "+err.Error())
	} else {
		rep.Record = &ri
		if *topOut == "" {
			rep.KLD.Base = filepath.Base(top) // a temporary base: its name only
		}
		path, err := scoring.WriteRecord(resultsRoot(*results), rep)
		if err != nil {
			return fail(err)
		}
		if !*quiet {
			fmt.Fprintf(os.Stderr, "plexbench: record %s\n", path)
		}
	}
	if !*quiet {
		printFloor(os.Stderr, rep)
	}
	if err := writeReport(*output, rep); err != nil {
		return fail(err)
	}
	return 0
}

// floorRun runs the passes of one floor measurement, on one engine for
// the model (loaded once) and one for --against.
type floorRun struct {
	ctx          context.Context
	p            profiles.Profile
	quiet        bool
	pass, passes int
	eng          *engine.Model
}

func (f *floorRun) close() {
	if f.eng != nil {
		f.eng.Close()
	}
}

// run scores one pass on model (p's, or another) with x's base settings.
func (f *floorRun) run(what string, model string, x scoreExtras, coarsen int) (scoring.Report, error) {
	f.pass++
	p := f.p
	if model != "" {
		p.Model = model
	}
	if x.KLDBase != "" {
		p.Text, p.Tokens = "", "" // the base carries the tokens
	}
	req, err := buildRequest(p, x)
	if err != nil {
		return scoring.Report{}, err
	}
	req.CoarsenTopK = coarsen
	if !f.quiet {
		fmt.Fprintf(os.Stderr, "plexbench: floor pass %d/%d: %s\n", f.pass, f.passes, what)
		req.Progress = newProgressPrinter(os.Stderr).event
	}
	eng := f.eng
	if eng == nil || model != "" {
		if eng, err = loadEngine(p, req); err != nil {
			return scoring.Report{}, err
		}
		if model != "" {
			defer eng.Close()
		} else {
			f.eng = eng
		}
	}
	rep, err := scoring.Run(f.ctx, eng, req)
	if err == nil && rep.Partial {
		err = errors.New(rep.PartialReason)
	}
	if err != nil {
		return rep, fmt.Errorf("floor pass %d (%s): %w", f.pass, what, err)
	}
	return rep, nil
}

// measure runs the passes and returns the self-compare against the top-k
// base with the floor object. The top-k base is recorded from the text
// exactly as `score --perplexity-kld-base-out` records it, so the floor
// lands in the compare group of every run against such a base.
func (f *floorRun) measure(full, top string, k int, against string) (*scoring.Report, error) {
	ref, err := f.run(fmt.Sprintf("record the top-%d base", k), "", scoreExtras{KLDBaseOut: top, KLDFormat: scoring.BaseFormatPlexbench}, 0)
	if err != nil {
		return nil, err
	}
	// The full base holds 16 bits per vocabulary entry per scored token:
	// gigabytes for a large vocabulary over a whole text.
	need := scoring.LlamaBaseSize(ref.Ctx, f.eng.Info().VocabSize, ref.WindowsScored)
	if free := diskFree(filepath.Dir(full)); free >= 0 && need > free {
		return nil, fmt.Errorf("floor: the full-vocabulary base needs %s in %s, which has %s free: score fewer windows (--perplexity-chunks) or put it elsewhere (--full-base-out)",
			humanBytes(need), filepath.Dir(full), humanBytes(free))
	}
	rep, err := f.run(fmt.Sprintf("compare with the top-%d base, record the full-vocabulary base (%s)", k, humanBytes(need)), "",
		scoreExtras{KLDBase: top, KLDBaseOut: full, KLDFormat: scoring.BaseFormatLlama}, 0)
	if err != nil {
		return nil, err
	}
	self, err := f.run("compare with the full-vocabulary base", "", scoreExtras{KLDBase: full}, k)
	if err != nil {
		return nil, err
	}
	fl := &scoring.FloorReport{TopK: k, SelfFull: *self.KLD.TopKCoarsened,
		SelfTopKMeanKLD: rep.KLD.MeanKLD, SelfTopKMaxKLD: rep.KLD.KLDMax, SelfTopKSameTop: rep.KLD.SameTop}
	fl.Floor = fl.SelfTopKMeanKLD
	if against != "" {
		a, err := f.run("compare "+filepath.Base(against)+" with the full-vocabulary base", against, scoreExtras{KLDBase: full}, k)
		if err != nil {
			return nil, err
		}
		fl.AgainstModel, fl.Against = filepath.Base(against), a.KLD.TopKCoarsened
	}
	rep.KLDBaseOut, rep.KLDBaseTopK, rep.KLDBaseFormat = "", 0, "" // the full base is the floor's own
	rep.Floor = fl
	return &rep, nil
}

// printFloor says what was measured, for people.
func printFloor(w *os.File, rep *scoring.Report) {
	fl := rep.Floor
	fmt.Fprintf(w, "plexbench floor (top-%d, %d tokens):\n", fl.TopK, fl.SelfFull.Tokens)
	fmt.Fprintf(w, "  self against its top-%d base:        mean KLD %.3g (max %.3g, same top %s) — 0 for a deterministic engine\n",
		fl.TopK, fl.SelfTopKMeanKLD, fl.SelfTopKMaxKLD, scoring.Percent(fl.SelfTopKSameTop, 2))
	s := fl.SelfFull
	fmt.Fprintf(w, "  self against its full 16-bit base:   full-vocabulary KLD %s, top-%d KLD %s (the 16-bit rows' floor)\n",
		scoring.PM(s.MeanFullKLD, s.MeanFullKLDUncertainty), fl.TopK, scoring.PM(s.MeanTopKKLD, s.MeanTopKKLDUncertainty))
	if a := fl.Against; a != nil {
		fmt.Fprintf(w, "  %s against the full base: full-vocabulary KLD %s, top-%d KLD %s: the top-%d base sees %s of it (misses %s)\n",
			fl.AgainstModel, scoring.PM(a.MeanFullKLD, a.MeanFullKLDUncertainty), fl.TopK, scoring.PM(a.MeanTopKKLD, a.MeanTopKKLDUncertainty),
			fl.TopK, scoring.Percent(a.SeenFraction, 1), scoring.PM(a.MeanMissedKLD, a.MeanMissedKLDUncertainty))
	}
	fmt.Fprintf(w, "  floor of comparisons against the top-%d base: %.3g (compare marks results within 2× of it)\n", fl.TopK, fl.Floor)
}
