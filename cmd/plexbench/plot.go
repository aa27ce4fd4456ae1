package main

// plot.go owns `plexbench plot`: charts of records drawn by plexbench
// itself (results/plot) as SVG or PNG: mean KLD against bits per weight
// with the Pareto front, perplexity convergence window by window, and a
// record's per-token KLD histogram.

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"plexbench/internal/outfile"
	"plexbench/results"
	"plexbench/results/plot"
	"plexbench/scoring"
)

const plotKinds = "kld-bpw, ppl or kld-hist"

func (c *cli) plotCmd() *cobra.Command {
	cmd, fs := c.command("plot", "KIND [--results DIR] [--pattern GLOB]... [--record FILE]... [--out FILE] [--format svg|png] [--log-y] [--width W --height H]\n"+
		"KIND is kld-bpw (mean KLD vs bits per weight, Pareto front), ppl (running perplexity ± per window) or kld-hist (one record's per-token KLD histogram)", "charts of records: KLD vs bits per weight, PPL convergence, KLD histogram")
	var patterns, files stringList
	fs.Var(&patterns, "pattern", "records to include, a glob in the results root (or a path); repeatable (default *.json)")
	fs.Var(&files, "record", "a record file to plot; repeatable (instead of the results root)")
	resultsDir := fs.String("results", "", resultsUsage("the records are read from"))
	out := fs.String("out", "", "output file, - for stdout (default plot-KIND.svg or .png)")
	format := fs.String("format", "", "image format: svg or png (default from --out's extension, else svg)")
	logY := fs.Bool("log-y", false, "logarithmic y axis")
	width := fs.Int("width", 960, "image width in pixels")
	height := fs.Int("height", 600, "image height in pixels")
	return c.action(cmd, func(pos []string) int {
		bad := func(format string, a ...any) int { return c.fail(fmt.Errorf("plot: "+format, a...)) }
		if len(pos) != 1 {
			if len(pos) == 0 {
				return bad("which plot? want KIND: %s", plotKinds)
			}
			return bad("unexpected argument %q (records are chosen with --pattern or --record)", pos[1])
		}
		kind := pos[0]
		switch kind {
		case "kld-bpw", "ppl", "kld-hist":
		default:
			return bad("unknown kind %q: want %s", kind, plotKinds)
		}
		for _, d := range []struct {
			flag string
			v    int
		}{{"--width", *width}, {"--height", *height}} {
			if d.v < 200 || d.v > 10000 {
				return bad("%s %d: want 200 to 10000 pixels", d.flag, d.v)
			}
		}
		ft, err := plotFormat(*format, *out)
		if err != nil {
			return bad("%v", err)
		}
		path := *out
		if path == "" {
			path = "plot-" + kind + "." + ft
		}
		if path == outfile.Stdout && ft == "png" && isTerminal(c.stdout) {
			return bad("--out - with --format png: will not write an image to a terminal; redirect it or name a file")
		}
		if err := outputFiles("--record", files, "--out", path, "").Check(); err != nil {
			return bad("%w", err)
		}
		var recs []scoring.Report
		if len(files) > 0 {
			for _, f := range files {
				r, ok, err := scoring.ReadRecord(f)
				if err != nil {
					return bad("--record %v", err)
				}
				if !ok {
					return bad("--record %s: not a complete record (an A/B summary or a stopped run's report)", f)
				}
				recs = append(recs, scoring.ExpandCorpora([]scoring.Report{r})...)
			}
		}
		if len(patterns) > 0 || len(files) == 0 {
			more, skipped, err := results.Records(c.resultsRoot(*resultsDir), patterns)
			c.skippedFiles("plot", skipped)
			if err != nil {
				return bad("%v", err)
			}
			recs = append(recs, more...)
		}
		chart, err := plotChart(kind, scoring.GroupRecords(recs), plot.Options{LogY: *logY})
		if err != nil {
			return bad("%s: %v", kind, err)
		}
		if err := c.writeChart(path, ft, chart, *width, *height); err != nil {
			return bad("%v", err)
		}
		return 0
	})
}

