package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"plexbench/cmd/plexbench/demo"
	"plexbench/engine"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/scoring/outfile"
	"plexbench/tui"
)

// scoreExtras are the score flags that are not profile settings: where the
// output goes and what the run records or compares against.
type scoreExtras struct {
	Output     string
	TokenIDs   bool
	KLDBaseOut string
	KLDFormat  string
	KLDBase    string
	Quiet      bool
	Resume     bool
	Coarsen    int
}

func runScore(args []string) int {
	fs := newFlags("score", "[--profile P.toml] [flags]")
	p := profiles.Default()
	p.BindFlags(fs) // the profile's settings, as flags: --model, --perplexity, --perplexity-ctx, ...
	var x scoreExtras
	fs.StringVar(&x.Output, "perplexity-output", "", "write the JSON report here (default: stdout)")
	fs.BoolVar(&x.TokenIDs, "perplexity-token-ids", false, "include the token ids in the report")
	fs.StringVar(&x.KLDBaseOut, "perplexity-kld-base-out", "", "record a KL-divergence base to this file")
	fs.StringVar(&x.KLDFormat, "kld-format", scoring.BaseFormatPlexbench,
		"format of --perplexity-kld-base-out: plexbench (compact top-k) or llama (llama-perplexity's --kl-divergence-base file)")
	fs.StringVar(&x.KLDBase, "perplexity-kld", "", "compare against this recorded base (plexbench's or llama.cpp's, detected from the file)")
	fs.IntVar(&x.Coarsen, "kld-coarsen-top-k", 0, "with a llama.cpp base: also give the top-k KLD a plexbench base of this many ids would\n"+
		"give on the same tokens (kld.top_k_coarsened; such a run keeps no journal)")
	fs.BoolVar(&x.Quiet, "quiet", false, "no progress on stderr")
	progress := fs.String("progress", "text", "progress on stderr: text (a status line), jsonl (one JSON event per window, for scripts) or none")
	progressOut := fs.String("progress-out", "", "write the progress to this file instead of stderr")
	fs.BoolVar(&x.Resume, "resume", false, "continue a stopped or killed run (same flags) from its journal, REPORT.journal\n"+
		"beside --perplexity-output, else BASE.journal beside --perplexity-kld-base-out")
	profilePath := fs.String("profile", "", "TOML profile; flags given beside it override its settings")
	card := fs.String("card", "", "write a Markdown model card of the run here")
	shard := fs.String("perplexity-shard", "", "score only shard i/n: the windows whose index is i mod n (combine the n reports with plexbench merge)")
	results := fs.String("results", "", "results root the run's record is written under (default $PLEXBENCH_RESULTS, else ./"+tui.DefaultResultsDir+")")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("score: unexpected argument %q", fs.Arg(0)))
	}
	switch *progress {
	case "text", "jsonl", "none":
	default:
		return fail(fmt.Errorf("score: --progress %q: want text, jsonl or none", *progress))
	}
	p, err := withProfile(fs, p, *profilePath)
	if err != nil {
		return fail(err)
	}
	req, err := buildRequest(p, x)
	if err != nil {
		return fail(err)
	}
	if *shard != "" {
		if req.Shard, err = scoring.ParseShard(*shard); err != nil {
			return fail(fmt.Errorf("--perplexity-shard: %w", err))
		}
	}
	if x.KLDBase != "" && *profilePath == "" {
		// A comparison inherits the geometry the base was recorded with,
		// unless the command line asks for one (then it must agree).
		inheritFromBase(fs, &req)
	}
	if x.Coarsen > 0 {
		if x.Resume {
			return fail(errors.New("--resume: a --kld-coarsen-top-k run keeps no journal; rerun it"))
		}
	} else if req.Shard.N > 1 {
		// A shard is a slice of a run; it is redone, not resumed (merge
		// combines finished shards).
		if x.Resume {
			return fail(errors.New("--resume: a shard (--perplexity-shard) is not resumable; rerun it"))
		}
	} else if req.Journal, err = journalPath(x); err != nil {
		return fail(err)
	}
	req.Resume = x.Resume
	ctx, stop := signalContext()
	defer stop()
	pw := os.Stderr
	if *progressOut != "" {
		f, err := os.Create(*progressOut)
		if err != nil {
			return fail(fmt.Errorf("--progress-out: %w", err))
		}
		defer f.Close()
		pw = f
	}
	switch {
	case *progress == "jsonl":
		req.Progress = newJSONLProgress(pw).event
	case *progress == "text" && !x.Quiet:
		pp := newProgressPrinter(pw)
		pp.kept = p.PrefillAttention == profiles.FlashPrefillV2
		req.Progress = pp.event
	}
	rep, err := scoreProfile(ctx, p, req)
	if err != nil && !errors.Is(err, scoring.ErrStopped) {
		return fail(err)
	}
	if werr := writeReport(x.Output, &rep); werr != nil {
		return fail(werr)
	}
	if rep.Record != nil {
		path, werr := scoring.WriteRecord(resultsRoot(*results), &rep)
		if werr != nil {
			return fail(werr)
		}
		if !x.Quiet && *progress == "text" {
			fmt.Fprintf(os.Stderr, "plexbench: record %s\n", path)
		}
		if *card != "" {
			if werr := writeCard(*card, &rep); werr != nil {
				return fail(werr)
			}
		}
	} else if *card != "" && err == nil {
		return fail(fmt.Errorf("--card %s: the run has no record to describe (%s)", *card, strings.Join(rep.Warnings, "; ")))
	}
	if err != nil {
		kept := ""
		if rep.KLDBaseOut != "" {
			kept = ", partial base kept in " + rep.KLDBaseOut
		}
		if req.Journal != "" {
			kept += "; --resume continues it"
		}
		fmt.Fprintf(os.Stderr, "plexbench: %v: partial report written (%d of %d windows)%s\n", err, rep.WindowsScored, rep.WindowsTotal, kept)
		return 130
	}
	if req.Journal != "" && !rep.Partial {
		if err := scoring.RemoveJournal(req.Journal); err != nil {
			return fail(err)
		}
	}
	return 0
}

