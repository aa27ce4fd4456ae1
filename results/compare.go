package results

// compare.go owns the compare table's content: the records of each
// protocol group as rows, best first, with the group's floor and noise
// records (for the ~ marks). `plexbench compare` and `sweep` write it as
// text, Markdown, CSV or JSON; the TUI's sweep view draws it.

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"plexbench/scoring"
)

// CompareRow is one record's line of a table.
type CompareRow struct {
	Record       string   `json:"record"`
	Model        string   `json:"model"`
	KV           string   `json:"kv_cache_dtype"`
	EffectiveBPW float64  `json:"effective_bpw"`
	PPL          float64  `json:"perplexity"`
	PPLPM        float64  `json:"perplexity_uncertainty"`
	BitsPerByte  *float64 `json:"bits_per_byte,omitempty"` // nil for records from before text_bytes
	BPBPM        *float64 `json:"bits_per_byte_uncertainty,omitempty"`
	Reference    bool     `json:"reference,omitempty"` // the run that recorded the group's base
	DeltaPPL     *float64 `json:"delta_perplexity,omitempty"`
	DeltaPPLPM   *float64 `json:"delta_perplexity_uncertainty,omitempty"`
	MeanKLD      *float64 `json:"mean_kld,omitempty"`
	MeanKLDCR1   *float64 `json:"mean_kld_uncertainty_cr1,omitempty"`
	KLDP99       *float64 `json:"kld_p99,omitempty"`
	KLDMax       *float64 `json:"kld_max,omitempty"`
	SameTop      *float64 `json:"same_top,omitempty"`
	SameTopPM    *float64 `json:"same_top_uncertainty,omitempty"`
	MeanDeltaP   *float64 `json:"mean_delta_p,omitempty"`
	PrefillTokS  float64  `json:"prefill_tokens_per_second"`
	// Accuracy is a multiple-choice record's (percent), Figure it with its
	// ± or interval as the table shows it; Tasks the tasks scored.
	Accuracy     *float64 `json:"accuracy,omitempty"`
	Figure       string   `json:"accuracy_figure,omitempty"`
	Tasks        int      `json:"tasks,omitempty"`
	FloorRun     bool     `json:"floor_run,omitempty"`     // plexbench floor's self-compare
	NoiseRun     bool     `json:"noise_run,omitempty"`     // plexbench noise's largest change
	FloorLimited bool     `json:"floor_limited,omitempty"` // mean KLD within 2× of the group's floor or noise floor
	// Stopped is "N/M" for a run a stopping rule ended at window N of M
	// (its figures cover those windows); empty for a complete run.
	Stopped string `json:"stopped,omitempty"`
	// Tokenizer, Tokens and TextBytes are a bits-per-byte table's: the
	// model's tokenizer hash, the tokens it scored and the bytes they cover.
	Tokenizer string `json:"tokenizer_sha256,omitempty"`
	Tokens    int    `json:"tokens,omitempty"`
	TextBytes int64  `json:"text_bytes,omitempty"`
}

// CompareGroup is one protocol group's table.
type CompareGroup struct {
	Title    string           `json:"title"`
	Protocol scoring.Protocol `json:"protocol"`
	Digest   string           `json:"protocol_digest"`
	Rows     []CompareRow     `json:"rows"`
	// Floor is the newest floor measured for the group's base, and the
	// record that holds it.
	Floor       *scoring.FloorReport `json:"floor,omitempty"`
	FloorRecord string               `json:"floor_record,omitempty"`
	// Noise is the newest noise floor measured for the group's base
	// (plexbench noise), and the record that holds it.
	Noise       *scoring.NoiseReport `json:"noise,omitempty"`
	NoiseRecord string               `json:"noise_record,omitempty"`
	// BytesOnly marks a table of one text across tokenizers (BytesTables):
	// bits per byte is its only comparable figure.
	BytesOnly bool `json:"bytes_only,omitempty"`
}

// CompareOutput is the tables of every group, as compare --format json prints them.
type CompareOutput struct {
	Object string         `json:"object"` // "plexbench.compare"
	Differ []string       `json:"groups_differ_in,omitempty"`
	Groups []CompareGroup `json:"groups"`
}

