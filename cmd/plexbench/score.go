package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// scoreFlags are the score flags that are not profile settings: where the
// output goes and what the run records or compares against.
type scoreFlags struct {
	profile, output, progress, progressOut, card, shard, results string
	quiet                                                        bool
	// summary prints a short summary on stdout instead of the JSON report
	// (the default when stdout is a terminal and no file is given).
	summary bool
}

func (c *cli) scoreCmd() *cobra.Command {
	cmd, fs := c.command("score", "[--profile P.toml] [flags]",
		"score a text headless; JSON report on stdout (a summary on a terminal) or -o FILE")
	a := bindScore(fs)
	aliases(fs, map[string]string{"output": "perplexity-output"})
	return c.action(cmd, func(pos []string) int {
		j, x, code := c.scoreJob(fs, a, pos)
		if code >= 0 {
			return code
		}
		return c.score(j, x)
	})
}

// score runs the job the flags made and writes its outputs.
func (c *cli) score(j workbench.Job, x scoreFlags) int {
	if code := c.checkFiles(c.scoreFiles(j, x)); code >= 0 {
		return code
	}
	checked, err := workbench.CheckCorpora(j)
	if err != nil {
		return c.fail(err)
	}
	ctx, stop := workbench.SignalContext()
	defer stop()
	progress, closeProgress, err := c.progressSink(x, j.Profile)
	if err != nil {
		return c.fail(err)
	}
	defer closeProgress()
	jsonlOnStderr := x.progress == "jsonl" && x.progressOut == ""
	j.Progress = progress
	if j.Resume {
		j.Progress = c.resumeWarning(progress, jsonlOnStderr)
	}
	if len(checked.Warnings) > 0 && !jsonlOnStderr { // jsonl on stderr: the report carries them
		j.Progress = c.startWarnings(j.Progress, checked.Warnings)
	}
	out, err := workbench.RunCorpora(ctx, j)
	out.Report.Warnings = append(checked.Warnings, out.Report.Warnings...)
	if workbench.StoppedBeforeScoring(err, &out.Report) {
		fmt.Fprintf(c.stderr, "plexbench: %v\n", err) // nothing scored: no report
		return 130
	}
	if err != nil && !errors.Is(err, scoring.ErrStopped) && !errors.Is(err, workbench.ErrNotKept) && !keepsPartial(err) {
		return c.fail(err)
	}
	if werr := c.writeScoreOutputs(x, &out, err); werr != nil {
		return c.fail(werr)
	}
	if errors.Is(err, workbench.ErrNotKept) || keepsPartial(err) {
		return c.fail(err) // the report is written; the journal stays
	}
	if err != nil {
		c.stopped(&out, j, err)
		return 130
	}
	if err := out.Done(); err != nil {
		return c.fail(err)
	}
	if a := out.Report.CorporaAverage; a != nil && !x.quiet && x.progress == "text" {
		fmt.Fprintf(c.stderr, "plexbench: %d corpora: token-weighted PPL %.4f, %.4f bits per byte over %d tokens; macro PPL %.4f, %.4f bits per byte\n",
			a.Macro.Corpora, a.TokenWeighted.Perplexity, a.TokenWeighted.BitsPerByte, a.TokenWeighted.Tokens, a.Macro.Perplexity, a.Macro.BitsPerByte)
	}
	return c.stopExit(&out.Report, x.quiet)
}

// scoreArgs are the values score's flags are bound to.
type scoreArgs struct {
	p profiles.Profile // the settings flags, over the defaults
	j workbench.Job
	x scoreFlags
}

