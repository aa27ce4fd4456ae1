package main

// compare.go owns `plexbench compare`: the records under a results root,
// one table per protocol (never blending two), rows best first, as an
// aligned table, Markdown, CSV or JSON.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"plexbench/scoring"
	"plexbench/scoring/results"
)

// compareRow is one record's line of a table.
type compareRow struct {
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
}

type compareGroup struct {
	Title    string           `json:"title"`
	Protocol scoring.Protocol `json:"protocol"`
	Digest   string           `json:"protocol_digest"`
	Rows     []compareRow     `json:"rows"`
	// Floor is the newest floor measured for the group's base, and the
	// record that holds it.
	Floor       *scoring.FloorReport `json:"floor,omitempty"`
	FloorRecord string               `json:"floor_record,omitempty"`
	// Noise is the newest noise floor measured for the group's base
	// (plexbench noise), and the record that holds it.
	Noise       *scoring.NoiseReport `json:"noise,omitempty"`
	NoiseRecord string               `json:"noise_record,omitempty"`
}

type compareOutput struct {
	Object string         `json:"object"` // "plexbench.compare"
	Differ []string       `json:"groups_differ_in,omitempty"`
	Groups []compareGroup `json:"groups"`
}

func runCompare(args []string) int {
	fs := newFlags("compare", "[--results DIR] [--pattern GLOB]... [--format table|md|csv|json]")
	var patterns stringList
	fs.Var(&patterns, "pattern", "records to include, a glob in the results root (or a path); repeatable (default *.json)")
	resultsDir := fs.String("results", "", resultsUsage("the records are read from"))
	format := fs.String("format", "table", "table, md, csv or json")
	pos, code := parseInterleaved(fs, args)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		return fail(fmt.Errorf("compare: unexpected argument %q (records are chosen with --pattern)", pos[0]))
	}
	if err := checkCompareFormat("compare", *format); err != nil {
		return fail(err)
	}
	root := results.Root(*resultsDir)
	recs, err := results.Records(root, patterns)
	if err != nil {
		return fail(fmt.Errorf("compare: %w", err))
	}
	if err := writeCompare(os.Stdout, compareTables(scoring.GroupRecords(recs)), *format); err != nil {
		return fail(err)
	}
	return 0
}

// writeCompare writes the tables in format: table, md, csv or json.
func writeCompare(w io.Writer, out compareOutput, format string) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		return writeJSON(w, data)
	case "csv":
		return writeCompareCSV(w, out)
	}
	return writeCompareText(w, out, format == "md")
}

// checkCompareFormat refuses a --format writeCompare does not write.
func checkCompareFormat(cmd, format string) error {
	switch format {
	case "table", "md", "csv", "json":
		return nil
	}
	return fmt.Errorf("%s: --format %q: want table, md, csv or json", cmd, format)
}

func compareTables(groups []scoring.RecordGroup) compareOutput {
	out := compareOutput{Object: "plexbench.compare", Differ: scoring.ProtocolDifferences(groups)}
	for _, g := range groups {
		cg := compareGroup{Title: g.Protocol.Title(), Protocol: g.Protocol, Digest: g.Digest}
		if r := g.Newest(func(r *scoring.Report) bool { return r.Floor != nil && r.KLD != nil }); r != nil {
			cg.Floor, cg.FloorRecord = r.Floor, r.Record.Name
		}
		if r := g.Newest(isNoiseRecord); r != nil {
			cg.Noise, cg.NoiseRecord = r.Noise, r.Record.Name
		}
		for _, r := range g.Records {
			row := compareRow{Record: r.Record.Name, Model: r.Record.Model.File, KV: r.Config.KVCacheDType,
				EffectiveBPW: r.Record.Model.EffectiveBPW, PPL: r.Perplexity, PPLPM: r.PerplexityUncertainty,
				PrefillTokS: r.PrefillTokensPerSecond}
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
				row.FloorLimited = !row.FloorRun && !row.NoiseRun && cg.limited(k.MeanKLD)
			} else if g.Protocol.Base != "" {
				row.Reference = true
			}
			cg.Rows = append(cg.Rows, row)
		}
		out.Groups = append(out.Groups, cg)
	}
	return out
}

