package main

// card.go owns model cards: a Markdown summary of one record for a model
// page (headline metrics, the protocol they are comparable within, and the
// command that reproduces them), with file names only, never local paths.
// `score --card FILE` writes one for the run; `plexbench card RECORD`
// writes one for a saved record.

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"plexbench/internal/outfile"
	"plexbench/scoring"
)

func (c *cli) cardCmd() *cobra.Command {
	cmd, fs := c.command("card", "RECORD.json [-o card.md]", "a Markdown model card of a record (also: score --card)")
	out := fs.StringP("output", "o", "", "write the card here (default: stdout)")
	return c.action(cmd, func(pos []string) int {
		if len(pos) != 1 {
			return c.fail(fmt.Errorf("card: give one record file"))
		}
		if code := c.checkFiles(outputFiles("the record", pos, "-o", *out, "")); code >= 0 {
			return code
		}
		rep, ok, err := scoring.ReadRecord(pos[0])
		if err != nil {
			return c.fail(err)
		}
		if !ok {
			return c.fail(fmt.Errorf("%s: not a record (an A/B summary, or a stopped run)", pos[0]))
		}
		if err := c.writeCard(*out, &rep); err != nil {
			return c.fail(err)
		}
		return 0
	})
}

// writeCard writes rep's card to path atomically, or to stdout.
func (c *cli) writeCard(path string, rep *scoring.Report) error {
	card := modelCard(rep)
	if path == "" || path == "-" {
		_, err := io.WriteString(c.stdout, card)
		return err
	}
	return outfile.WriteFile(path, []byte(card))
}