// bindScore defines score's flags on fs.
func bindScore(fs *pflag.FlagSet) *scoreArgs {
	a := &scoreArgs{p: profiles.Default()}
	j, x := &a.j, &a.x
	a.p.BindFlags(fs) // the profile's settings, as flags: --model, --perplexity, --perplexity-ctx, ...
	fs.StringVarP(&x.output, "perplexity-output", "o", "", "write the JSON report here (default: stdout when it is not a terminal; - for stdout always)")
	fs.BoolVar(&x.summary, "summary", false, "print a short summary on stdout instead of the JSON report, which goes to -o FILE\n"+
		"(the default when stdout is a terminal and no -o is given)")
	fs.BoolVar(&j.TokenIDs, "perplexity-token-ids", false, "include the token ids in the report")
	fs.StringVar(&j.BaseOut, "perplexity-kld-base-out", "", "record a KL-divergence base to this file")
	fs.StringVar(&j.BaseFormat, "kld-format", scoring.BaseFormatPlexbench,
		"format of --perplexity-kld-base-out: plexbench (compact top-k) or llama (llama-perplexity's --kl-divergence-base file)")
	fs.StringVar(&j.Compare, "perplexity-kld", "", "compare against this recorded base (plexbench's or llama.cpp's, detected from the file)")
	fs.BoolVar(&j.AllowTokenizerMismatch, "allow-tokenizer-mismatch", false, "when the base's tokenizer or token stream differs from this model's, score the text without it (compare by bits per byte only) instead of refusing")
	fs.IntVar(&j.CoarsenTopK, "kld-coarsen-top-k", 0, "with a llama.cpp base: also give the top-k KLD a plexbench base of this many ids would\n"+
		"give on the same tokens (kld.top_k_coarsened; such a run keeps no journal)")
	fs.BoolVar(&x.quiet, "quiet", false, "no progress on stderr")
	fs.StringVar(&x.progress, "progress", "text", "progress on stderr: text (a status line), jsonl (one JSON event per window, for scripts) or none")
	fs.StringVar(&x.progressOut, "progress-out", "", "write the progress to this file instead of stderr")
	fs.BoolVar(&j.Resume, "resume", false, "continue a stopped or killed run (same flags) from its journal, REPORT.journal\n"+
		"beside --perplexity-output, else BASE.journal beside --perplexity-kld-base-out")
	fs.StringVar(&x.profile, "profile", "", "a TOML profile; flags given beside it override its settings")
	fs.StringVar(&x.card, "card", "", "write a Markdown model card of the run here")
	fs.StringVar(&x.shard, "perplexity-shard", "", "score only shard i/n: the windows whose index is i mod n (combine the n reports with plexbench merge)")
	fs.StringVar(&x.results, "results", "", resultsUsage("the run's record is written under"))
	bindChoiceFlags(fs, &j.Choice)
	return a
}

// scoreJob is score's job and output flags from the parsed flags; code >= 0
// ends the command there (a bad flag, said on stderr).
func (c *cli) scoreJob(fs *pflag.FlagSet, a *scoreArgs, pos []string) (j workbench.Job, x scoreFlags, code int) {
	j, x = a.j, a.x
	if len(pos) > 0 {
		return j, x, c.fail(fmt.Errorf("score: unexpected argument %q", pos[0]))
	}
	if err := completeJob(fs, a.p, x, &j); err != nil {
		return j, x, c.fail(err)
	}
	j.Keep = workbench.Keep{Root: c.resultsRoot(x.results)}
	return j, x, -1
}

// stopExit is a complete run's exit code under its stopping rule: 0, or
// exitThreshold when a --stop-when-decided condition fails (decided by its
// interval, or by the point value when the rule was never met). It says
// on stderr why the run stopped or that the rule was not met.
func (c *cli) stopExit(rep *scoring.Report, quiet bool) int {
	s, line := stopStatus(rep)
	if s == nil {
		return 0
	}
	if !quiet {
		fmt.Fprintf(c.stderr, "plexbench: %s\n", line)
	}
	if stopFails(s) {
		fmt.Fprintf(c.stderr, "plexbench: --stop-when-decided %s does not hold: exit %d\n", s.Rule, exitThreshold)
		return exitThreshold
	}
	return 0
}