// writeChart lays chart out at width×height and writes it to path as ft
// (svg or png), saying so on stderr unless path is stdout.
func (c *cli) writeChart(path, ft string, chart *plot.Chart, width, height int) error {
	canvas := plot.Layout(chart, width, height)
	var data []byte
	var err error
	if ft == "png" {
		data, err = plot.PNG(canvas)
	} else {
		data = plot.SVG(canvas)
	}
	if err != nil {
		return err
	}
	if err := outfile.WriteFileTo(path, data, c.stdout); err != nil {
		return fmt.Errorf("--out %v", err)
	}
	if path != outfile.Stdout {
		fmt.Fprintf(c.stderr, "plexbench: wrote %s\n", path)
	}
	return nil
}

// plotFormat is --format, or --out's extension, or svg; a clash is an error.
func plotFormat(format, out string) (string, error) {
	ext := ""
	if out != "" && out != outfile.Stdout {
		ext = strings.ToLower(strings.TrimPrefix(filepath.Ext(out), "."))
	}
	switch format {
	case "":
		switch ext {
		case "", "svg", "png":
			if ext == "" {
				return "svg", nil
			}
			return ext, nil
		}
		return "", fmt.Errorf("--out %s: want a .svg or .png file, or give --format", out)
	case "svg", "png":
		if ext != "" && ext != format && (ext == "svg" || ext == "png") {
			return "", fmt.Errorf("--format %s but --out %s is a .%s file", format, out, ext)
		}
		return format, nil
	}
	return "", fmt.Errorf("--format %q: want svg or png", format)
}

// fileStem is name without its extension, spelled as record file names
// spell it (characters other than letters, digits, '.' and '-' as '-').
func fileStem(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '-'
	}, strings.TrimSuffix(name, filepath.Ext(name)))
}

// plotChart builds the kind's chart from the chosen records' groups.
func plotChart(kind string, groups []scoring.RecordGroup, opt plot.Options) (*plot.Chart, error) {
	var all []*scoring.Report
	for _, g := range groups {
		all = append(all, g.Records...)
	}
	switch kind {
	case "kld-bpw":
		var withKLD []scoring.RecordGroup
		for _, g := range groups {
			for _, r := range g.Records {
				if r.KLD != nil {
					withKLD = append(withKLD, g)
					break
				}
			}
		}
		switch len(withKLD) {
		case 0:
			return nil, fmt.Errorf("none of the %d records compared against a base (no kld object): score with --perplexity-kld", len(all))
		case 1:
			return plot.KLDvsBPW(withKLD[0], opt)
		}
		var names []string
		for _, g := range withKLD {
			names = append(names, fmt.Sprintf("%s (%s, ctx %d, base %s)", g.Digest, g.Protocol.Method, g.Protocol.Ctx, g.Protocol.BaseName))
		}
		return nil, fmt.Errorf("the records span %d protocols, which one chart never blends: %s; choose one with --pattern "+
			"(a compared record's file is named MODEL_vs-BASE_…, e.g. --pattern '*_vs-%s_*')",
			len(withKLD), strings.Join(names, "; "), fileStem(withKLD[0].Protocol.BaseName))
	case "ppl":
		return plot.PPLConvergence(groups, opt)
	}
	var withKLD []*scoring.Report
	protocol := map[*scoring.Report]scoring.Protocol{}
	for _, g := range groups {
		for _, r := range g.Records {
			protocol[r] = g.Protocol
			if r.KLD != nil {
				withKLD = append(withKLD, r)
			}
		}
	}
	switch {
	case len(all) == 1:
		return plot.KLDHist(all[0], protocol[all[0]], opt)
	case len(withKLD) == 1:
		return plot.KLDHist(withKLD[0], protocol[withKLD[0]], opt)
	case len(withKLD) == 0:
		return nil, errors.New("none of the records compared against a base (no kld object)")
	}
	return nil, fmt.Errorf("one record at a time: %d with a KLD match; choose one with --record or --pattern", len(withKLD))
}