// isNoiseRecord reports whether r is a noise measurement's record.
func isNoiseRecord(r *scoring.Report) bool { return r.Noise != nil && r.KLD != nil }

// limited reports whether a mean KLD is within FloorFactor× the group's
// floor or its noise floor.
func (g *compareGroup) limited(meanKLD float64) bool {
	return (g.Floor != nil && scoring.WithinFloor(meanKLD, g.Floor.Floor)) ||
		(g.Noise != nil && scoring.WithinFloor(meanKLD, g.Noise.Floor))
}

func compareHeader() []string {
	return []string{"#", "model", "kv", "bpw", "PPL ±", "bits/byte ±", "ΔPPL ±", "mean KLD ± (CR1)", "KLD p99", "KLD max", "same top ±", "Δp", "prefill tok/s"}
}

// choiceHeader is the header of a multiple-choice group's table.
func choiceHeader() []string {
	return []string{"#", "model", "kv", "bpw", "accuracy", "tasks", "prefill tok/s"}
}

// isChoice reports whether g is a group of multiple-choice records.
func (g compareGroup) isChoice() bool { return g.Protocol.TaskFileSHA256 != "" }

// header and rowCells are g's table: a multiple-choice group's own, else
// the perplexity and KLD columns.
func (g compareGroup) header() []string {
	if g.isChoice() {
		return choiceHeader()
	}
	return compareHeader()
}

func (g compareGroup) rowCells(i int) []string {
	r := g.Rows[i]
	if g.isChoice() {
		return []string{fmt.Sprint(i + 1), r.Model, r.KV, fmt.Sprintf("%.2f", r.EffectiveBPW), r.Figure,
			fmt.Sprint(r.Tasks), fmt.Sprintf("%.0f", r.PrefillTokS)}
	}
	return r.cells(i)
}

func (r compareRow) cells(i int) []string {
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
	model, floor := r.Model, ""
	if r.FloorRun {
		model += " (floor)"
	}
	if r.NoiseRun {
		model += " (noise)"
	}
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

func writeCompareText(w io.Writer, out compareOutput, md bool) error {
	for gi, g := range out.Groups {
		if gi > 0 {
			fmt.Fprintln(w)
		}
		if md {
			fmt.Fprintf(w, "### Group %d: %s\n\n", gi+1, g.Title)
			fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(g.header(), " | "), strings.Repeat(" --- |", len(g.header())))
			for i := range g.Rows {
				fmt.Fprintf(w, "| %s |\n", strings.Join(g.rowCells(i), " | "))
			}
			if notes := floorNotes(g); len(notes) > 0 {
				fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "  \n"))
			}
			continue
		}
		fmt.Fprintf(w, "group %d: %s\n", gi+1, g.Title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(g.header(), "\t"))
		for i := range g.Rows {
			fmt.Fprintln(tw, strings.Join(g.rowCells(i), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range floorNotes(g) {
			fmt.Fprintln(w, n)
		}
	}
	if len(out.Differ) > 0 {
		if md {
			fmt.Fprintln(w)
		}
		_, err := fmt.Fprintf(w, "\nlegend: the %d groups differ in %s; their numbers are not comparable across groups\n",
			len(out.Groups), strings.Join(out.Differ, ", "))
		return err
	}
	return nil
}

// floorNotes are the lines under a group's table that say what its floor
// record measured.
func floorNotes(g compareGroup) []string {
	var notes []string
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

func writeCompareCSV(w io.Writer, out compareOutput) error {
	cw := csv.NewWriter(w)
	// One header for every group: the perplexity columns, then a
	// multiple-choice record's accuracy and tasks.
	cw.Write(append([]string{"group", "protocol"}, append(compareHeader(), "accuracy", "tasks", "record")...))
	for gi, g := range out.Groups {
		for i, r := range g.Rows {
			cells, acc, tasks := r.cells(i), "–", "–"
			if g.isChoice() {
				for c := 4; c < len(cells)-1; c++ {
					cells[c] = "–"
				}
				acc, tasks = r.Figure, fmt.Sprint(r.Tasks)
			}
			cw.Write(append([]string{fmt.Sprint(gi + 1), g.Title}, append(cells, acc, tasks, r.Record)...))
		}
	}
	cw.Flush()
	return cw.Error()
}