// withProfile is the settings of a command that takes profile flags: the
// profile at path (when given) under the flags given beside it, else the
// flags over p's defaults, validated.
func withProfile(fs *flag.FlagSet, p profiles.Profile, path string) (profiles.Profile, error) {
	if path != "" {
		loaded, err := profiles.Load(path)
		if err != nil {
			return p, err
		}
		if p, err = loaded.Override(fs); err != nil {
			return p, err
		}
	}
	return p, p.Validate()
}

// journalPath is where a run's journal lives: beside the report when it
// goes to a file, else beside the base being recorded; "" when the run
// writes neither to a file (a report on stdout or into a FIFO), and then
// --resume is refused.
func journalPath(x scoreExtras) (string, error) {
	for _, out := range []string{x.Output, x.KLDBaseOut} {
		if outfile.Atomic(out) {
			p, err := outfile.Resolve(out)
			if err != nil {
				return "", err
			}
			return p + ".journal", nil
		}
	}
	if x.Resume {
		return "", errors.New("--resume: the journal lives beside --perplexity-output FILE or --perplexity-kld-base-out FILE, and this run writes neither to a file")
	}
	return "", nil
}

// inheritFromBase clears the geometry settings not given on the command
// line, so that scoring.Run takes them from the base.
func inheritFromBase(fs *flag.FlagSet, req *scoring.Request) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["perplexity-method"] {
		req.Method = ""
	}
	if !given["perplexity-ctx"] {
		req.Ctx = 0
	}
	if !given["perplexity-stride"] {
		req.Stride = 0
	}
	if !given["perplexity-chunks"] {
		req.Chunks = 0
	}
}