// modelCard is the Markdown card of a record.
func modelCard(r *scoring.Report) string {
	if len(r.Corpora) > 0 {
		return corporaCard(r)
	}
	if c := r.Choice(); c != nil {
		return choiceCard(r, c)
	}
	rec := r.Record
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — plexbench quality card\n\n", rec.Model.File)
	b.WriteString("| metric | value |\n| --- | --- |\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	row("perplexity", scoring.PM(r.Perplexity, r.PerplexityUncertainty))
	if r.TextBytes > 0 {
		row("bits per byte", fmt.Sprintf("%s (over %d bytes of text; comparable across tokenizers)",
			scoring.PM(r.BitsPerByte, r.BitsPerByteUncertainty), r.TextBytes))
	}
	if k := r.KLD; k != nil {
		row("mean KLD vs base", fmt.Sprintf("%s nats (%s; ± window-clustered)", scoring.PM(k.MeanKLD, k.MeanKLDUncertaintyCR1), scoring.KLDBand(k.MeanKLD)))
		row("KLD median / p99 / max", fmt.Sprintf("%.4g / %.4g / %.4g", k.KLDPercentiles.Median, k.KLDP99, k.KLDMax))
		row("same top token", scoring.Percent(k.SameTop, 2)+" ± "+fmt.Sprintf("%.2f%%", 100*k.SameTopUncertainty))
		row("ΔPPL vs base", scoring.PMSigned(k.DeltaPerplexity, k.DeltaPerplexityUncertainty)+
			fmt.Sprintf(" (base PPL %s)", scoring.PM(k.BasePerplexity, k.BasePerplexityUncertainty)))
		row("mean Δp", fmt.Sprintf("%+.3f%%", 100*k.MeanDeltaP))
	}
	modelRows(r, row)

	p := rec.Protocol
	fmt.Fprintf(&b, "\n**Comparable only within this protocol:** %s, %d windows, %d scored tokens (the second half of each window, as llama-perplexity)",
		p.Title(), r.WindowsScored, r.ScoredTokens)
	fmt.Fprintf(&b, "; KV cache %s; model sha256 %s….\n", r.Config.KVCacheDType, rec.Model.SHA256Prefix)
	fmt.Fprintf(&b, "\n**Reproduce:**\n\n```sh\n%s\n```\n", reproduceCommand(r))
	fmt.Fprintf(&b, "\nplexbench %s · record %s\n", rec.Version, rec.Name)
	return b.String()
}

// modelRows are a card's rows of the model file and the run's speed.
func modelRows(r *scoring.Report, row func(k, v string)) {
	rec := r.Record
	row("effective bits per weight", fmt.Sprintf("%.3f (tensors: %s)", rec.Model.EffectiveBPW, typeList(rec.Model.TypeHistogram)))
	cpu := rec.Machine.CPUModel
	if cpu == "" {
		cpu = rec.Machine.Arch
	}
	row("prefill speed", fmt.Sprintf("%.0f tok/s on %s, %d threads (%s)", r.PrefillTokensPerSecond, cpu, r.Config.Threads, r.Config.CPUFeatures))
}

// typeList is a tensor type histogram as "F16 ×5, Q8_0 ×32", sorted.
func typeList(h map[string]int) string {
	types := make([]string, 0, len(h))
	for t, n := range h {
		types = append(types, fmt.Sprintf("%s ×%d", t, n))
	}
	slices.Sort(types)
	return strings.Join(types, ", ")
}

// choiceCard is the card of a multiple-choice record: the mode's figure
// as llama-perplexity prints it, the tasks it is over, and the command
// that scores the same tasks.
func choiceCard(r *scoring.Report, c *scoring.ChoiceSummary) string {
	rec := r.Record
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — plexbench quality card\n\n", rec.Model.File)
	b.WriteString("| metric | value |\n| --- | --- |\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	switch c.Method {
	case scoring.MethodHellaSwag:
		row("HellaSwag acc_norm", c.Figure()+" (Wilson 95% interval)")
	case scoring.MethodWinogrande:
		row("Winogrande accuracy", c.Figure()+" (± its standard error)")
	default:
		row("multiple-choice accuracy", c.Figure()+" (± its standard error)")
		if m := r.MultipleChoice; m.RandomChance > 0 {
			row("random chance", fmt.Sprintf("%.4f ± %.4f%%", m.RandomChance, m.RandomChanceUncertainty))
		}
	}
	row("tasks", fmt.Sprintf("%d right of %d (%d in the file)", c.Correct(), c.Tasks, c.TasksInFile))
	modelRows(r, row)
	fmt.Fprintf(&b, "\n**Comparable only within this protocol:** %s, the same tasks drawn as llama-perplexity draws them; "+
		"KV cache %s; model sha256 %s….\n", rec.Protocol.Title(), r.Config.KVCacheDType, rec.Model.SHA256Prefix)
	flag := "--" + strings.ReplaceAll(c.Method, "_", "-") // multiple_choice: --multiple-choice
	args := []string{"plexbench", "score", "--model", rec.Model.File, flag, filepath.Base(r.Text)}
	// HellaSwag always draws; the others keep the file's order when they
	// score every task.
	if c.Method == scoring.MethodHellaSwag || c.Tasks < c.TasksInFile {
		args = append(args, flag+"-tasks", fmt.Sprint(c.Tasks))
	}
	args = append(append(args, "--perplexity-ctx", fmt.Sprint(r.Ctx)), planFlags(r.Config)...)
	fmt.Fprintf(&b, "\n**Reproduce:**\n\n```sh\n%s\n```\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "\nplexbench %s · record %s\n", rec.Version, rec.Name)
	return b.String()
}

// reproduceCommand is the score command line that reruns a record, with
// file names in place of paths.
func reproduceCommand(r *scoring.Report) string {
	args := []string{"plexbench", "score", "--model", r.Record.Model.File}
	if r.KLD != nil {
		// The base carries the tokens and the geometry.
		args = append(args, "--perplexity-kld", filepath.Base(r.KLD.Base))
	} else {
		text := r.Record.Protocol.Text
		if text == "" {
			text = "TOKENS.json"
			args = append(args, "--perplexity-tokens", text)
		} else {
			args = append(args, "--perplexity", text)
		}
		args = append(args, windowFlags(r)...)
	}
	args = append(args, planFlags(r.Config)...)
	if r.KLDBaseOut != "" {
		args = append(args, "--perplexity-kld-base-out", filepath.Base(r.KLDBaseOut))
		if r.KLDBaseFormat == scoring.BaseFormatLlama {
			args = append(args, "--kld-format", "llama")
		}
	}
	return strings.Join(args, " ")
}

// windowFlags are the score flags of r's windows.
func windowFlags(r *scoring.Report) []string {
	args := []string{"--perplexity-method", r.Method, "--perplexity-ctx", fmt.Sprint(r.Ctx)}
	if r.Method == scoring.MethodSliding {
		args = append(args, "--perplexity-stride", fmt.Sprint(r.Stride))
	}
	if r.ChunkLimit > 0 {
		args = append(args, "--perplexity-chunks", fmt.Sprint(r.ChunkLimit))
	}
	return args
}

// planFlags are the score flags of c's KV cache and pass plan.
func planFlags(c scoring.EngineConfig) []string {
	return []string{"--kv-cache-dtype", c.KVCacheDType, "--batch-size", fmt.Sprint(c.BatchSize), "--ubatch-size", fmt.Sprint(c.UBatchSize)}
}

// corporaCard is the card of a record of several corpora: a row per
// corpus (each comparable only within its own protocol) and the averages.
func corporaCard(r *scoring.Report) string {
	rec := r.Record
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — plexbench quality card, %d corpora\n\n", rec.Model.File, len(r.Corpora))
	b.WriteString("| corpus | tokens | perplexity | bits per byte | protocol |\n| --- | --- | --- | --- | --- |\n")
	for i := range r.Corpora {
		c := &r.Corpora[i]
		proto := "–"
		if c.Record != nil {
			proto = fmt.Sprintf("token ids %.12s…, protocol %s", c.TokenIDsSHA256, c.Record.ProtocolDigest)
		}
		fmt.Fprintf(&b, "| %s | %d (%d bytes) | %s | %s | %s |\n", filepath.Base(c.Text), c.ScoredTokens, c.TextBytes,
			scoring.PM(c.Perplexity, c.PerplexityUncertainty), scoring.PM(c.BitsPerByte, c.BitsPerByteUncertainty), proto)
	}
	if a := r.CorporaAverage; a != nil {
		tw := a.TokenWeighted
		fmt.Fprintf(&b, "| token-weighted | %d (%d bytes) | %.4f | %.4f | |\n", tw.Tokens, tw.TextBytes, tw.Perplexity, tw.BitsPerByte)
		fmt.Fprintf(&b, "| macro (mean of %d) | | %.4f | %.4f | |\n", a.Macro.Corpora, a.Macro.Perplexity, a.Macro.BitsPerByte)
	}
	fmt.Fprintf(&b, "\nEffective bits per weight %.3f (tensors: %s); prefill %.0f tok/s, %d threads; KV cache %s; model sha256 %s….\n",
		rec.Model.EffectiveBPW, typeList(rec.Model.TypeHistogram), r.PrefillTokensPerSecond, r.Config.Threads, r.Config.KVCacheDType, rec.Model.SHA256Prefix)
	b.WriteString("\n**Comparable only corpus by corpus**, each within its own protocol (its tokens, the same windows); the averages only with runs of the same corpora.\n")
	args := []string{"plexbench", "score", "--model", rec.Model.File}
	for i := range r.Corpora {
		args = append(args, "--perplexity", filepath.Base(r.Corpora[i].Text))
	}
	args = append(append(args, windowFlags(r)...), planFlags(r.Config)...)
	fmt.Fprintf(&b, "\n**Reproduce:**\n\n```sh\n%s\n```\n", strings.Join(args, " "))
	fmt.Fprintf(&b, "\nplexbench %s · record %s\n", rec.Version, rec.Name)
	return b.String()
}