// CompareTables is the compare table of groups: a table per protocol
// group, rows in the group's order (best first).
func CompareTables(groups []scoring.RecordGroup) CompareOutput {
	out := CompareOutput{Object: "plexbench.compare", Differ: scoring.ProtocolDifferences(groups)}
	for _, g := range groups {
		cg := CompareGroup{Title: g.Protocol.Title(), Protocol: g.Protocol, Digest: g.Digest}
		if r := g.Newest(func(r *scoring.Report) bool { return r.Floor != nil && r.KLD != nil }); r != nil {
			cg.Floor, cg.FloorRecord = r.Floor, r.Record.Name
		}
		if r := g.Newest(IsNoiseRecord); r != nil {
			cg.Noise, cg.NoiseRecord = r.Noise, r.Record.Name
		}
		for _, r := range g.Records {
			row := CompareRow{Record: r.Record.Name, Model: r.Record.Model.File, KV: r.Config.KVCacheDType,
				EffectiveBPW: r.Record.Model.EffectiveBPW, PPL: r.Perplexity, PPLPM: r.PerplexityUncertainty,
				PrefillTokS: r.PrefillTokensPerSecond, Stopped: stoppedAt(r)}
			if r.TextBytes > 0 {
				row.BitsPerByte, row.BPBPM = &r.BitsPerByte, &r.BitsPerByteUncertainty
			}
			if c := r.Choice(); c != nil {
				row.Accuracy, row.Figure, row.Tasks = &c.Accuracy, c.Figure(), c.Tasks
			}
			if k := r.KLD; k != nil {
				row.DeltaPPL, row.DeltaPPLPM = &k.DeltaPerplexity, &k.DeltaPerplexityUncertainty
				row.MeanKLD, row.MeanKLDCR1 = &k.MeanKLD, &k.MeanKLDUncertaintyCR1
				row.KLDP99, row.KLDMax = &k.KLDP99, &k.KLDMax
				row.SameTop, row.SameTopPM, row.MeanDeltaP = &k.SameTop, &k.SameTopUncertainty, &k.MeanDeltaP
				row.FloorRun, row.NoiseRun = r.Floor != nil, r.Noise != nil
				row.FloorLimited = !row.FloorRun && !row.NoiseRun && cg.Limited(k.MeanKLD)
			} else if g.Protocol.Base != "" {
				row.Reference = true
			}
			cg.Rows = append(cg.Rows, row)
		}
		out.Groups = append(out.Groups, cg)
	}
	return out
}

// BytesTables is the compare table of groups made by scoring.GroupByText:
// a table per text and geometry across tokenizers, by bits per byte
// alone (each model's PPL is over its own tokens and not comparable).
func BytesTables(groups []scoring.RecordGroup) CompareOutput {
	out := CompareOutput{Object: "plexbench.compare"}
	for _, g := range groups {
		p := g.Protocol
		title := fmt.Sprintf("bits per byte only, across tokenizers: %s, ctx %d", p.Method, p.Ctx)
		if p.Method == scoring.MethodSliding {
			title += fmt.Sprintf(", stride %d", p.Stride)
		}
		if p.ChunkLimit > 0 {
			title += fmt.Sprintf(", first %d windows", p.ChunkLimit)
		}
		title += fmt.Sprintf(", %s (text sha256 %.12s…)", p.Text, p.TextSHA256)
		cg := CompareGroup{Title: title, Protocol: p, Digest: g.Digest, BytesOnly: true}
		for _, r := range g.Records {
			cg.Rows = append(cg.Rows, CompareRow{Record: r.Record.Name, Model: r.Record.Model.File, KV: r.Config.KVCacheDType,
				EffectiveBPW: r.Record.Model.EffectiveBPW, PPL: r.Perplexity, PPLPM: r.PerplexityUncertainty,
				BitsPerByte: &r.BitsPerByte, BPBPM: &r.BitsPerByteUncertainty, PrefillTokS: r.PrefillTokensPerSecond,
				Tokenizer: r.Record.Model.TokenizerSHA256, Tokens: r.ScoredTokens, TextBytes: r.TextBytes, Stopped: stoppedAt(r)})
		}
		out.Groups = append(out.Groups, cg)
	}
	return out
}

// stoppedAt is "N/M" for a record a stopping rule ended at window N of
// M, else "".
func stoppedAt(r *scoring.Report) string {
	if s := r.StoppedEarly; s != nil {
		return fmt.Sprintf("%d/%d", s.Windows, r.WindowsTotal)
	}
	return ""
}

// modelCell is a row's model with its marks: stopped early, a floor or
// noise measurement.
func (r CompareRow) modelCell() string {
	model := r.Model
	if r.Stopped != "" {
		model += " (stopped " + r.Stopped + ")"
	}
	if r.FloorRun {
		model += " (floor)"
	}
	if r.NoiseRun {
		model += " (noise)"
	}
	return model
}

// BytesHeader is the header of a bits-per-byte table.
func BytesHeader() []string {
	return []string{"#", "model", "tokenizer", "kv", "bpw", "tokens", "bytes", "bits/byte ±", "Δ bits/byte", "PPL ± (own tokens)", "prefill tok/s"}
}