// scoreProfile loads the model p names and scores req on it: the one path
// from settings to a report, shared by `score`, `ab` and the TUI's runner.
// A complete run's report carries its record information.
func scoreProfile(ctx context.Context, p profiles.Profile, req scoring.Request) (scoring.Report, error) {
	started := time.Now()
	eng, err := loadEngine(p, req)
	if err != nil {
		return scoring.Report{}, err
	}
	defer eng.Close()
	rep, err := scoring.Run(ctx, eng, req)
	if err != nil || rep.Partial {
		return rep, err
	}
	// A run whose record cannot be described is still a run: its report
	// says why it is not kept as a record.
	if ri, err := recordInfo(p, &rep, started, time.Now()); err != nil {
		rep.Warnings = append(rep.Warnings, "not kept as a record: "+err.Error())
	} else {
		rep.Record = &ri
	}
	return rep, nil
}

// buildRequest turns a profile and the extras into a scoring request,
// reading the text or token file (the embedded demo text when neither is
// named and no base supplies the tokens).
func buildRequest(p profiles.Profile, x scoreExtras) (scoring.Request, error) {
	req := scoring.Request{
		Method: p.Method, Ctx: p.Ctx, Stride: p.Stride, Chunks: p.Chunks,
		KLDBaseOut: x.KLDBaseOut, KLDBaseFormat: x.KLDFormat, KLDTopK: p.KLDTopK, KLDBase: x.KLDBase,
		IncludeTokenIDs: x.TokenIDs, CoarsenTopK: x.Coarsen,
	}
	switch {
	case p.Text != "" && p.Tokens != "":
		return req, errors.New("give --perplexity or --perplexity-tokens, not both")
	case p.Text != "":
		text, err := readText(p.Text)
		if err != nil {
			return req, err
		}
		req.Text, req.TextPath = text, p.Text
	case p.Tokens != "":
		ids, err := readTokenFile(p.Tokens)
		if err != nil {
			return req, err
		}
		req.Tokens, req.TextPath = ids, p.Tokens
	case x.KLDBase != "":
		// The base carries the token ids.
	default:
		req.Text, req.TextPath = perplexityText(demo.Text()), demo.TextName
	}
	return req, nil
}

// readTokenFile reads a JSON array of token ids.
func readTokenFile(path string) ([]int32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ids []int32
	if err := json.Unmarshal(data, &ids); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of token ids: %v", path, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: the token array is empty", path)
	}
	return ids, nil
}

