package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/results"
	"plexbench/scoring"
)

// recordOf is the path of the record the results root holds for the
// model file stem (one run of it).
func recordOf(t *testing.T, root, model string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, model+"_*.json"))
	if len(m) != 1 {
		t.Fatalf("records of %s in %s: %v", model, root, m)
	}
	return m[0]
}

// TestWorst: `worst` lists a comparison's tokens as JSON (the issue's
// fields, ranked) and as the lines scoring draws; a run without a base
// ranks by NLL and refuses --by kld; a record without its trace is
// refused in one line.
func TestWorst(t *testing.T) {
	t.Parallel()
	f := newRecordsFixture(t, "8", "q4_0")
	rec := recordOf(t, f.root, "stories260K-q4-0")
	code, stdout, stderr := runCLIEnv(t, f.env, "worst", rec, "-n", "5", "--json")
	if code != 0 {
		t.Fatalf("worst --json: %s", stderr)
	}
	var raw struct {
		Tokens  []map[string]any `json:"tokens"`
		Windows []map[string]any `json:"windows"`
	}
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil || len(raw.Tokens) != 5 || len(raw.Windows) != 5 {
		t.Fatalf("worst --json: %v, %d tokens, %d windows:\n%s", err, len(raw.Tokens), len(raw.Windows), stdout)
	}
	for _, k := range []string{"window", "position", "kld", "nll", "delta_p", "token", "base_top", "run_top", "text_before", "text_after"} {
		if _, ok := raw.Tokens[0][k]; !ok {
			t.Errorf("token without %q: %v", k, raw.Tokens[0])
		}
	}
	var l scoring.WorstList
	json.Unmarshal([]byte(stdout), &l)
	for i := 1; i < len(l.Tokens); i++ {
		if *l.Tokens[i].KLD > *l.Tokens[i-1].KLD {
			t.Errorf("token %d's KLD %v above the one before", i, *l.Tokens[i].KLD)
		}
	}
	code, stdout, _ = runCLIEnv(t, f.env, "worst", rec, "-n", "5")
	if want := strings.Join(scoring.WorstLines(l, false), "\n"); code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("worst lines:\n%s\nwant\n%s", stdout, want)
	}
	// By the record's name (as sweep prints it), looked up in the root.
	name := strings.TrimSuffix(filepath.Base(rec), ".json")
	code, byName, stderr := runCLIEnv(t, f.env, "worst", name, "--results", f.root, "-n", "5")
	if code != 0 || byName != stdout {
		t.Errorf("worst %s --results: exit %d, %s\n%s", name, code, stderr, byName)
	}
	if code, _, stderr := runCLIEnv(t, f.env, "worst", "no-such-record", "--results", f.root); code == 0 || !strings.Contains(stderr, "no record of that name in "+f.root) {
		t.Errorf("worst of an unknown name: exit %d, %s", code, stderr)
	}

	plain := recordOf(t, f.root, "stories260K-f32")
	code, stdout, stderr = runCLIEnv(t, f.env, "worst", plain, "-n", "3", "--json")
	if json.Unmarshal([]byte(stdout), &l); code != 0 || len(l.Tokens) != 3 || l.Tokens[0].KLD != nil || !strings.Contains(stderr, "ranked by NLL") {
		t.Errorf("worst of a run without a base: exit %d, %s\n%s", code, stderr, stdout)
	}
	old := filepath.Join(t.TempDir(), "old.json")
	data, _ := os.ReadFile(rec)
	os.WriteFile(old, data, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"worst", plain, "--by", "kld"}, "--by kld needs a comparison"},
		{[]string{"worst", rec, "--by", "ppl"}, `--by "ppl"`},
		{[]string{"worst", old}, "no token trace"},
		{[]string{"worst", f.base}, "not JSON"},
	} {
		code, stdout, stderr := runCLIEnv(t, f.env, c.args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want one line with %q", c.args, code, stdout, stderr, c.want)
		}
	}
	if _, err := results.ReadTrace(rec, new(scoring.Report)); err == nil {
		t.Error("a trace read against an empty report")
	}
}