// IsNoiseRecord reports whether r is a noise measurement's record.
func IsNoiseRecord(r *scoring.Report) bool { return r.Noise != nil && r.KLD != nil }

// Limited reports whether a mean KLD is within FloorFactor× the group's
// floor or its noise floor.
func (g *CompareGroup) Limited(meanKLD float64) bool {
	return (g.Floor != nil && scoring.WithinFloor(meanKLD, g.Floor.Floor)) ||
		(g.Noise != nil && scoring.WithinFloor(meanKLD, g.Noise.Floor))
}

func CompareHeader() []string {
	return []string{"#", "model", "kv", "bpw", "PPL ±", "bits/byte ±", "ΔPPL ±", "mean KLD ± (CR1)", "KLD p99", "KLD max", "same top ±", "Δp", "prefill tok/s"}
}

// ChoiceHeader is the header of a multiple-choice group's table.
func ChoiceHeader() []string {
	return []string{"#", "model", "kv", "bpw", "accuracy", "tasks", "prefill tok/s"}
}

// IsChoice reports whether g is a group of multiple-choice records.
func (g CompareGroup) IsChoice() bool { return g.Protocol.TaskFileSHA256 != "" }

// Header and RowCells are g's table: a multiple-choice group's own, else
// the perplexity and KLD columns.
func (g CompareGroup) Header() []string {
	switch {
	case g.BytesOnly:
		return BytesHeader()
	case g.IsChoice():
		return ChoiceHeader()
	}
	return CompareHeader()
}

func (g CompareGroup) RowCells(i int) []string {
	r := g.Rows[i]
	if g.BytesOnly {
		tok := "–"
		if r.Tokenizer != "" {
			tok = fmt.Sprintf("%.8s…", r.Tokenizer)
		}
		delta := "(best)"
		if i > 0 {
			delta = fmt.Sprintf("%+.4f", *r.BitsPerByte-*g.Rows[0].BitsPerByte)
		}
		return []string{fmt.Sprint(i + 1), r.modelCell(), tok, r.KV, fmt.Sprintf("%.2f", r.EffectiveBPW), fmt.Sprint(r.Tokens),
			fmt.Sprint(r.TextBytes), scoring.PM(*r.BitsPerByte, *r.BPBPM), delta, scoring.PM(r.PPL, r.PPLPM), fmt.Sprintf("%.0f", r.PrefillTokS)}
	}
	if g.IsChoice() {
		return []string{fmt.Sprint(i + 1), r.modelCell(), r.KV, fmt.Sprintf("%.2f", r.EffectiveBPW), r.Figure,
			fmt.Sprint(r.Tasks), fmt.Sprintf("%.0f", r.PrefillTokS)}
	}
	return r.Cells(i)
}

func (r CompareRow) Cells(i int) []string {
	opt := func(p *float64, f func(float64) string) string {
		if p == nil {
			if r.Reference {
				return "(base)"
			}
			return "–"
		}
		return f(*p)
	}
	g := func(x float64) string { return fmt.Sprintf("%.4g", x) }
	model, floor := r.modelCell(), ""
	if r.FloorLimited {
		floor = " ~"
	}
	bpb := "–"
	if r.BitsPerByte != nil {
		bpb = scoring.PM(*r.BitsPerByte, *r.BPBPM)
	}
	c := []string{fmt.Sprint(i + 1), model, r.KV, fmt.Sprintf("%.2f", r.EffectiveBPW), scoring.PM(r.PPL, r.PPLPM), bpb,
		opt(r.DeltaPPL, func(d float64) string { return scoring.PMSigned(d, *r.DeltaPPLPM) }),
		opt(r.MeanKLD, func(k float64) string { return scoring.PM(k, *r.MeanKLDCR1) + floor }),
		opt(r.KLDP99, g), opt(r.KLDMax, g),
		opt(r.SameTop, func(s float64) string {
			return scoring.Percent(s, 2) + " ± " + fmt.Sprintf("%.2f%%", 100**r.SameTopPM)
		}),
		opt(r.MeanDeltaP, func(d float64) string { return fmt.Sprintf("%+.3f%%", 100*d) }),
		fmt.Sprintf("%.0f", r.PrefillTokS)}
	return c
}