// loadEngine opens the model p names (the embedded demo when none) with
// p's engine settings.
func loadEngine(p profiles.Profile, req scoring.Request) (*engine.Model, error) {
	if p.Backend != "" && p.Backend != "cpu" {
		rt, d, err := openDevice(p.Backend, p.Device)
		if err != nil {
			return nil, err
		}
		rt.Close()
		// The device answers, but the engine's passes have no device
		// path yet (issue 12, item 3): say so rather than run on the CPU
		// under a GPU backend's name.
		return nil, fmt.Errorf("backend %s: device %d (%s, %q) is usable, but the engine does not run on the device yet; use --backend cpu", p.Backend, d.Ordinal, d.Target, d.Name)
	}
	kvType, err := parseKVType(p.KVCacheDType)
	if err != nil {
		return nil, err
	}
	path := p.Model
	if path == "" {
		if path, err = demo.ModelPath(); err != nil {
			return nil, err
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	ks, err := kernels.ParseKernels(profiles.FormatKernels(p.Kernels))
	if err != nil {
		return nil, err
	}
	kvLen := p.KVLen
	if kvLen == 0 {
		kvLen = max(req.Ctx, scoring.DefaultCtx)
	}
	return engine.Load(path, engine.Options{
		Threads: p.Threads, BatchSize: p.BatchSize, UBatchSize: p.UBatchSize,
		KVLen: kvLen, KVType: kvType, Kernels: ks, FlashPrefill: flashPrefill(p),
	})
}

// flashPrefill is the engine's FlashPrefill setting for p: nil for dense
// prefill attention; an unset alpha is the architecture's (negative).
func flashPrefill(p profiles.Profile) *kernels.FlashPrefill {
	if p.PrefillAttention != profiles.FlashPrefillV2 {
		return nil
	}
	fp := p.FlashPrefill
	f := &kernels.FlashPrefill{BlockSize: fp.BlockSize, Alpha: -1, SinkBlocks: fp.SinkBlocks,
		Window: fp.Window, LastNFull: fp.LastNFull, MinBudget: fp.MinBudget}
	if fp.Alpha != nil {
		f.Alpha = *fp.Alpha
	}
	return f
}

// parseKVType maps a --kv-cache-dtype value to a tensor type.
func parseKVType(s string) (kernels.Type, error) {
	switch strings.ToLower(s) {
	case "f32":
		return kernels.F32, nil
	case "", "f16":
		return kernels.F16, nil
	case "bf16":
		return kernels.BF16, nil
	case "q8_0":
		return kernels.Q8_0, nil
	}
	return 0, fmt.Errorf("--kv-cache-dtype %q: want f32, f16, bf16 or q8_0", s)
}

// tokenHash is the report's token_ids_sha256 of ids.
func tokenHash(ids []int32) string {
	sum := scoring.TokenIDsSHA256(ids)
	return hex.EncodeToString(sum[:])
}

// writeReport writes the JSON report to path (see outfile), or to stdout.
func writeReport(path string, rep *scoring.Report) error {
	data, err := rep.JSON()
	if err != nil {
		return err
	}
	if path == "" {
		path = outfile.Stdout
	}
	return outfile.WriteFile(path, data)
}

// progressPrinter renders run events on stderr: one rewritten status line
// on a terminal, a line every few seconds otherwise.
type progressPrinter struct {
	out      *os.File
	tty      bool
	kept     bool // show FlashPrefill's kept fraction of attention blocks
	lastLine time.Time
}

func newProgressPrinter(out *os.File) *progressPrinter {
	fi, err := out.Stat()
	return &progressPrinter{out: out, tty: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p *progressPrinter) event(e scoring.Event) {
	switch e.Kind {
	case scoring.EventStarted:
		fmt.Fprintf(p.out, "plexbench: %s, ctx %d, stride %d: %d windows, %d tokens to score, %d through prefill\n",
			e.Method, e.Ctx, e.Stride, e.WindowsTotal, e.ScoredTotal, e.PrefillTotal)
		if e.Resumed > 0 {
			fmt.Fprintf(p.out, "plexbench: resumed: %d of %d windows taken from the journal\n", e.Resumed, e.WindowsTotal)
		}
	case scoring.EventWindowDone:
		line := fmt.Sprintf("window %d/%d  PPL %.4f ± %.5f  %.0f tok/s  ETA %s",
			e.WindowsDone, e.WindowsTotal, e.Perplexity, e.PerplexityUncertainty,
			e.MeanTokensPerSecond, e.ETA.Round(time.Second))
		if p.kept {
			line += fmt.Sprintf("  attn kept %.1f%%", 100*e.AttentionKept)
		}
		if k := e.KLD; k != nil {
			line += fmt.Sprintf("  KLD %.6f ± %.6f  same-top %.2f%%", k.MeanKLD, k.MeanKLDUncertainty, 100*k.SameTop)
		}
		if p.tty {
			fmt.Fprintf(p.out, "\r\033[K%s", line)
		} else if time.Since(p.lastLine) > 5*time.Second || e.WindowsDone == e.WindowsTotal {
			fmt.Fprintln(p.out, line)
			p.lastLine = time.Now()
		}
	case scoring.EventFinished:
		if p.tty {
			fmt.Fprintln(p.out)
		}
		status := "done"
		if e.Partial {
			status = "stopped: " + e.Reason
		}
		kept := ""
		if p.kept {
			kept = fmt.Sprintf(", FlashPrefill kept %.1f%% of attention blocks", 100*e.AttentionKept)
		}
		fmt.Fprintf(p.out, "plexbench: %s in %s: PPL = %.4f +/- %.5f over %d tokens (%.0f tok/s prefill%s)\n",
			status, e.Elapsed.Round(time.Millisecond), e.Perplexity, e.PerplexityUncertainty, e.ScoredDone, e.MeanTokensPerSecond, kept)
	}
}
