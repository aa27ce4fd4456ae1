package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// sweepGeometry is a short protocol over the shared TinyStories text.
func sweepGeometry(t *testing.T, ctx, chunks string) []string {
	return []string{"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"),
		"--perplexity-ctx", ctx, "--perplexity-chunks", chunks, "--threads", "1"}
}

// rootRecords reads every record under root by name.
func rootRecords(t *testing.T, root string) map[string]scoring.Report {
	t.Helper()
	recs, _, err := results.Records(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]scoring.Report{}
	for _, r := range recs {
		out[r.Record.Name] = r
	}
	return out
}

// sameRecords fails unless got and want hold records of the same names
// whose reports agree in everything but timings and the folder of their
// base.
func sameRecords(t *testing.T, got, want map[string]scoring.Report) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no record %s", name)
			continue
		}
		for _, r := range []*scoring.Report{&g, &w} {
			r.KLDBaseOut = filepath.Base(r.KLDBaseOut)
			if r.KLD != nil {
				k := *r.KLD
				k.Base = filepath.Base(k.Base)
				r.KLD = &k
			}
		}
		if a, b := withoutTimings(g), withoutTimings(w); a != b {
			t.Errorf("record %s differs beyond timings:\n%s\nvs\n%s", name, a, b)
		}
	}
}

// TestSweepMatchesScore: a sweep of four stories260K files (a glob and a
// path, the base model among them left out) against the f32 base gives
// the records separate `score` runs give — every number, the record
// names, the base byte for byte — prints one compare table, a card per
// model and the chart.
func TestSweepMatchesScore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	geo := sweepGeometry(t, "64", "8")
	base := filepath.Join(dir, "base.kld")
	models := filepath.Join(filepath.Dir(stories(t, "f32")), "stories260K-q4_*.gguf")
	sweepRoot, scoreRoot := filepath.Join(dir, "sweep"), filepath.Join(dir, "score")
	args := append([]string{"sweep", "--base-model", stories(t, "f32"), "--perplexity-kld-base-out", base, "--results", sweepRoot,
		"--cards", filepath.Join(dir, "cards"), "--plot", filepath.Join(dir, "kld.svg"), "--quiet",
		models, stories(t, "q8_0"), stories(t, "f32")}, geo...)
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, "group "); n != 1 || strings.Count(stdout, "\n") != 7 {
		t.Errorf("want one table of the base and 4 models, got:\n%s", stdout)
	}
	if err := os.Rename(base, base+".sweep"); err != nil {
		t.Fatal(err)
	}

	score := func(a ...string) {
		if code, _, stderr := runCLI(t, append(append([]string{"score", "--quiet", "--results", scoreRoot}, a...), geo...)...); code != 0 {
			t.Fatalf("score %v: %s", a, stderr)
		}
	}
	score("--model", stories(t, "f32"), "--perplexity-kld-base-out", base)
	for _, q := range []string{"q4_0", "q4_1", "q4_k_m", "q8_0"} {
		score("--model", stories(t, q), "--perplexity-kld", base)
	}
	want := rootRecords(t, scoreRoot)
	sameRecords(t, rootRecords(t, sweepRoot), want)
	a, _ := os.ReadFile(base + ".sweep")
	b, _ := os.ReadFile(base)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the sweep's base (%d bytes) is not score's (%d bytes)", len(a), len(b))
	}
	for name := range want {
		if _, err := os.Stat(filepath.Join(dir, "cards", name+".md")); err != nil {
			t.Errorf("card: %v", err)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "kld.svg")); err != nil || !bytes.Contains(svg, []byte("stories260K-q4_k_m")) {
		t.Errorf("chart: %v", err)
	}
}