// FloorNotes are the lines under a group's table that say what its rows'
// marks mean: a stopped run's, what its floor record measured.
func FloorNotes(g CompareGroup) []string {
	var notes []string
	if slices.ContainsFunc(g.Rows, func(r CompareRow) bool { return r.Stopped != "" }) {
		notes = append(notes, "stopped N/M: a stopping rule (--stop-at-precision, --stop-when-decided) ended the run at window N of M; its figures cover those windows")
	}
	if n := g.Noise; n != nil {
		notes = append(notes, fmt.Sprintf("noise: the base's settings under %d changes that must not change quality: largest mean KLD %.3g (the engine's noise floor); ~ marks results within 2× of it",
			len(n.Changes), n.Floor))
	}
	fl := g.Floor
	if fl == nil {
		return notes
	}
	notes = append(notes, fmt.Sprintf("floor: the base's model against its own top-%d base: mean KLD %.3g (measured; 0 for a deterministic engine); ~ marks results within 2× of it",
		fl.TopK, fl.Floor))
	if a := fl.Against; a != nil {
		notes = append(notes, fmt.Sprintf("top-%d coarsening: on %s a top-%d base saw %s of the full-vocabulary KLD (%.3g of %.3g); top-k KLDs are lower bounds",
			fl.TopK, fl.AgainstModel, fl.TopK, scoring.Percent(a.SeenFraction, 1), a.MeanTopKKLD, a.MeanFullKLD))
	}
	return notes
}

// Measurements are the floor and noise records under root in the
// protocol groups of the compared records, so that a compare table of
// them marks results within their floors. Unreadable records only lose
// the marks.
func Measurements(root string, compared []scoring.Report) []scoring.Report {
	recs, _, err := Records(root, nil)
	if err != nil {
		return nil
	}
	var out []scoring.Report
	for _, r := range recs {
		if r.Floor == nil && r.Noise == nil {
			continue
		}
		if slices.ContainsFunc(compared, func(c scoring.Report) bool { return c.Record.ProtocolDigest == r.Record.ProtocolDigest }) {
			out = append(out, r)
		}
	}
	return out
}

// WriteText writes the tables as `plexbench compare` prints them: aligned
// text, or Markdown when md is set; every column, whatever the width.
func (out CompareOutput) WriteText(w io.Writer, md bool) error {
	if md {
		return out.writeMarkdown(w)
	}
	return out.WriteTable(w, 0)
}

// dropOrder is the order a group's columns are left out in when its table
// is wider than the terminal: the model, its PPL and its mean KLD (or
// accuracy, or bits per byte) always stay.
func (g CompareGroup) dropOrder() []string {
	switch {
	case g.BytesOnly:
		return []string{"prefill tok/s", "tokenizer", "kv", "bpw", "bytes", "tokens", "PPL ± (own tokens)", "Δ bits/byte", "#"}
	case g.IsChoice():
		return []string{"prefill tok/s", "bpw", "kv", "tasks", "#"}
	}
	return []string{"KLD max", "Δp", "prefill tok/s", "bits/byte ±", "KLD p99", "#", "bpw", "ΔPPL ±", "kv", "same top ±"}
}

// Table is g's table, to be fitted to a width.
func (g CompareGroup) Table() Table {
	t := Table{Header: g.Header(), Drop: g.dropOrder(), Squeeze: "model", MinSqueeze: 20}
	for i := range g.Rows {
		t.Rows = append(t.Rows, g.RowCells(i))
	}
	return t
}

// WriteTable writes the tables as aligned text in at most width cells a
// line (width ≤ 0: no limit): a table too wide leaves out its least
// important columns, and says which; titles and notes wrap at spaces.
func (out CompareOutput) WriteTable(w io.Writer, width int) error {
	var b strings.Builder
	para := func(s string) {
		for _, l := range WrapWords(s, width, "  ") {
			b.WriteString(l + "\n")
		}
	}
	for gi, g := range out.Groups {
		if gi > 0 {
			b.WriteString("\n")
		}
		para(fmt.Sprintf("group %d: %s", gi+1, g.Title))
		lines, dropped := g.Table().Fit(width)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		if len(dropped) > 0 {
			para(fmt.Sprintf("(left out at %d columns: %s; --format md shows them)", width, strings.Join(dropped, ", ")))
		}
		for _, n := range FloorNotes(g) {
			para(n)
		}
	}
	if len(out.Differ) > 0 {
		b.WriteString("\n")
		para(fmt.Sprintf("legend: the %d groups differ in %s; their numbers are not comparable across groups",
			len(out.Groups), strings.Join(out.Differ, ", ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (out CompareOutput) writeMarkdown(w io.Writer) error {
	for gi, g := range out.Groups {
		if gi > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "### Group %d: %s\n\n", gi+1, g.Title)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(g.Header(), " | "), strings.Repeat(" --- |", len(g.Header())))
		for i := range g.Rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(g.RowCells(i), " | "))
		}
		if notes := FloorNotes(g); len(notes) > 0 {
			fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "  \n"))
		}
	}
	if len(out.Differ) > 0 {
		_, err := fmt.Fprintf(w, "\n\nlegend: the %d groups differ in %s; their numbers are not comparable across groups\n",
			len(out.Groups), strings.Join(out.Differ, ", "))
		return err
	}
	return nil
}