// ruleOutcome says where a stopping rule ended: a precision rule met or
// not; a --stop-when-decided condition decided (by its interval) to hold
// or not, or undecided and answered by the point value.
func ruleOutcome(s *scoring.StopReport) string {
	switch {
	case s.Holds == nil && s.Met:
		return "rule " + s.Rule + " met"
	case s.Holds == nil:
		return "rule " + s.Rule + " not met"
	}
	holds := "holds"
	if !*s.Holds {
		holds = "does not hold"
	}
	if s.Met {
		return "decided: " + s.Rule + " " + holds
	}
	return s.Rule + " undecided; by the point value it " + holds
}

// stopFails reports whether a --stop-when-decided condition failed.
func stopFails(s *scoring.StopReport) bool { return s != nil && s.Holds != nil && !*s.Holds }

// stopStatus is where a complete run's stopping rule stood at its end,
// and a line saying so (nil and "" for a run without a rule).
func stopStatus(rep *scoring.Report) (*scoring.StopReport, string) {
	s, how := rep.StoppedEarly, "stopped early"
	if s == nil {
		s, how = rep.StopRule, "scored every window"
	}
	if s == nil {
		return nil, ""
	}
	return s, fmt.Sprintf("%s: %d of %d windows, %s (%s %.6g ± %.3g, anytime-valid 95%%)",
		how, rep.WindowsScored, rep.WindowsTotal, ruleOutcome(s), s.Statistic, s.Value, s.HalfWidth)
}

// stopped says on stderr that a stopped run's partial report was written,
// and what it kept.
func (c *cli) stopped(out *workbench.Outcome, j workbench.Job, err error) {
	rep, kept := &out.Report, ""
	if len(rep.Corpora) > 0 {
		done := 0
		for i := range rep.Corpora {
			if !rep.Corpora[i].Partial {
				done++
			}
		}
		fmt.Fprintf(c.stderr, "plexbench: %v: partial report written (%d of %d corpora scored; rerun it)\n", err, done, len(j.Profile.Corpora))
		return
	}
	if rep.KLDBaseOut != "" {
		kept = ", partial base kept in " + rep.KLDBaseOut
	}
	if out.Journal != "" {
		kept += "; --resume continues it"
	}
	done, total, what := rep.WindowsScored, rep.WindowsTotal, "windows"
	if ch := rep.Choice(); ch != nil {
		done, total, what = ch.Tasks, ch.TasksInFile, "tasks"
		if n := choiceCount(j, ch.Method); n > 0 {
			total = min(n, total)
		}
	}
	fmt.Fprintf(c.stderr, "plexbench: %v: partial report written (%d of %d %s)%s\n", err, done, total, what, kept)
}

// choiceCount is the task count j asks of the multiple-choice mode method
// (0: all).
func choiceCount(j workbench.Job, method string) int {
	switch method {
	case scoring.MethodHellaSwag:
		return j.HellaSwagTasks
	case scoring.MethodWinogrande:
		return j.WinograndeTasks
	}
	return j.MultipleChoiceTasks
}

// completeJob completes j from the flags: the profile (a file under the
// flags given beside it), the shard, and whether the run inherits the
// base's geometry.
func completeJob(fs *pflag.FlagSet, p profiles.Profile, x scoreFlags, j *workbench.Job) error {
	switch x.progress {
	case "text", "jsonl", "none":
	default:
		return fmt.Errorf("score: --progress %q: want text, jsonl or none", x.progress)
	}
	var err error
	if j.Profile, err = withProfile(fs, p, x.profile); err != nil {
		return err
	}
	if x.shard != "" {
		if j.Shard, err = scoring.ParseShard(x.shard); err != nil {
			return fmt.Errorf("--perplexity-shard: %w", err)
		}
	}
	if j.Compare != "" {
		if err := inheritGeometry(fs, j, x.profile); err != nil {
			return err
		}
	}
	if err := checkChoiceFlags(fs, "score", j.Choice); err != nil {
		return err
	}
	j.Journal, j.Report = true, x.output
	return nil
}

// geometryFlags ties the settings a base fixes (its geometry) to their
// flags.
var geometryFlags = map[string]string{"method": "perplexity-method", "ctx": "perplexity-ctx",
	"stride": "perplexity-stride", "chunks": "perplexity-chunks"}