// TestSweepResumeAfterSIGKILL kills a sweep with SIGKILL in the middle of
// its second model, resumes it, and checks that the finished model was
// skipped (its record untouched), the interrupted one resumed from its
// journal, and every record is an uninterrupted sweep's.
func TestSweepResumeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := func(root string) []string {
		return append([]string{"sweep", "--base", stories(t, "f32"), "--perplexity-kld-base-out", filepath.Join(root, "b.kld"),
			"--results", root, stories(t, "q8_0"), stories(t, "q4_0"), stories(t, "q4_1")}, sweepGeometry(t, "256", "20")...)
	}
	ref, root := filepath.Join(dir, "ref"), filepath.Join(dir, "killed")
	if code, _, stderr := runCLI(t, append(args(ref), "--quiet")...); code != 0 {
		t.Fatalf("uninterrupted sweep: %s", stderr)
	}

	jp := filepath.Join(root, "b.kld.stories260K-q4-0.journal")
	kill := 1 + rand.IntN(18)
	child := startChild(t, append(args(root), "--quiet"))
	if !child.waitJournal(t, jp, kill) {
		t.Fatalf("the child ended before the second model's window %d", kill)
	}
	child.signal(syscall.SIGKILL)
	n, err := scoring.JournalWindows(jp)
	if err != nil || n < kill || n >= 20 {
		t.Fatalf("journal after the kill: %d windows, %v", n, err)
	}
	done := rootRecords(t, root)
	if len(done) != 2 {
		t.Fatalf("%d records after the kill, want the base model's and q8_0's", len(done))
	}
	var q8 string
	for name := range done {
		if strings.HasPrefix(name, "stories260K-q8-0") {
			q8 = filepath.Join(root, name+".json")
		}
	}
	before, err := os.Stat(q8)
	if err != nil {
		t.Fatalf("q8_0's record: %v", err)
	}
	t.Logf("killed with %d windows of q4_0 journaled", n)

	code, stdout, stderr := runCLI(t, append(args(root), "--quiet")...)
	if code == 0 || stdout != "" || !strings.Contains(stderr, "--resume") {
		t.Errorf("a rerun without --resume over the journal: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, append(args(root), "--resume")...)
	if code != 0 {
		t.Fatalf("resumed sweep: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"stories260K-q8_0.gguf: already recorded", "resumed: " + strconv.Itoa(n) + " of 20 windows taken from the journal"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if after, err := os.Stat(q8); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("q8_0's record was rewritten (%v)", err)
	}
	if strings.Count(stdout, "group ") != 1 {
		t.Errorf("want one table:\n%s", stdout)
	}
	sameRecords(t, rootRecords(t, root), rootRecords(t, ref))
	noTemps(t, root)
	if js, _ := filepath.Glob(filepath.Join(root, "*.journal")); len(js) > 0 {
		t.Errorf("journals left: %v", js)
	}
}

// TestSweepBadInput: bad sweeps end before any model loads with one line
// on stderr naming the problem and nothing on stdout or in the root.
func TestSweepBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	other := filepath.Join(dir, "stories260K-q8_0.gguf")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{stories(t, "q8_0")}, "--base-model MODEL.gguf is required"},
		{[]string{"--base-model", stories(t, "f32")}, "give the models to compare"},
		{[]string{"--base", stories(t, "f32"), stories(t, "f32")}, "give the models to compare"},
		{[]string{"--base", stories(t, "f32"), filepath.Join(dir, "*.none")}, "matches no file"},
		{[]string{"--base", stories(t, "f32"), filepath.Join(dir, "missing.gguf")}, "missing.gguf: no such file"},
		{[]string{"--base", stories(t, "f32"), stories(t, "q8_0"), other}, "share a file name"},
		{[]string{"--base", stories(t, "f32"), stories(t, "q8_0"), "--plot", filepath.Join(dir, "k.txt")}, "--plot"},
		{[]string{"--base", stories(t, "f32"), stories(t, "q8_0"), "--format", "xml"}, `--format "xml"`},
	} {
		code, stdout, stderr := runCLI(t, append(append([]string{"sweep", "--results", root}, c.args...), "--quiet")...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("sweep %v: exit %d, stdout %q, stderr %q: want one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	if ents, _ := os.ReadDir(root); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !e.IsDir() }) {
		t.Errorf("bad sweeps wrote %v", ents)
	}
}

// TestSweepProfile: a profile's [sweep] table (paths relative to the
// profile, a glob among them) runs the sweep `sweep --base … MODELS`
// runs with the same settings: the same records, number for number.
func TestSweepProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.Mkdir(models, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"f32", "q8_0", "q4_0"} {
		if err := os.Symlink(stories(t, q), filepath.Join(models, filepath.Base(stories(t, q)))); err != nil {
			t.Fatal(err)
		}
	}
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	prof := filepath.Join(dir, "quants.toml")
	if err := os.WriteFile(prof, []byte("name = \"quants\"\ntext = \""+text+"\"\nctx = 64\nchunks = 6\nthreads = 1\n"+
		"[sweep]\nbase = \"models/stories260K-f32.gguf\"\nmodels = [\"models/stories260K-q8_*.gguf\", \"models/stories260K-q4_0.gguf\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromProfile, fromFlags := filepath.Join(dir, "p"), filepath.Join(dir, "f")
	code, stdout, stderr := runCLI(t, "sweep", "--profile", prof, "--results", fromProfile, "--quiet")
	if code != 0 {
		t.Fatalf("sweep --profile: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "stories260K-q8_0") || !strings.Contains(stdout, "stories260K-q4_0") {
		t.Errorf("the compare table lacks the models:\n%s", stdout)
	}
	code, _, stderr = runCLI(t, "sweep", "--profile", prof, "--results", fromFlags, "--quiet",
		"--base", filepath.Join(models, "stories260K-f32.gguf"),
		filepath.Join(models, "stories260K-q8_0.gguf"), filepath.Join(models, "stories260K-q4_0.gguf"))
	if code != 0 {
		t.Fatalf("sweep --base: exit %d: %s", code, stderr)
	}
	got, want := rootRecords(t, fromProfile), rootRecords(t, fromFlags)
	if len(got) != 3 {
		t.Fatalf("%d records, want the base model's and two", len(got))
	}
	sameRecords(t, got, want)
	// --model beside a [sweep] table is refused, naming both.
	code, _, stderr = runCLI(t, "sweep", "--profile", prof, "--model", stories(t, "q8_0"), "--results", fromFlags, "--quiet")
	if code == 0 || !strings.Contains(stderr, "set beside [sweep]") {
		t.Errorf("sweep --profile --model: exit %d, %s", code, stderr)
	}
}

// TestTUISweep: `tui --sweep BASE MODELS` and `tui --profile SWEEP.toml`
// build the sweep `plexbench sweep` builds from the same flags, and bad
// combinations are one line each, before the terminal check.
func TestTUISweep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	args := []string{"--perplexity", text, "--perplexity-ctx", "64", "--results", root}
	build := func(cmd string, a ...string) workbench.SweepJob {
		t.Helper()
		c, _, _ := testCLI(t, nil)
		fs := pflag.NewFlagSet(cmd, pflag.ContinueOnError)
		p := profiles.Default()
		p.BindFlags(fs)
		var x sweepFlags
		fs.StringVar(&x.base, "sweep", "", "")
		fs.StringVar(&x.results, "results", "", "")
		if err := fs.Parse(append(slices.Clone(args), a...)); err != nil {
			t.Fatalf("flags %v: %v", a, err)
		}
		pos := fs.Args()
		var sj *workbench.SweepJob
		var err error
		if cmd == "tui" {
			sj, err = c.tuiSweep(fs, p, nil, pos, x.base, x.results, "", false)
		} else {
			var j workbench.SweepJob
			j, err = c.sweepJob(fs, p, sweepFlags{base: x.base, results: x.results, quiet: true, format: "table"}, workbench.Job{}, pos)
			sj = &j
		}
		if err != nil || sj == nil {
			t.Fatalf("%s %v: %v", cmd, a, err)
		}
		sj.Progress = nil
		return *sj
	}
	tj := build("tui", "--sweep", stories(t, "f32"), stories(t, "q8_0"), "--perplexity-chunks", "4", stories(t, "q4_0"))
	sj := build("sweep", "--sweep", stories(t, "f32"), stories(t, "q8_0"), "--perplexity-chunks", "4", stories(t, "q4_0"))
	if !reflect.DeepEqual(tj, sj) {
		t.Errorf("tui's sweep:\n%+v\nsweep's:\n%+v", tj, sj)
	}
	if tj.Job.Profile.Chunks != 4 || len(tj.Models) != 2 || tj.Root != root {
		t.Errorf("tui's sweep: %+v", tj)
	}

	prof := filepath.Join(dir, "s.toml")
	os.WriteFile(prof, []byte("name = \"s\"\n[sweep]\nbase = \""+stories(t, "f32")+"\"\nmodels = [\""+stories(t, "q8_0")+"\"]\n"), 0o644)
	plain := filepath.Join(dir, "p.toml")
	os.WriteFile(plain, []byte("name = \"p\"\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", stories(t, "f32")}, "give the models to compare"},
		{[]string{stories(t, "q8_0")}, `unexpected argument`},
		{[]string{"--resume"}, "--resume continues a sweep"},
		{[]string{"--sweep", stories(t, "f32"), "--base", filepath.Join(dir, "x.kld"), stories(t, "q8_0")}, "a sweep records its own"},
		{[]string{"--profile", prof, "--profile", plain}, "a sweep takes one profile"},
		{[]string{"--profile", prof, "--model", stories(t, "q4_0")}, "set beside [sweep]"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"tui", "--results", root}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || code == 2 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("tui %v: exit %d, stdout %q, stderr %q: want one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	// A good sweep gets as far as the terminal check.
	if code, _, stderr := runCLI(t, "tui", "--results", root, "--profile", prof); code != 2 || !strings.Contains(stderr, "not a terminal") {
		t.Errorf("tui --profile SWEEP on a pipe: exit %d, %s", code, stderr)
	}
}

// TestSweepProfileElsewhere: score and ab refuse a sweep's profile (it
// names no one model) in one line, instead of scoring the demo model.
func TestSweepProfileElsewhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prof := filepath.Join(dir, "s.toml")
	os.WriteFile(prof, []byte("name = \"s\"\n[sweep]\nbase = \""+stories(t, "f32")+"\"\nmodels = [\""+stories(t, "q8_0")+"\"]\n"), 0o644)
	for _, args := range [][]string{
		{"score", "--profile", prof, "--perplexity-output", filepath.Join(dir, "r.json")},
		{"ab", "--profile", prof, "--profile", prof, "--results", dir},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "holds a [sweep] table") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
