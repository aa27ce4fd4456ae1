package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
)

// observed wraps the real app model and publishes each view it renders
// after an update, so a test can wait on what the screen says without
// parsing the renderer's incremental terminal output.
type observed struct {
	m   tea.Model
	obs *observer
}

type observer struct {
	mu     sync.Mutex
	screen string
	notify chan struct{}
}

func (o observed) Init() tea.Cmd { return o.m.Init() }

func (o observed) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	o.m, cmd = o.m.Update(msg)
	s := stripANSI(o.m.View().Content)
	o.obs.mu.Lock()
	o.obs.screen = s
	o.obs.mu.Unlock()
	select {
	case o.obs.notify <- struct{}{}:
	default:
	}
	return o, cmd
}

func (o observed) View() tea.View { return o.m.View() }

// waitScreen waits until the screen satisfies cond.
func (o *observer) waitScreen(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		o.mu.Lock()
		s := o.screen
		o.mu.Unlock()
		if cond(s) {
			return
		}
		select {
		case <-o.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
	}
}

func press(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Text: string(r)} }

// TestEndToEndStop drives the real app in a bubbletea program: progress
// arrives, q stops the run after the window in flight, and the partial
// report saved in the results folder says partial with the windows done;
// asked to keep bases (--keep-base), it keeps its partial base beside it.
func TestEndToEndStop(t *testing.T) {
	dir := t.TempDir()
	steps, waiting := make(chan struct{}), make(chan struct{})
	p := profiles.Default()
	p.Name, p.Ctx, p.KVCacheDType = "e2e", 64, "f32"
	app, err := New(Config{
		Profiles:   []profiles.Profile{p},
		ResultsDir: dir,
		KeepBases:  true,
		Runner:     fakeRunner{text: fakeText(64 * 20), step: steps, waiting: waiting},
		NoColor:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	obs := &observer{notify: make(chan struct{}, 1)}
	tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(80, 24))

	// Let three windows through; each prefill waits for a step.
	for range 3 {
		<-waiting
		steps <- struct{}{}
	}
	obs.waitScreen(t, "3 windows done", func(s string) bool { return strings.Contains(s, "3/20 windows") })
	<-waiting // the fourth window's prefill has started
	if s := obs.screen; !strings.Contains(s, "RUNNING") || !strings.Contains(s, "PPL") {
		t.Fatalf("running screen lacks its state:\n%s", s)
	}

	// The fourth window is in flight (waiting for its step) when q arrives.
	tm.Send(press('q'))
	obs.waitScreen(t, "stopping", func(s string) bool { return strings.Contains(s, "STOPPING") })
	steps <- struct{}{}
	obs.waitScreen(t, "the partial report saved", func(s string) bool { return strings.Contains(s, "partial report saved") })

	// Not running any more: q quits.
	tm.Send(press('q'))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	reports, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(reports) != 1 {
		t.Fatalf("results folder holds %v, want one report", reports)
	}
	data, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep scoring.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.Unmarshal(data, &raw)
	if raw["partial"] != true {
		t.Errorf("report partial = %v, want true", raw["partial"])
	}
	if rep.WindowsScored != 4 || len(rep.Windows) != 4 || rep.WindowsTotal != 20 {
		t.Errorf("report: %d of %d windows scored, %d in the array; want 4 of 20, 4", rep.WindowsScored, rep.WindowsTotal, len(rep.Windows))
	}
	if rep.ScoredTokens != 4*(64-32-1) {
		t.Errorf("scored %d tokens, want %d", rep.ScoredTokens, 4*(64-32-1))
	}
	// The profile it ran is saved beside it and loads back the same.
	q, err := profiles.Load(strings.TrimSuffix(reports[0], ".json") + ".toml")
	if err != nil {
		t.Fatal(err)
	}
	if d := profiles.Diff(p, q); len(d) != 0 {
		t.Errorf("saved profile differs: %v", d)
	}
	// A stopped run keeps its complete windows as a partial base.
	kld, _ := filepath.Glob(filepath.Join(dir, "*.kld"))
	if len(kld) != 1 {
		t.Fatalf("bases: %v", kld)
	}
	if b, err := scoring.OpenBase(kld[0]); err != nil || !b.Header.Partial() || b.Header.Windows != 4 {
		t.Errorf("partial base: %v", err)
	} else {
		b.Close()
	}
	// And history lists it.
	h, err := results.History(dir)
	if err != nil || len(h) != 1 || !h[0].Run.Partial || !h[0].HasProfile {
		t.Errorf("history: %+v, %v", h, err)
	}
}

// TestEndToEndAB runs a whole A/B in a program: A records a base (a
// temporary one: the app keeps no bases unless asked), B is scored
// against it, and the A/B summary lands beside the reports.
func TestEndToEndAB(t *testing.T) {
	dir := t.TempDir()
	a, b := abProfiles()
	a.Model, a.Text, b.Model, b.Text = "", "", "", ""
	app, err := New(Config{Profiles: []profiles.Profile{a, b}, ResultsDir: dir,
		Runner: fakeRunner{text: fakeText(64 * 12)}, NoColor: true})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	obs := &observer{notify: make(chan struct{}, 1)}
	tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
	obs.waitScreen(t, "the A/B summary saved", func(s string) bool { return strings.Contains(s, ".ab.json") })
	s := obs.screen
	for _, want := range []string{"verdict", "ΔPPL B−A", "paired over 12 windows", "kv_cache_dtype f32 → f16"} {
		if !strings.Contains(s, want) {
			t.Errorf("A/B screen lacks %q:\n%s", want, s)
		}
	}
	tm.Send(press('q'))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	pf := onlySummary(t, dir)
	if pf.Object != results.ABObject || pf.Comparison.Windows != 12 || pf.Comparison.KLD == nil || pf.Verdict == "" {
		t.Errorf("A/B summary: %+v", pf)
	}
	// B's report compares against A's base, which lives in a temporary
	// folder until the app closes: the results folder keeps no base.
	var rb scoring.Report
	data, _ := os.ReadFile(pf.B.Report)
	if err := json.Unmarshal(data, &rb); err != nil || rb.KLD == nil {
		t.Fatalf("B's report: %v, kld %v", err, rb.KLD)
	}
	if _, err := os.Stat(rb.KLD.Base); err != nil {
		t.Errorf("A's base: %v", err)
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, "*.kld")); len(kept) != 0 || strings.HasPrefix(rb.KLD.Base, dir) {
		t.Errorf("bases kept in the results folder: %v; B compared against %s", kept, rb.KLD.Base)
	}
	app.Close()
	if _, err := os.Stat(rb.KLD.Base); !os.IsNotExist(err) {
		t.Errorf("A's temporary base after Close: %v", err)
	}
	// The summary's ΔPPL agrees with the two reports' perplexities: chunks
	// windows all score the same count, so the paired mean is exact.
	var ra scoring.Report
	data, _ = os.ReadFile(pf.A.Report)
	json.Unmarshal(data, &ra)
	want := 100 * (rb.Perplexity/ra.Perplexity - 1)
	if got := pf.Comparison.DeltaPPLPercent; abs(got-want) > 1e-9*max(1, abs(want)) {
		t.Errorf("ΔPPL%% %v, reports say %v", got, want)
	}
	// What the view showed is what `plexbench ab A.json B.json` computes
	// from the two saved reports: the same figures and the same verdict.
	c := scoring.ComparePaired(ra.Windows, rb.Windows)
	c.KLD = rb.KLD.Summary()
	if c.Verdict() != pf.Verdict || c.Windows != pf.Comparison.Windows || *c.KLD != *pf.Comparison.KLD ||
		c.DeltaMeanNLL != pf.Comparison.DeltaMeanNLL || c.DeltaMeanNLLUncertainty != pf.Comparison.DeltaMeanNLLUncertainty ||
		c.SpeedRatio != pf.Comparison.SpeedRatio {
		t.Errorf("from the reports %+v %q,\nthe view's %+v %q", c, c.Verdict(), pf.Comparison, pf.Verdict)
	}
}