// geometryGiven is which geometry settings the command line (fs) or the
// profile file at path ("": none) gives; a comparison takes the others
// from its base.
func geometryGiven(fs *pflag.FlagSet, path string) (map[string]bool, error) {
	set := map[string]bool{}
	if path != "" {
		var err error
		if set, err = profiles.Sets(path); err != nil {
			return nil, err
		}
	}
	given := map[string]bool{}
	for key, name := range geometryFlags {
		given[key] = set[key] || (fs != nil && givenFlag(fs, name))
	}
	return given, nil
}

// inheritGeometry makes a comparison take the geometry its base was
// recorded with, but for the settings the command line or the profile
// file at path asks for (then they must agree with the base).
func inheritGeometry(fs *pflag.FlagSet, j *workbench.Job, path string) error {
	g, err := geometryGiven(fs, path)
	j.GeometryFromBase, j.GeometryGiven = true, g
	return err
}

// withBaseGeometry is the profile read from path (p) with the geometry of
// the base at base where the file sets none.
func withBaseGeometry(p profiles.Profile, path, base string) (profiles.Profile, error) {
	given, err := geometryGiven(nil, path)
	if err != nil {
		return p, err
	}
	return baseGeometry(p, base, given)
}

// baseGeometry is p with the geometry the base at path was recorded with,
// but for the settings given names (those must agree with the base): what
// inheritGeometry asks of a run, for the TUI and ab, which build their
// jobs from profiles.
func baseGeometry(p profiles.Profile, path string, given map[string]bool) (profiles.Profile, error) {
	bi, err := scoring.ReadBaseInfo(path)
	if err != nil {
		return p, err
	}
	h := bi.Header
	if !given["method"] {
		p.Method = h.Method
	}
	if !given["ctx"] {
		p.Ctx = h.Ctx
	}
	if !given["stride"] && h.Method == scoring.MethodSliding {
		p.Stride = h.Stride // a chunks base records its ctx as its stride
	}
	if !given["chunks"] {
		p.Chunks = h.ChunkLimit
	}
	return p, nil
}

// resumeWarning passes a resuming run's events on to progress (nil: none)
// and, when its journal was begun on another backend or device, says so
// on stderr, --quiet or not, unless the jsonl events already go there
// (their started event carries it).
func (c *cli) resumeWarning(progress func(scoring.Event), jsonlOnStderr bool) func(scoring.Event) {
	return func(e scoring.Event) {
		if e.Kind == scoring.EventStarted && e.ResumedFrom != "" && !jsonlOnStderr {
			fmt.Fprintf(c.stderr, "plexbench: warning: resuming a run begun on %s on %s: its first %d of %d windows come from its journal\n",
				e.ResumedFrom, e.ResumedOn, e.Resumed, e.WindowsTotal)
		}
		if progress != nil {
			progress(e)
		}
	}
}

// startWarnings passes a run's events on to progress (nil: none) and
// says the warnings on stderr, --quiet or not, once its first window is
// about to be scored: a run refused before then has only its refusal to
// say.
func (c *cli) startWarnings(progress func(scoring.Event), warnings []string) func(scoring.Event) {
	said := false
	return func(e scoring.Event) {
		if e.Kind == scoring.EventStarted && !said {
			said = true
			for _, w := range warnings {
				fmt.Fprintf(c.stderr, "plexbench: warning: %s\n", w)
			}
		}
		if progress != nil {
			progress(e)
		}
	}
}

// progressSink is where score's progress goes: a status line or JSON
// events on stderr or in --progress-out, or nowhere.
func (c *cli) progressSink(x scoreFlags, p profiles.Profile) (func(scoring.Event), func(), error) {
	var pw io.Writer = c.stderr
	closeFn := func() {}
	if x.progressOut != "" {
		f, err := os.Create(x.progressOut)
		if err != nil {
			return nil, nil, fmt.Errorf("--progress-out: %w", err)
		}
		pw, closeFn = f, func() { f.Close() }
	}
	switch {
	case x.progress == "jsonl":
		return newJSONLProgress(pw).event, closeFn, nil
	case x.progress == "text" && !x.quiet:
		pp := newProgressPrinter(pw)
		pp.kept = p.PrefillAttention == profiles.FlashPrefillV2
		return pp.event, closeFn, nil
	}
	return nil, closeFn, nil
}

