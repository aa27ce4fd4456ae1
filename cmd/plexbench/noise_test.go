package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/scoring"
)

// runNoiseJSON runs `noise --json` on stories260K q with args and returns
// its noise object.
func runNoiseJSON(t *testing.T, q string, args ...string) scoring.NoiseReport {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"noise", "--model", stories(t, q), "--json", "--quiet"}, args...)...)
	if code != 0 {
		t.Fatalf("noise %s: exit %d: %s", q, code, stderr)
	}
	var n scoring.NoiseReport
	if err := json.Unmarshal([]byte(stdout), &n); err != nil {
		t.Fatalf("noise %s: %v: %s", q, err, stdout)
	}
	return n
}

// TestNoise: on stories260K f32 the thread, pass-plan and Go-twin
// changes leave the distributions as they are (the twins compute the
// same bits) and the exact go variants move them a little; on q8_0 the
// go variants' other activation rounding gives the 8-bit files' kernel
// floor (~2e-4). The floor is the largest change, kept as a record.
func TestNoise(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "results")
	geo := append(sweepGeometry(t, "64", "8"), "--results", root)
	for _, q := range []string{"f32", "q8_0"} {
		n := runNoiseJSON(t, q, geo...)
		largest, kinds := 0.0, map[string]int{}
		for _, c := range n.Changes {
			largest = max(largest, c.MeanKLD)
			kind, _, _ := strings.Cut(c.Settings, "=")
			kinds[kind]++
			exact := kind != "kernels" || strings.Contains(c.Change, "twins")
			if exact && (c.MeanKLD > 1e-12 || c.SameTop != 1) {
				t.Errorf("%s: %s: mean KLD %g, same top %g: want none", q, c.Change, c.MeanKLD, c.SameTop)
			}
			if c.MaxKLD < c.MeanKLD {
				t.Errorf("%s: %s: max KLD %g below the mean %g", q, c.Change, c.MaxKLD, c.MeanKLD)
			}
		}
		kernelChanges := 2 // the Go twins and the go variants; no twins on a CPU running no assembly
		if slices.ContainsFunc(n.Skipped, func(s string) bool { return strings.Contains(s, "no assembly kernel") }) {
			kernelChanges = 1
		}
		if kinds["threads"] != 2 || kinds["ubatch_size"] != 2 || kinds["kernels"] != kernelChanges || n.Floor != largest {
			t.Errorf("%s: changes %+v, floor %g (largest %g)", q, n.Changes, n.Floor, largest)
		}
		t.Logf("%s: floor %.3g", q, n.Floor)
		if q == "q8_0" && (n.Floor < 5e-5 || n.Floor > 1e-3) {
			t.Errorf("q8_0: floor %g, want about 2e-4 (the go variants' activation rounding)", n.Floor)
		}
		if q == "f32" && (n.Floor <= 0 || n.Floor > 1e-5) {
			t.Errorf("f32: floor %g, want small and not 0 (the go variants sum in another order)", n.Floor)
		}
	}
	recs, _ := filepath.Glob(filepath.Join(root, "*_noise.json"))
	if len(recs) != 2 {
		t.Fatalf("noise records %v, want two", recs)
	}
	for _, f := range recs {
		r := loadReportFile(t, f)
		if r.Noise == nil || r.Record == nil || r.KLD == nil || r.KLD.MeanKLD != r.Noise.Floor {
			t.Errorf("%s: not a noise record of its largest change", f)
		}
	}
}

// TestNoiseMarks: runs against a base the noise measurement's default
// run would record share its compare group: compare marks a thread
// change with ~ and not q4_0, and ab's verdict says when B is within the
// engine's noise (and only then).
func TestNoiseMarks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "results")
	geo := sweepGeometry(t, "64", "8")
	base := filepath.Join(dir, "f32.kld")
	runNoiseJSON(t, "f32", append(geo, "--results", root, "--perplexity-kld-base-out", base)...)
	for _, a := range [][]string{
		{"--model", stories(t, "f32"), "--threads", "2"},
		{"--model", stories(t, "q4_0")},
	} {
		if code, _, stderr := runCLI(t, append(append([]string{"score", "--quiet", "--results", root, "--perplexity-kld", base}, a...), geo...)...); code != 0 {
			t.Fatalf("score %v: %s", a, stderr)
		}
	}
	code, stdout, stderr := runCLI(t, "compare", "--results", root)
	if code != 0 {
		t.Fatalf("compare: %s", stderr)
	}
	marked := map[string]bool{}
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.Contains(line, "(noise)"):
			marked["noise"] = strings.Contains(line, " ~")
		case strings.Contains(line, "stories260K-f32.gguf"):
			marked["f32"] = strings.Contains(line, " ~")
		case strings.Contains(line, "stories260K-q4_0.gguf"):
			marked["q4_0"] = strings.Contains(line, " ~")
		}
	}
	if len(marked) != 3 || !marked["f32"] || marked["q4_0"] || marked["noise"] || !strings.Contains(stdout, "noise: ") {
		t.Errorf("~ marks %v, want the f32 rerun only:\n%s", marked, stdout)
	}

	profile := func(name string, a ...string) string {
		path := filepath.Join(dir, name+".toml")
		if code, _, stderr := runCLI(t, append(append([]string{"profile", "new", name, "-o", path}, a...), geo...)...); code != 0 {
			t.Fatalf("profile new %s: %s", name, stderr)
		}
		return path
	}
	a := profile("A", "--model", stories(t, "f32"))
	for _, c := range []struct {
		b, root, compare string
		within           bool
	}{
		{profile("B", "--model", stories(t, "f32"), "--threads", "1"), root, "engine", true},
		{profile("Q", "--model", stories(t, "q8_0")), root, "models", false},
		{filepath.Join(dir, "B.toml"), filepath.Join(dir, "empty"), "engine", false}, // no noise record there
	} {
		code, stdout, stderr := runCLI(t, "ab", "--profile", a, "--profile", c.b, "--compare", c.compare, "--results", c.root, "--quiet", "--json")
		if code != 0 {
			t.Fatalf("ab %s: %s", c.b, stderr)
		}
		var res struct {
			Verdict     string `json:"verdict"`
			NoiseRecord string `json:"noise_record"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res.Verdict, "within the engine's noise"); got != c.within || (c.within && res.NoiseRecord == "") {
			t.Errorf("ab A %s (root %s): verdict %q, noise record %q", filepath.Base(c.b), filepath.Base(c.root), res.Verdict, res.NoiseRecord)
		}
	}
}
