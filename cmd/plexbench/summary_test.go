package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"plexbench/scoring"
)

// demoArgs is `make demo`'s command line as the Makefile gives it
// (DEMO_ARGS), its report written to report instead of DEMO_REPORT.
func demoArgs(t *testing.T, report string) []string {
	t.Helper()
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DEMO_ARGS\s*:=\s*(.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no DEMO_ARGS")
	}
	return strings.Fields(strings.ReplaceAll(string(m[1]), "$(DEMO_REPORT)", report))
}

// TestDemoSummary: `make demo` (its command, in process, stdout not a
// terminal) prints a few lines — model, text, windows, PPL ±, speed and
// where the report went — and writes the JSON report to the file; stdout
// and stderr together stay under 30 lines, with no warning (the demo runs
// at the model's trained context).
func TestDemoSummary(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "demo-report.json")
	code, stdout, stderr := runCLI(t, demoArgs(t, report)...)
	if code != 0 {
		t.Fatalf("make demo: exit %d, stderr %q", code, stderr)
	}
	rep, err := readReport(report)
	if err != nil {
		t.Fatalf("make demo's report: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) > 8 || len(lines)+strings.Count(stderr, "\n") > 30 || strings.Contains(stderr, "warning") {
		t.Fatalf("make demo: %d summary lines, stderr %q:\n%s", len(lines), stderr, stdout)
	}
	want := []string{
		"model    stories260K-f32.gguf, the embedded demo (llama, ",
		"text     tinystories-100k.txt (",
		fmt.Sprintf("windows  %d of %d, chunks ctx 128", rep.WindowsScored, rep.WindowsTotal),
		"PPL      " + scoring.PM(rep.Perplexity, rep.PerplexityUncertainty) + " (",
		"speed    ",
		"report   " + report,
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Fatalf("make demo's summary, line %d: want it to begin %q:\n%s", i+1, w, stdout)
		}
	}
	if strings.Contains(stdout, "{") {
		t.Fatalf("make demo printed JSON:\n%s", stdout)
	}
}