// onlySummary reads the one A/B summary saved in dir.
func onlySummary(t *testing.T, dir string) results.ABSummary {
	t.Helper()
	pairs, _ := filepath.Glob(filepath.Join(dir, "*.ab.json"))
	if len(pairs) != 1 {
		t.Fatalf("A/B summaries: %v, want one", pairs)
	}
	var pf results.ABSummary
	data, _ := os.ReadFile(pairs[0])
	if err := json.Unmarshal(data, &pf); err != nil {
		t.Fatal(err)
	}
	return pf
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestEndToEndABCtrlC: ctrl+c during run A, and during run B, stops the
// run after its window, saves its partial report and the A/B summary, and
// only then ends the program.
func TestEndToEndABCtrlC(t *testing.T) {
	for _, during := range []string{"A", "B"} {
		t.Run(during, func(t *testing.T) {
			dir := t.TempDir()
			steps := make(chan struct{})
			a, b := abProfiles()
			a.Model, a.Text, b.Model, b.Text = "", "", "", ""
			app, err := New(Config{Profiles: []profiles.Profile{a, b}, ResultsDir: dir,
				Runner: fakeRunner{text: fakeText(64 * 12), step: steps}, NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
			windows := 3 // of A's 12
			if during == "B" {
				windows = 12 + 3
			}
			for range windows {
				steps <- struct{}{}
			}
			want := "3/12 windows"
			obs.waitScreen(t, during+" at "+want, func(s string) bool { return strings.Contains(s, want) })
			if during == "B" {
				obs.waitScreen(t, "B running", func(s string) bool { return strings.Count(s, "12/12") >= 1 && strings.Contains(s, "3/12") })
			}
			// The next window is in flight when ctrl+c arrives.
			tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
			obs.waitScreen(t, "stopping", func(s string) bool { return strings.Contains(s, "STOPPING") })
			steps <- struct{}{}
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

			pf := onlySummary(t, dir)
			if pf.Object != results.ABObject || !pf.Partial || pf.A.Report == "" || pf.Verdict == "" {
				t.Errorf("A/B summary: %+v", pf)
			}
			if during == "A" && (pf.B.Report != "" || pf.Comparison.Windows != 0) {
				t.Errorf("B never ran, yet the summary says %+v", pf)
			}
			if during == "B" && (pf.B.Report == "" || pf.Comparison.Windows != 4) {
				t.Errorf("summary pairs %d windows, want B's 4: %+v", pf.Comparison.Windows, pf)
			}
			reports, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			if want := map[string]int{"A": 2, "B": 3}[during]; len(reports) != want {
				t.Errorf("results folder holds %v, want %d json files", reports, want)
			}
		})
	}
}

// TestEndToEndStopRule: a profile's precision rule shows its interval and
// the windows it still needs; met, it stops the run and the chart marks
// the window; with c pressed before, the run goes on to its last window,
// saying where the rule was met, and the report keeps that moment.
func TestEndToEndStopRule(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "stops", true: "keeps going"}[keep], func(t *testing.T) {
			dir := t.TempDir()
			steps := make(chan struct{})
			p := profiles.Default()
			p.Name, p.Ctx, p.KVCacheDType = "rule", 64, "f32"
			p.StopAtPrecision, p.StopMinWindows = 0.2, 3
			app, err := New(Config{Profiles: []profiles.Profile{p}, ResultsDir: dir,
				Runner: fakeRunner{text: fakeText(64 * 20), step: steps}, NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(100, 30))
			steps <- struct{}{}
			steps <- struct{}{}
			obs.waitScreen(t, "the rule's interval", func(s string) bool {
				return strings.Contains(s, "stop rule precision 0.2") && strings.Contains(s, "of mean_nll (target 20.0%)")
			})
			if keep {
				tm.Send(press('c'))
				obs.waitScreen(t, "keep going asked", func(s string) bool { return strings.Contains(s, "goes on when met") })
			}
			go func() { // windows until the run no longer asks
				for {
					select {
					case steps <- struct{}{}:
					case <-time.After(2 * time.Second):
						return
					}
				}
			}()
			obs.waitScreen(t, "the run's end", func(s string) bool { return strings.Contains(s, "report saved") })
			screen := obs.screen
			tm.Send(press('q'))
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
			h, err := results.History(dir)
			if err != nil || len(h) != 1 {
				t.Fatalf("history %+v, %v", h, err)
			}
			rep := h[0].Run
			met := rep.StoppedEarly
			if keep {
				met = rep.StopRule
			}
			if met == nil || !met.Met || (rep.StoppedEarly == nil) == !keep || (rep.WindowsScored == rep.WindowsTotal) != keep {
				t.Fatalf("report: stopped_early %+v, stop_rule %+v, %d of %d windows", rep.StoppedEarly, rep.StopRule, rep.WindowsScored, rep.WindowsTotal)
			}
			want := fmt.Sprintf("met at window %d", met.Windows)
			if !strings.Contains(screen, want) || !strings.Contains(screen, "┴") {
				t.Fatalf("final screen lacks %q and the chart's mark:\n%s", want, screen)
			}
		})
	}
}

// TestEndToEndABBitsPerByte: an A/B whose models' tokenizers differ is
// refused before A scores; with AllowTokenizerMismatch each side runs on
// its own and they are compared by bits per byte only: the screen and
// the saved summary say so, and the summary's Δ is B's − A's bits per
// byte from their reports.
func TestEndToEndABBitsPerByte(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			dir := t.TempDir()
			a, b := abProfiles()
			a.Model, a.Text, b.Model, b.Text = "", "", "", ""
			app, err := New(Config{Profiles: []profiles.Profile{a, b}, ResultsDir: dir, AllowTokenizerMismatch: allow,
				Runner: fakeRunner{text: fakeText(64 * 6), otherTokenizers: true}, NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
			if !allow {
				obs.waitScreen(t, "A refused", func(s string) bool { return strings.Contains(s, "tokenize the text differently") })
				if s := obs.screen; !strings.Contains(s, "A failed") {
					t.Errorf("refused A/B screen:\n%s", s)
				}
				tm.Send(press('q'))
				tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
				return
			}
			obs.waitScreen(t, "the A/B summary saved", func(s string) bool { return strings.Contains(s, ".ab.json") })
			s := obs.screen
			for _, want := range []string{"by bits per byte only", "Δbits/byte", "tokenizers differ", "bits/byte"} {
				if !strings.Contains(s, want) {
					t.Errorf("A/B screen lacks %q:\n%s", want, s)
				}
			}
			tm.Send(press('q'))
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
			pf := onlySummary(t, dir)
			var ra, rb scoring.Report
			for _, x := range []struct {
				path string
				r    *scoring.Report
			}{{pf.A.Report, &ra}, {pf.B.Report, &rb}} {
				data, err := os.ReadFile(x.path)
				if err != nil || json.Unmarshal(data, x.r) != nil {
					t.Fatalf("report %q: %v", x.path, err)
				}
			}
			if rb.KLD != nil || pf.TokenizerMismatch == "" || pf.DeltaBitsPerByte == nil || pf.Comparison.Windows != 0 {
				t.Fatalf("summary %+v, B's KLD %v: want bits per byte only", pf, rb.KLD)
			}
			if d := rb.BitsPerByte - ra.BitsPerByte; *pf.DeltaBitsPerByte != d || ra.BitsPerByte <= 0 {
				t.Errorf("Δ bits/byte %v, the reports say %v − %v", *pf.DeltaBitsPerByte, rb.BitsPerByte, ra.BitsPerByte)
			}
			if want := results.PairBitsPerByte(&ra, &rb, pf.TokenizerMismatch).Verdict; pf.Verdict != want {
				t.Errorf("verdict %q, want %q", pf.Verdict, want)
			}
		})
	}
}
