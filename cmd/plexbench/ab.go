package main

// ab.go owns `plexbench ab`: the TUI's A/B headless. Two profiles are
// scored (A recording a base, B against it) or two saved reports are read,
// and the paired ΔPPL with its significance, B's KLD against A's base, the
// speed ratio and the verdict line the TUI's A/B view shows are printed as
// text or JSON; --fail-if conditions turn them into an exit code for CI.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// exitThreshold is the exit code when a --fail-if condition holds.
const exitThreshold = 3

func (c *cli) abCmd() *cobra.Command {
	cmd, fs := c.command("ab", "--profile A.toml --profile B.toml [flags] | A.json B.json [flags]", "headless A/B: paired ΔPPL ±, B's KLD vs A's base, speed, verdict")
	var paths, fails stringList
	fs.Var(&paths, "profile", "a TOML profile to run; give two (A first)")
	base := fs.String("perplexity-kld", "", "compare both runs against this saved base instead of a base A records\n"+
		"(its geometry, method, ctx, stride, chunks, where the profiles set none)")
	compare := fs.String("compare", "engine", "what the A/B compares: engine (same model file) or models (same text only)")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	fs.Var(&fails, "fail-if", "exit 3 when this holds, e.g. 'mean_kld>0.001' (repeatable; names: "+strings.Join(metricNames(), ", ")+")")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	allow := fs.Bool("allow-tokenizer-mismatch", false, "compare models whose tokenizers or token streams differ by bits per byte only (no KLD, no paired statistics) instead of refusing")
	resultsDir := fs.String("results", "", resultsUsage("the two runs' records and their A/B summary are written under"))
	var stopRule profiles.Profile // B's stop rule, when given
	stopRule.BindFlags(fs, "stop_at_precision", "stop_min_windows", "stop_when_decided")
	aliases(fs, map[string]string{"base": "perplexity-kld"})
	return c.action(cmd, func(pos []string) int {
		conds := make([]condition, len(fails))
		for i, f := range fails {
			cond, err := parseCondition(f)
			if err != nil {
				return c.fail(err)
			}
			conds[i] = cond
		}
		files := outputFiles("--profile", paths, "", "", c.resultsRoot(*resultsDir))
		files.In("--perplexity-kld", *base)
		if code := c.checkFiles(files); code >= 0 {
			return code
		}
		var res results.ABSummary
		var err error
		switch {
		case len(paths) == 2 && len(pos) == 0:
			x := abRun{cli: c, base: *base, kind: *compare, root: c.resultsRoot(*resultsDir), quiet: *quiet, allow: *allow, stop: fs}
			res, err = x.run(paths[0], paths[1])
		case len(paths) == 0 && len(pos) == 2:
			if *base != "" {
				return c.fail(errors.New("ab: --perplexity-kld applies to profile runs; two reports carry their own comparison"))
			}
			res, err = abReports(pos[0], pos[1], c.resultsRoot(*resultsDir), *allow)
		default:
			return c.fail(errors.New("ab: give two --profile files, or two report files"))
		}
		if err != nil {
			return c.fail(err)
		}
		for _, cond := range conds {
			hit, err := cond.holds(&res)
			if err != nil {
				return c.fail(err)
			}
			if hit {
				res.Failed = append(res.Failed, cond.Text)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(c.stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false) // conditions hold '>' and '<'
			if err := enc.Encode(res); err != nil {
				return c.fail(err)
			}
		} else {
			writeABText(c.stdout, &res)
		}
		if len(res.Failed) > 0 {
			fmt.Fprintf(c.stderr, "plexbench: ab: --fail-if holds: %s\n", strings.Join(res.Failed, ", "))
			return exitThreshold
		}
		if stopFails(res.StoppedEarly) {
			fmt.Fprintf(c.stderr, "plexbench: ab: B's --stop-when-decided %s does not hold: exit %d\n", res.StoppedEarly.Rule, exitThreshold)
			return exitThreshold
		}
		return 0
	})
}

// abRun is an A/B of two profiles: the settings `ab` gives them.
type abRun struct {
	cli              *cli   // where its progress goes
	base, kind, root string // --perplexity-kld, --compare, the results root
	quiet, allow     bool   // --quiet, --allow-tokenizer-mismatch
	// stop holds the stop-rule flags, which override B's profile.
	stop *pflag.FlagSet
}

// profiles loads, resolves and checks A's and B's profiles, B's with the
// stop-rule flags given to ab.
func (x abRun) profiles(pathA, pathB string) (a, b profiles.Profile, err error) {
	if a, err = profiles.Load(pathA); err != nil {
		return a, b, err
	}
	if b, err = profiles.Load(pathB); err != nil {
		return a, b, err
	}
	// Paths in a profile are relative to its file, not to the working
	// directory.
	a = a.Resolve()
	if b, err = b.Override(x.stop); err != nil {
		return a, b, fmt.Errorf("ab: %w", err)
	}
	if x.base != "" {
		if a, err = withBaseGeometry(a, pathA, x.base); err != nil {
			return a, b, err
		}
		if b, err = withBaseGeometry(b, pathB, x.base); err != nil {
			return a, b, err
		}
	}
	for _, p := range []profiles.Profile{a, b} {
		if err := p.Validate(); err != nil {
			return a, b, err
		}
	}
	ck, err := profiles.ParseComparison(x.kind)
	if err != nil {
		return a, b, fmt.Errorf("ab: %w", err)
	}
	return a, b, profiles.CheckComparable(a, b, ck)
}

// score runs p (recording a base at baseOut, comparing against against),
// its record kept under the results root.
func (x abRun) score(ctx context.Context, p profiles.Profile, baseOut, against string) (scoring.Report, string, error) {
	j := workbench.Job{Profile: p, BaseOut: baseOut, Compare: against, Keep: workbench.Keep{Root: x.root}}
	if !x.quiet {
		j.Progress = newProgressPrinter(x.cli.stderr).event
	}
	out, err := workbench.Run(ctx, j)
	if err != nil {
		return out.Report, "", fmt.Errorf("ab: %s (%s): %w", p.Name, p.Source, err)
	}
	if out.Record == "" {
		return out.Report, "", fmt.Errorf("ab: %s (%s): not kept as a record: %s", p.Name, p.Source, strings.Join(out.Report.Warnings, "; "))
	}
	if !x.quiet {
		fmt.Fprintf(x.cli.stderr, "plexbench: record %s\n", out.Record)
	}
	return out.Report, out.Record, nil
}

// run scores A (recording a base in a temporary folder unless given one)
// and then B against that base, as the TUI's A/B view does; both runs are
// kept as records under the root, the summary beside B's.
func (x abRun) run(pathA, pathB string) (results.ABSummary, error) {
	a, b, err := x.profiles(pathA, pathB)
	if err != nil {
		return results.ABSummary{}, err
	}
	jobs := [2]workbench.Job{{Profile: a, Compare: x.base}, {Profile: b, Compare: x.base}}
	warnings, err := workbench.CheckPair(jobs, nil)
	if err != nil {
		return results.ABSummary{}, fmt.Errorf("ab: %w", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(x.cli.stderr, "plexbench: warning: %s\n", w)
	}
	mismatch, err := tokenizerMismatch(a, b, x.allow)
	if err != nil {
		return results.ABSummary{}, err
	}
	ctx, stop := workbench.SignalContext()
	defer stop()
	if mismatch != "" {
		return x.bitsPerByte(ctx, a, b, mismatch)
	}
	against := x.base
	if against == "" {
		dir, err := os.MkdirTemp("", "plexbench-ab-")
		if err != nil {
			return results.ABSummary{}, fmt.Errorf("ab: %w", err)
		}
		defer os.RemoveAll(dir)
		against = filepath.Join(dir, "A.kld")
	}
	baseOut := ""
	if x.base == "" {
		baseOut = against
	}
	repA, pathA, err := x.score(ctx, a, baseOut, x.base)
	if err != nil {
		return results.ABSummary{}, err
	}
	if n := repA.WindowsScored; x.base == "" && repA.StoppedEarly != nil && (b.Chunks == 0 || b.Chunks > n) {
		// A's stop rule cut its base short: B is scored over A's windows.
		b.Chunks = n
	}
	repB, pathB, err := x.score(ctx, b, "", against)
	if err != nil {
		return results.ABSummary{}, err
	}
	res := results.Pair(&repA, &repB)
	res.A.Name, res.A.Report, res.B.Name, res.B.Report = a.Name, pathA, b.Name, pathB
	for _, c := range profiles.Diff(a, b) {
		res.Diff = append(res.Diff, c.String())
	}
	res.Base = x.base
	if x.base == "" {
		res.Base = "A's base"
	}
	withNoise(&res, &repB, x.root)
	return res, results.WriteAB(results.ABPath(pathB), res)
}

// tokenizerMismatch checks that a and b tokenize alike
// (workbench.CheckTokenizers): "" when they do; how they differ when they
// do not and allow is set; else the refusal.
func tokenizerMismatch(a, b profiles.Profile, allow bool) (string, error) {
	err := workbench.CheckTokenizers(a, b)
	switch {
	case err == nil:
		return "", nil
	case allow && errors.Is(err, scoring.ErrTokenizerMismatch):
		return err.Error(), nil
	}
	return "", fmt.Errorf("ab: %w", err)
}

// bitsPerByte scores a and b each on its own (no base) and compares them
// by bits per byte only.
func (x abRun) bitsPerByte(ctx context.Context, a, b profiles.Profile, mismatch string) (results.ABSummary, error) {
	repA, pathA, err := x.score(ctx, a, "", "")
	if err != nil {
		return results.ABSummary{}, err
	}
	repB, pathB, err := x.score(ctx, b, "", "")
	if err != nil {
		return results.ABSummary{}, err
	}
	res := results.PairBitsPerByte(&repA, &repB, mismatch)
	res.A.Name, res.A.Report, res.B.Name, res.B.Report = a.Name, pathA, b.Name, pathB
	for _, c := range profiles.Diff(a, b) {
		res.Diff = append(res.Diff, c.String())
	}
	return res, results.WriteAB(results.ABPath(pathB), res)
}

// abReports compares two saved reports: B's KLD is whatever base B was
// scored against. Reports of different tokens are refused, or with allow
// compared by bits per byte only.
func abReports(pathA, pathB, root string, allow bool) (results.ABSummary, error) {
	var reps [2]scoring.Report
	for i, p := range []string{pathA, pathB} {
		r, err := readReport(p)
		if err != nil {
			return results.ABSummary{}, err
		}
		reps[i] = r
	}
	if reps[0].Choice() != nil || reps[1].Choice() != nil {
		res, err := results.PairChoices(&reps[0], &reps[1])
		if err != nil {
			return res, fmt.Errorf("%s and %s: %w", pathA, pathB, err)
		}
		res.A.Name, res.A.Report = strings.TrimSuffix(filepath.Base(pathA), ".json"), pathA
		res.B.Name, res.B.Report = strings.TrimSuffix(filepath.Base(pathB), ".json"), pathB
		return res, nil
	}
	for i, r := range reps {
		if len(r.Windows) == 0 {
			return results.ABSummary{}, fmt.Errorf("%s: the report has no windows to pair (it was written with include_windows false)", []string{pathA, pathB}[i])
		}
	}
	var res results.ABSummary
	switch ha, hb := reps[0].Config.Model.TokenizerSHA256, reps[1].Config.Model.TokenizerSHA256; {
	case reps[0].TokenIDsSHA256 == reps[1].TokenIDsSHA256 && (ha == "" || hb == "" || ha == hb):
		res = results.Pair(&reps[0], &reps[1])
	case !allow:
		return results.ABSummary{}, fmt.Errorf("%s and %s scored different tokens (token_ids_sha256 %.12s… vs %.12s…, tokenizers %.12s… vs %.12s…); --allow-tokenizer-mismatch compares them by bits per byte only",
			pathA, pathB, reps[0].TokenIDsSHA256, reps[1].TokenIDsSHA256, orDash(ha), orDash(hb))
	default:
		res = results.PairBitsPerByte(&reps[0], &reps[1], fmt.Sprintf("token_ids_sha256 %.12s… vs %.12s…, tokenizers %.12s… vs %.12s…",
			reps[0].TokenIDsSHA256, reps[1].TokenIDsSHA256, orDash(ha), orDash(hb)))
	}
	res.A.Name, res.A.Report = strings.TrimSuffix(filepath.Base(pathA), ".json"), pathA
	res.B.Name, res.B.Report = strings.TrimSuffix(filepath.Base(pathB), ".json"), pathB
	if reps[1].KLD != nil {
		res.Base = reps[1].KLD.Base
	}
	withNoise(&res, &reps[1], root)
	return res, nil
}

// withNoise gives the summary the engine's noise floor measured for B's
// base: the newest noise record under root in B's record's protocol
// group (`plexbench noise` with the settings that recorded the base).
// Without one, or without readable records, the verdict goes without.
func withNoise(res *results.ABSummary, b *scoring.Report, root string) {
	if b.Record == nil || b.KLD == nil {
		return
	}
	recs, _, err := results.Records(root, nil)
	if err != nil {
		return
	}
	for _, g := range scoring.GroupRecords(recs) {
		if g.Digest != b.Record.ProtocolDigest {
			continue
		}
		if r := g.Newest(results.IsNoiseRecord); r != nil {
			res.SetNoiseFloor(r.Noise.Floor, r.Record.Name)
		}
	}
}

// readReport reads a JSON report.
func readReport(path string) (scoring.Report, error) {
	var r scoring.Report
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: not a JSON report: %v", path, err)
	}
	if r.Object != scoring.ReportObject {
		return r, fmt.Errorf("%s: object is %q, not a plexbench report (%q)", path, r.Object, scoring.ReportObject)
	}
	if len(r.Corpora) > 0 {
		return r, fmt.Errorf("%s: a report of %d corpora; an A/B pairs two runs of one text", path, len(r.Corpora))
	}
	return r, nil
}

func writeABText(w io.Writer, r *results.ABSummary) {
	if c := r.Choice; c != nil {
		writeABChoice(w, r, c)
		return
	}
	for _, s := range []struct {
		label string
		side  results.ABSide
	}{{"A", r.A}, {"B", r.B}} {
		fmt.Fprintf(w, "%s %-20s PPL %s  %.0f tok/s prefill\n", s.label, s.side.Name,
			scoring.PM(s.side.Perplexity, s.side.PerplexityUncertainty), s.side.PrefillTokensPerSecond)
	}
	if len(r.Diff) > 0 {
		fmt.Fprintf(w, "B − A      %s\n", strings.Join(r.Diff, ", "))
	}
	if r.DeltaBitsPerByte != nil {
		fmt.Fprintf(w, "bits/byte  B−A %s (z = %.2f; tokens do not pair: bits per byte only)\nverdict    %s\n",
			scoring.PMSigned(*r.DeltaBitsPerByte, *r.DeltaBitsPerByteUncertainty), r.DeltaZ, r.Verdict)
		return
	}
	c := r.Comparison
	sig := fmt.Sprintf("within noise at %.0fσ", scoring.Sigmas)
	if r.Significant {
		sig = fmt.Sprintf("significant at %.0fσ", scoring.Sigmas)
	}
	if c.Windows < 2 {
		// One pair has no spread: no ±, no z.
		fmt.Fprintf(w, "ΔPPL B−A   %+.4g%%  paired over %d window (± after 2 windows)\n", c.DeltaPPLPercent, c.Windows)
	} else {
		fmt.Fprintf(w, "ΔPPL B−A   %s%%  paired over %d windows (z = %.2f, %s)\n",
			scoring.PMSigned(c.DeltaPPLPercent, c.DeltaPPLPercentUncertainty), c.Windows, r.DeltaZ, sig)
	}
	if k := c.KLD; k != nil {
		fmt.Fprintf(w, "KLD B‖base %s (token SE; %s)  same top %s ± %.2f%%  p50 %.3g p99 %.3g max %.3g  vs %s\n",
			scoring.PM(k.MeanKLD, k.MeanKLDUncertainty), r.KLDBand, scoring.Percent(k.SameTop, 2),
			100*k.SameTopUncertainty, k.P50, k.P99, k.Max, r.Base)
	}
	switch {
	case c.SpeedRatio > 0 && c.Windows < 2:
		fmt.Fprintf(w, "speed B/A  %.3f×\n", c.SpeedRatio)
	case c.SpeedRatio > 0:
		fmt.Fprintf(w, "speed B/A  %.3f× ± %.3f\n", c.SpeedRatio, c.SpeedRatioUncertainty)
	}
	if st := r.StoppedEarly; st != nil {
		fmt.Fprintf(w, "stopped    B at window %d, %s (%s %.6g ± %.3g)\n", st.Windows, ruleOutcome(st), st.Statistic, st.Value, st.HalfWidth)
	}
	fmt.Fprintf(w, "verdict    %s\n", r.Verdict)
}

// writeABChoice is the text of two multiple-choice runs' comparison.
func writeABChoice(w io.Writer, r *results.ABSummary, c *scoring.ChoiceComparison) {
	fmt.Fprintf(w, "A %-20s %s accuracy %.4f%%\n", r.A.Name, c.Method, c.AccuracyA)
	fmt.Fprintf(w, "B %-20s %s accuracy %.4f%%\n", r.B.Name, c.Method, c.AccuracyB)
	fmt.Fprintf(w, "Δacc B−A   %s points, paired over %d tasks: only A right %d, only B right %d, McNemar exact p = %.4g\n",
		scoring.PMSigned(c.DeltaAccuracy, c.DeltaAccuracyUncertainty), c.Tasks, c.OnlyA, c.OnlyB, c.McNemarP)
	if st := r.StoppedEarly; st != nil {
		fmt.Fprintf(w, "stopped    B at window %d, %s (%s %.6g ± %.3g)\n", st.Windows, ruleOutcome(st), st.Statistic, st.Value, st.HalfWidth)
	}
	fmt.Fprintf(w, "verdict    %s\n", r.Verdict)
}

// A condition is one --fail-if: a figure of the A/B summary, a comparison
// and a number (scoring.ParseCondition's language).
type condition struct{ scoring.Condition }

func metricNames() []string {
	return []string{"mean_kld", "kld_p99", "kld_max", "same_top", "delta_ppl_percent",
		"abs_delta_ppl_percent", "delta_z", "speed_ratio", "delta_bits_per_byte", "delta_accuracy", "mcnemar_p"}
}

// metricValue is the figure --fail-if names; have is false when the
// result lacks it (no KLD, no paired windows).
func metricValue(r *results.ABSummary, name string) (v float64, have bool) {
	c, k := &r.Comparison, r.Comparison.KLD
	switch name {
	case "delta_accuracy", "mcnemar_p":
		if r.Choice == nil {
			return 0, false
		}
		if name == "mcnemar_p" {
			return r.Choice.McNemarP, true
		}
		return r.Choice.DeltaAccuracy, true
	case "mean_kld", "kld_p99", "kld_max", "same_top":
		if k == nil {
			return 0, false
		}
		switch name {
		case "mean_kld":
			return k.MeanKLD, true
		case "kld_p99":
			return k.P99, true
		case "kld_max":
			return k.Max, true
		}
		return k.SameTop, true
	case "delta_ppl_percent":
		return c.DeltaPPLPercent, c.Windows > 0
	case "abs_delta_ppl_percent":
		return math.Abs(c.DeltaPPLPercent), c.Windows > 0
	case "delta_z":
		return r.DeltaZ, c.Windows > 1
	case "speed_ratio":
		return c.SpeedRatio, c.SpeedRatio > 0
	case "delta_bits_per_byte":
		if r.DeltaBitsPerByte == nil {
			return 0, false
		}
		return *r.DeltaBitsPerByte, true
	}
	return 0, false // parseCondition knows every name
}

// parseCondition parses one --fail-if.
func parseCondition(s string) (condition, error) {
	c, err := scoring.ParseCondition(s, metricNames())
	if err != nil {
		return condition{}, fmt.Errorf("--fail-if %w", err)
	}
	return condition{c}, nil
}

func (c condition) holds(r *results.ABSummary) (bool, error) {
	x, have := metricValue(r, c.Metric)
	if !have {
		return false, fmt.Errorf("--fail-if %s: this comparison has no %s (B ran without a base, no windows paired, or not multiple-choice runs)", c.Text, c.Metric)
	}
	return c.Holds(x), nil
}
