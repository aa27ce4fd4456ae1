package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/results"
	"plexbench/scoring"
)

// TestPlotEndToEnd: three stories260K quantizations scored against an
// f32 base into a results root; plot kld-bpw, ppl and kld-hist write a
// valid SVG and PNG each; the running PPL ± ends on each report's final
// perplexity ± exactly; bad input gives one line, a non-zero exit and
// leaves the output path alone.
func TestPlotEndToEnd(t *testing.T) {
	t.Parallel()
	quants := []string{"q8_0", "q5_0", "q4_0"}
	f := newRecordsFixture(t, "8", quants...)
	root, dir := f.root, t.TempDir()
	recs, _, err := results.Records(root, nil)
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records: %v", len(recs), err)
	}
	for _, r := range recs {
		pts, clustered := scoring.RunningPPL(r.Windows)
		last := pts[len(pts)-1]
		if clustered || len(pts) != 8 || last.Perplexity != r.Perplexity || last.Uncertainty != r.PerplexityUncertainty || last.Tokens != r.ScoredTokens {
			t.Errorf("%s: running PPL ends at %v ± %v (%d tokens, clustered %v), report %v ± %v (%d)", r.Record.Name,
				last.Perplexity, last.Uncertainty, last.Tokens, clustered, r.Perplexity, r.PerplexityUncertainty, r.ScoredTokens)
		}
		if k := r.KLD; k != nil && (k.Histogram == nil || k.Histogram.Total() != k.Tokens-k.NonFiniteTokens) {
			t.Errorf("%s: histogram %+v for %d tokens", r.Record.Name, k.Histogram, k.Tokens)
		}
	}

	var q4 string
	for _, r := range recs {
		if strings.Contains(r.Record.Model.File, "q4_0") {
			q4 = filepath.Join(root, r.Record.Name+".json")
		}
	}
	for _, c := range []struct {
		args  []string
		out   string
		texts []string
	}{
		{[]string{"plot", "kld-bpw"}, "kld.svg", []string{"stories260K-q8_0", "stories260K-q5_0", "stories260K-q4_0", "Pareto front", "effective bits per weight", "stories260K-f32 recorded the base"}},
		{[]string{"plot", "kld-bpw", "--log-y"}, "kld.png", nil},
		{[]string{"plot", "ppl", "--width", "800", "--height", "500"}, "ppl.svg", []string{"stories260K-f32", "stories260K-q4_0", "scored tokens", "perplexity"}},
		{[]string{"plot", "ppl"}, "ppl.png", nil},
		{[]string{"plot", "kld-hist", "--record", q4}, "hist.svg", []string{"p99", "median", "per-token KLD"}},
		{[]string{"plot", "kld-hist", "--pattern", "stories260K-q4*", "--format", "png"}, "hist.bin", nil},
	} {
		out := filepath.Join(dir, c.out)
		code, stdout, stderr := runCLIEnv(t, f.env, append(c.args, "--out", out)...)
		if code != 0 || stdout != "" {
			t.Fatalf("%q: exit %d, stderr %q", c.args, code, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(c.out, ".svg") {
			all := svgText(t, data)
			for _, want := range c.texts {
				if !strings.Contains(all, want) {
					t.Errorf("%q: the SVG lacks %q", c.args, want)
				}
			}
			continue
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil || img.Bounds().Dx() != 960 || img.Bounds().Dy() != 600 {
			t.Errorf("%q: PNG %v: %v", c.args, img.Bounds(), err)
		}
	}
	// --out - writes the SVG to stdout.
	if code, stdout, _ := runCLIEnv(t, f.env, "plot", "kld-bpw", "--out", "-"); code != 0 || !strings.HasPrefix(stdout, "<?xml") {
		t.Errorf("--out -: exit %d, %.40q", code, stdout)
	}

	// Bad input.
	f32 := filepath.Join(root, recs[0].Record.Name+".json")
	for _, r := range recs {
		if r.KLD == nil {
			f32 = filepath.Join(root, r.Record.Name+".json")
		}
	}
	noWindows := filepath.Join(dir, "nowin.json")
	var raw map[string]any
	b, _ := os.ReadFile(q4)
	json.Unmarshal(b, &raw)
	delete(raw, "windows")
	b, _ = json.Marshal(raw)
	os.WriteFile(noWindows, b, 0o644)
	empty := t.TempDir()
	keep := filepath.Join(dir, "keep.svg")
	os.WriteFile(keep, []byte("keep"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "scatter"}, `unknown kind "scatter"`},
		{[]string{"plot"}, "want KIND"},
		{[]string{"plot", "ppl", "--results", empty}, "no records match *.json in " + empty},
		{[]string{"plot", "kld-bpw", "--record", f32}, "kld-bpw: none of the 1 records compared against a base"},
		{[]string{"plot", "kld-hist", "--record", f32}, "has no KLD"},
		{[]string{"plot", "kld-hist"}, "one record at a time: 3 with a KLD"},
		{[]string{"plot", "ppl", "--record", noWindows}, "has no windows"},
		{[]string{"plot", "ppl", "--record", filepath.Join(dir, "nope.json")}, "nope.json"},
		{[]string{"plot", "ppl", "--width", "0"}, "--width 0: want 200 to 10000 pixels"},
		{[]string{"plot", "ppl", "--format", "pdf"}, `--format "pdf"`},
		{[]string{"plot", "ppl", "--out", filepath.Join(dir, "x.pdf")}, "x.pdf: want a .svg or .png"},
		{[]string{"plot", "ppl", "--format", "png", "--out", keep}, "is a .svg file"},
		{[]string{"plot", "ppl", "--out", filepath.Join(dir, "no", "such", "dir", "p.svg")}, "p.svg"},
	} {
		args := c.args
		if !strings.Contains(strings.Join(args, " "), "--out") {
			args = append(args, "--out", keep)
		}
		code, stdout, stderr := runCLIEnv(t, f.env, args...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "plexbench: plot: ") || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want one line with %q", c.args, code, stderr, c.want)
		}
		if b, _ := os.ReadFile(keep); string(b) != "keep" {
			t.Fatalf("%q damaged --out: %q", c.args, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.pdf")); err == nil {
		t.Error("a refused plot wrote x.pdf")
	}
}

// svgText parses an SVG and returns its text content.
func svgText(t *testing.T, data []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		if cd, ok := tok.(xml.CharData); ok {
			b.Write(cd)
			b.WriteByte('|')
		}
	}
}
