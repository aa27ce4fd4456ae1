package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
)

// cutText writes the first whole lines of the shared text file within n
// bytes to dir/name, and returns the path.
func cutText(t *testing.T, dir, name string, n int, file ...string) string {
	t.Helper()
	data, err := os.ReadFile(shareddata.Path(t, file...))
	if err != nil {
		t.Fatal(err)
	}
	data = data[:min(n, len(data))]
	data = data[:bytes.LastIndexByte(data, '\n')+1]
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// untimed is a report's JSON as a generic value without what depends on
// the clock: elapsed times, rates, window seconds, record times.
func untimed(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"elapsed_seconds", "prefill_tokens_per_second", "progress_held_seconds"} {
		delete(m, k)
	}
	if ws, ok := m["windows"].([]any); ok {
		for _, w := range ws {
			delete(w.(map[string]any), "seconds")
		}
	}
	if rec, ok := m["record"].(map[string]any); ok {
		for _, k := range []string{"started", "finished", "wall_seconds"} {
			delete(rec, k)
		}
	}
	return m
}

// TestCorpora scores two texts, a TinyStories cut and a wikitext-2 cut, in
// one run: each section is the report the text's own run gives (figures,
// windows, record), the averages are those of the separate runs, the
// record expands into one compare group per text, a profile's corpora
// list runs the same, and what several corpora cannot do is refused.
func TestCorpora(t *testing.T) {
	t.Parallel()
	dir, root := t.TempDir(), t.TempDir()
	env := map[string]string{results.EnvRoot: root}
	ts := cutText(t, dir, "ts.txt", 4096, "tinystories", "tinystories-16k.txt")
	wiki := cutText(t, dir, "wiki.txt", 4096, "wikitext-2-raw", "wiki.test.raw")
	f32, q8 := stories(t, "f32"), stories(t, "q8_0")
	geometry := []string{"--perplexity-ctx", "64", "--kv-cache-dtype", "f32"}
	score := func(out string, args ...string) scoring.Report {
		t.Helper()
		path := filepath.Join(dir, out)
		all := append([]string{"score", "--quiet", "--perplexity-output", path}, append(args, geometry...)...)
		if code, _, stderr := runCLIEnv(t, env, all...); code != 0 {
			t.Fatalf("score %q: exit %d: %s", args, code, stderr)
		}
		rep, ok, err := scoring.ReadRecord(path)
		if err != nil || !ok {
			t.Fatalf("%s: %v (record %v)", out, err, ok)
		}
		return rep
	}
	multi := score("multi.json", "--model", f32, "--perplexity", ts, "--perplexity", wiki)
	single := []scoring.Report{score("ts.json", "--model", f32, "--perplexity", ts), score("wiki.json", "--model", f32, "--perplexity", wiki)}

	if len(multi.Corpora) != 2 || multi.Record == nil || multi.CorporaAverage == nil {
		t.Fatalf("multi-corpus report: %d corpora, record %v", len(multi.Corpora), multi.Record)
	}
	for i := range single {
		got, want := untimed(t, multi.Corpora[i]), untimed(t, single[i])
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.MarshalIndent(got, "", " ")
			wj, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("corpus %d differs from its own run:\n%s\nwant\n%s", i+1, gj, wj)
		}
		if s := &multi.Corpora[i]; s.Perplexity <= 1 || len(s.Windows) < 10 || s.TextBytes <= 0 {
			t.Fatalf("corpus %d: PPL %v over %d windows, %d bytes", i+1, s.Perplexity, len(s.Windows), s.TextBytes)
		}
	}
	if multi.Corpora[0].Text != ts || multi.Corpora[1].Text != wiki {
		t.Fatalf("corpora in order %q, %q", multi.Corpora[0].Text, multi.Corpora[1].Text)
	}

	// The averages, recomputed from the separate runs' reports.
	var nll, macroPPL, macroBPB float64
	var tokens int
	var textBytes int64
	for _, r := range single {
		nll += r.MeanNLL * float64(r.ScoredTokens)
		tokens += r.ScoredTokens
		textBytes += r.TextBytes
		macroPPL += r.Perplexity / 2
		macroBPB += r.BitsPerByte / 2
	}
	tw, macro := multi.CorporaAverage.TokenWeighted, multi.CorporaAverage.Macro
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if tw.Tokens != tokens || tw.TextBytes != textBytes || !near(tw.MeanNLL, nll/float64(tokens)) ||
		!near(tw.Perplexity, math.Exp(nll/float64(tokens))) || !near(tw.BitsPerByte, nll/(math.Ln2*float64(textBytes))) {
		t.Errorf("token-weighted %+v; want %d tokens, %d bytes, mean NLL %v", tw, tokens, textBytes, nll/float64(tokens))
	}
	if macro.Corpora != 2 || !near(macro.Perplexity, macroPPL) || !near(macro.BitsPerByte, macroBPB) {
		t.Errorf("macro %+v; want PPL %v, bits per byte %v", macro, macroPPL, macroBPB)
	}
	if tw.Perplexity <= min(single[0].Perplexity, single[1].Perplexity) || tw.Perplexity >= macro.Perplexity {
		t.Errorf("token-weighted PPL %v outside (%v, macro %v)", tw.Perplexity, min(single[0].Perplexity, single[1].Perplexity), macro.Perplexity)
	}

	// The top level has no perplexity of its own.
	raw, _ := os.ReadFile(filepath.Join(dir, "multi.json"))
	var top map[string]json.RawMessage
	json.Unmarshal(raw, &top)
	for _, k := range []string{"perplexity", "mean_nll", "tokens", "bits_per_byte", "windows", "text"} {
		if _, ok := top[k]; ok {
			t.Errorf("multi-corpus report has a top-level %q", k)
		}
	}
	for _, k := range []string{"object", "method", "ctx", "config", "corpora", "corpora_average", "record"} {
		if _, ok := top[k]; !ok {
			t.Errorf("multi-corpus report lacks %q", k)
		}
	}

	// A profile's corpora list runs the same.
	prof := filepath.Join(dir, "two.toml")
	os.WriteFile(prof, []byte("name = \"two\"\nmodel = \""+f32+"\"\ncorpora = [\"ts.txt\", \"wiki.txt\"]\n"), 0o644)
	fromProfile := score("profile.json", "--profile", prof)
	if len(fromProfile.Corpora) != 2 {
		t.Fatalf("profile corpora: %d corpora", len(fromProfile.Corpora))
	}
	for i := range single {
		got, want := untimed(t, fromProfile.Corpora[i]), untimed(t, single[i])
		delete(got["record"].(map[string]any), "profile") // the profile's name
		delete(want["record"].(map[string]any), "profile")
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("profile corpus %d differs from its own run:\n%v\nwant\n%v", i+1, got, want)
		}
	}

	// Another model's run of both: compare gives one group per text, each
	// with both models; the f32 rows are the multi-corpus record's.
	score("multi-q8.json", "--model", q8, "--perplexity", ts, "--perplexity", wiki)
	os.Remove(filepath.Join(root, single[0].Record.Name+".json")) // ts.txt's f32 row is then the multi record's
	out := compareJSON(t, env)
	if len(out.Groups) != 2 {
		t.Fatalf("%d compare groups, want one per text", len(out.Groups))
	}
	byText := map[string]results.CompareGroup{}
	for _, g := range out.Groups {
		byText[g.Protocol.Text] = g
	}
	for i, text := range []string{"ts.txt", "wiki.txt"} {
		g, ok := byText[text]
		var models []string
		for _, r := range g.Rows {
			models = append(models, r.Model)
		}
		slices.Sort(models)
		if !ok || g.Protocol.TokenIDsSHA256 != single[i].TokenIDsSHA256 || strings.Join(models, " ") != "stories260K-f32.gguf stories260K-q8_0.gguf" {
			t.Fatalf("group of %s: %+v, models %v", text, g.Protocol, models)
		}
		for _, r := range g.Rows {
			if r.Model == "stories260K-f32.gguf" && (r.PPL != multi.Corpora[i].Perplexity || r.Record != multi.Corpora[i].Record.Name) {
				t.Errorf("%s: f32 row PPL %v record %s, want the section's %v %s", text, r.PPL, r.Record, multi.Corpora[i].Perplexity, multi.Corpora[i].Record.Name)
			}
		}
	}

	// A card lists each corpus and the averages.
	code, card, stderr := runCLIEnv(t, env, "card", filepath.Join(root, multi.Record.Name+".json"))
	if code != 0 || !strings.Contains(card, "| ts.txt | ") || !strings.Contains(card, "| wiki.txt | ") ||
		!strings.Contains(card, "| token-weighted | ") || !strings.Contains(card, "--perplexity ts.txt --perplexity wiki.txt") {
		t.Fatalf("card: exit %d %s\n%s", code, stderr, card)
	}

	// Progress names the corpus being scored; the last line gives the averages.
	code, _, stderr = runCLIEnv(t, env, "score", "--model", f32, "--perplexity", ts, "--perplexity", wiki, "--perplexity-chunks", "2",
		"--perplexity-ctx", "64", "--perplexity-output", filepath.Join(dir, "p.json"))
	if code != 0 || !strings.Contains(stderr, "plexbench: corpus 1/2 ts.txt: chunks, ctx 64") ||
		!strings.Contains(stderr, "corpus 2/2 wiki.txt: window 2/2") || !strings.Contains(stderr, "plexbench: 2 corpora: token-weighted PPL ") {
		t.Errorf("progress: exit %d\n%s", code, stderr)
	}

	// What several corpora cannot do is refused in one line, before the model loads.
	base := filepath.Join(dir, "b.kld")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--perplexity-kld-base-out", base}, "--perplexity-kld-base-out"},
		{[]string{"--perplexity-kld", base}, "--perplexity-kld"},
		{[]string{"--resume", "--perplexity-output", filepath.Join(dir, "r.json")}, "--resume"},
		{[]string{"--perplexity-shard", "0/2"}, "--perplexity-shard"},
		{[]string{"--stop-at-precision", "0.1"}, "stopping rule"},
	} {
		args := append([]string{"score", "--model", f32, "--perplexity", ts, "--perplexity", wiki}, c.args...)
		code, stdout, stderr := runCLIEnv(t, env, args...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "2 corpora") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
	}
	both := filepath.Join(dir, "both.toml")
	os.WriteFile(both, []byte("name = \"both\"\ntext = \"ts.txt\"\ncorpora = [\"ts.txt\", \"wiki.txt\"]\n"), 0o644)
	if code, _, stderr := runCLIEnv(t, env, "score", "--profile", both); code == 0 || !strings.Contains(stderr, "both text and corpora are set") {
		t.Errorf("text beside corpora: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLIEnv(t, env, "ab", "--profile", prof, "--profile", prof); code == 0 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "2 corpora: only plexbench score") {
		t.Errorf("ab of corpora profiles: exit %d, %q", code, stderr)
	}
}