// writeScoreOutputs writes the report and a complete run's card, and says
// where its record was kept (the run path keeps it); runErr is the run's
// (a stop) error.
func (c *cli) writeScoreOutputs(x scoreFlags, out *workbench.Outcome, runErr error) error {
	rep := &out.Report
	summary := x.output != outfile.Stdout && (x.summary || (x.output == "" && isTerminal(c.stdout)))
	if x.output != "" || !summary {
		if err := c.writeReport(x.output, rep); err != nil {
			return err
		}
	}
	if rep.Record == nil {
		if x.card != "" && runErr == nil {
			return fmt.Errorf("--card %s: the run has no record to describe (%s)", x.card, strings.Join(rep.Warnings, "; "))
		}
	} else {
		if out.Record != "" && !x.quiet && x.progress == "text" {
			fmt.Fprintf(c.stderr, "plexbench: record %s\n", out.Record)
		}
		if x.card != "" {
			if err := c.writeCard(x.card, rep); err != nil {
				return err
			}
		}
	}
	if summary {
		writeSummary(c.stdout, rep, x.output)
	}
	return nil
}

// resultsUsage is the --results flag's usage for a command whose runs
// what (e.g. "the run's record is written under").
func resultsUsage(what string) string {
	return "results root " + what + " (default $" + results.EnvRoot + ", else ./" + results.DefaultRoot + ")"
}

// withProfile is the settings of a command that takes profile flags: the
// profile at path (when given) under the flags given beside it, else the
// flags over p's defaults, validated.
func withProfile(fs *pflag.FlagSet, p profiles.Profile, path string) (profiles.Profile, error) {
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

// tokenHash is the report's token_ids_sha256 of ids.
func tokenHash(ids []int32) string {
	sum := scoring.TokenIDsSHA256(ids)
	return hex.EncodeToString(sum[:])
}

// writeReport writes the JSON report to path (see outfile), or to stdout.
func (c *cli) writeReport(path string, rep *scoring.Report) error {
	data, err := rep.JSON()
	if err != nil {
		return err
	}
	if path == "" {
		path = outfile.Stdout
	}
	return outfile.WriteFileTo(path, data, c.stdout)
}

// progressPrinter renders run events on stderr: one rewritten status line
// on a terminal, a line every few seconds otherwise.
type progressPrinter struct {
	out      io.Writer
	tty      bool
	kept     bool // show FlashPrefill's kept fraction of attention blocks
	lastLine time.Time
}

func newProgressPrinter(out io.Writer) *progressPrinter {
	return &progressPrinter{out: out, tty: isTerminal(out)}
}

func (p *progressPrinter) event(e scoring.Event) {
	if e.Choice != nil {
		p.choice(e)
		return
	}
	corpus := "" // which of several corpora, before each line
	if c := e.Corpus; c != nil {
		corpus = fmt.Sprintf("corpus %d/%d %s: ", c.Index, c.Of, filepath.Base(c.Text))
	}
	switch e.Kind {
	case scoring.EventStarted:
		fmt.Fprintf(p.out, "plexbench: %s%s, ctx %d, stride %d: %d windows, %d tokens to score, %d through prefill\n",
			corpus, e.Method, e.Ctx, e.Stride, e.WindowsTotal, e.ScoredTotal, e.PrefillTotal)
		if n := e.BaseOutBytesPerToken; n > 0 {
			fmt.Fprintf(p.out, "plexbench: recording the base: %d bytes per scored token, %.3g MiB for %d tokens\n",
				n, float64(n)*float64(e.ScoredTotal)/(1<<20), e.ScoredTotal)
		}
		if e.Resumed > 0 {
			fmt.Fprintf(p.out, "plexbench: resumed: %d of %d windows taken from the journal\n", e.Resumed, e.WindowsTotal)
		}
	case scoring.EventWindowDone:
		line := fmt.Sprintf("%swindow %d/%d  PPL %s  %.0f tok/s  ETA %s",
			corpus, e.WindowsDone, e.WindowsTotal, pplPM(e, "±"), e.MeanTokensPerSecond, e.ETA.Round(time.Second))
		if p.kept {
			line += fmt.Sprintf("  attn kept %.1f%%", 100*e.AttentionKept)
		}
		if k := e.KLD; k != nil {
			line += "  KLD " + kldPM(k) + fmt.Sprintf("  same-top %.2f%%", 100*k.SameTop)
		}
		if stop := e.StopSummary(); stop != "" {
			line += "  stop: " + stop
		}
		p.status(line, e.WindowsDone == e.WindowsTotal)
	case scoring.EventFinished:
		status := p.finished(e)
		kept := ""
		if p.kept {
			kept = fmt.Sprintf(", FlashPrefill kept %.1f%% of attention blocks", 100*e.AttentionKept)
		}
		k := ""
		if e.KLD != nil {
			k = fmt.Sprintf("; KLD %s, same top %.2f%%", kldPM(e.KLD), 100*e.KLD.SameTop)
		}
		fmt.Fprintf(p.out, "plexbench: %s%s in %s: PPL = %s, %s bits per byte over %d tokens%s (%.0f tok/s prefill%s)\n",
			corpus, status, e.Elapsed.Round(time.Millisecond), pplPM(e, "+/-"), bpbPM(e), e.ScoredDone, k, e.MeanTokensPerSecond, kept)
	}
}

// status shows a progress line: rewritten in place on a terminal, else
// written every few seconds and for the last one.
func (p *progressPrinter) status(line string, last bool) {
	if p.tty {
		fmt.Fprintf(p.out, "\r\033[K%s", line)
	} else if time.Since(p.lastLine) > 5*time.Second || last {
		fmt.Fprintln(p.out, line)
		p.lastLine = time.Now()
	}
}

// finished ends the status line of a terminal and says how the run ended.
func (p *progressPrinter) finished(e scoring.Event) string {
	if p.tty {
		fmt.Fprintln(p.out)
	}
	switch {
	case e.Partial && strings.HasPrefix(e.Reason, "stopped"):
		return e.Reason
	case e.Partial:
		return "stopped: " + e.Reason
	case e.StoppedEarly != nil:
		return fmt.Sprintf("stopped early at window %d, %s", e.StoppedEarly.Windows, ruleOutcome(e.StoppedEarly))
	}
	return "done"
}

// pplPM is e's perplexity with its ± (written pm: "±", or "+/-" as
// llama-perplexity's final line) once two windows give one: one window
// has no spread to measure.
func pplPM(e scoring.Event, pm string) string {
	if e.WindowsDone < 2 && e.PerplexityUncertainty == 0 {
		return fmt.Sprintf("%.4f (± after 2 windows)", e.Perplexity)
	}
	return fmt.Sprintf("%.4f %s %.5f", e.Perplexity, pm, e.PerplexityUncertainty)
}

// bpbPM is e's bits per byte with its ±, as pplPM.
func bpbPM(e scoring.Event) string {
	if e.WindowsDone < 2 && e.BitsPerByteUncertainty == 0 {
		return fmt.Sprintf("%.4f", e.BitsPerByte)
	}
	return fmt.Sprintf("%.4f +/- %.5f", e.BitsPerByte, e.BitsPerByteUncertainty)
}

// kldPM is a mean KLD with its ±, labelled: the token-level standard
// error (llama-perplexity's), which the reports' window-clustered CR1 ±
// (compare, card) is not.
func kldPM(k *scoring.KLDSummary) string {
	return scoring.PM(k.MeanKLD, k.MeanKLDUncertainty) + " (token SE)"
}
