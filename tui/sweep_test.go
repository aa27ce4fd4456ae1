package tui

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// sweepFixture is a sweep of two stories260K files against the f32 one on
// a short protocol, recording into root.
func sweepFixture(t *testing.T, root string) workbench.SweepJob {
	p := profiles.Default()
	p.Name, p.Ctx, p.Chunks, p.Threads = "quants", 64, 6, 1
	p.Text = shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	model := func(q string) string { return shareddata.Path(t, "models", "stories260K-"+q+".gguf") }
	return workbench.SweepJob{Job: workbench.Job{Profile: p}, BaseModel: model("f32"),
		Models: []string{model("q8_0"), model("q4_0")}, Base: filepath.Join(root, "base.kld"), Root: root}
}

// heldSweeper runs workbench.Sweep, holding model 1's run after its second
// window until released or stopped, so a test sees the sweep mid-way.
type heldSweeper struct {
	held, release chan struct{}
}

func (h heldSweeper) Sweep(ctx context.Context, j workbench.SweepJob) (workbench.SweepOutcome, error) {
	show := j.Progress
	j.Progress = func(e workbench.SweepEvent) {
		show(e)
		if e.Kind == workbench.SweepModelRun && e.Index == 1 && e.Run.Kind == scoring.EventWindowDone && e.Run.WindowsDone == 2 {
			h.held <- struct{}{}
			select {
			case <-h.release:
			case <-ctx.Done():
			}
		}
	}
	return workbench.Sweep(ctx, j)
}

func startSweep(t *testing.T, sj workbench.SweepJob, s Sweeper) (*teatest.TestModel, *observer, Model) {
	t.Helper()
	app, err := New(Config{Sweep: &sj, Sweeper: s, Runner: fakeRunner{}, ResultsDir: sj.Root, NoColor: true})
	if err != nil {
		t.Fatal(err)
	}
	obs := &observer{notify: make(chan struct{}, 1)}
	tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(150, 40))
	return tm, obs, app
}

// line is the screen line that begins with s ("" when none does).
func line(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, s) {
			return l
		}
	}
	return ""
}

// TestSweepView runs a real sweep in the sweep view: mid-way it lists the
// base model done with its PPL, the model in flight with its windows and
// live KLD, the last waiting, and the compare table of what finished; at
// the end every model's line and the table carry the numbers the records
// on disk hold.
func TestSweepView(t *testing.T) {
	root := t.TempDir()
	h := heldSweeper{held: make(chan struct{}), release: make(chan struct{})}
	tm, obs, app := startSweep(t, sweepFixture(t, root), h)
	defer app.Close()

	select {
	case <-h.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the sweep never reached model 1's second window")
	}
	obs.waitScreen(t, "model 1 at window 2", func(s string) bool {
		return strings.Contains(line(s, "stories260K-q8_0.gguf"), "2/6") && strings.Contains(s, "── compare")
	})
	s := obs.screen
	if l := line(s, "stories260K-f32.gguf (base)"); !strings.Contains(l, "done") || !strings.Contains(l, "PPL ") {
		t.Errorf("base line %q: want done with its PPL", l)
	}
	if l := line(s, "stories260K-q4_0.gguf"); !strings.Contains(l, "waiting") {
		t.Errorf("last model %q: want waiting", l)
	}
	if !strings.Contains(s, "KLD ") || !strings.Contains(s, "RUNNING") {
		t.Errorf("no live KLD or state while model 1 runs:\n%s", s)
	}
	close(h.release)
	obs.waitScreen(t, "the sweep done", func(s string) bool { return strings.Contains(s, "done: 3 records") })
	s = obs.screen

	recs, _, err := results.Records(root, nil)
	if err != nil || len(recs) != 3 {
		t.Fatalf("records: %d, %v", len(recs), err)
	}
	var table strings.Builder
	results.CompareTables(scoring.GroupRecords(recs)).WriteTable(&table, 150)
	for _, want := range strings.Split(strings.TrimSpace(table.String()), "\n") {
		if !strings.Contains(s, strings.TrimRight(want, " ")) {
			t.Errorf("the screen lacks the compare line %q:\n%s", want, s)
		}
	}
	for _, r := range recs {
		l := line(s, r.Record.Model.File)
		if !strings.Contains(l, "done") || !strings.Contains(l, pm(r.Perplexity, r.PerplexityUncertainty)) {
			t.Errorf("line %q lacks PPL %s", l, pm(r.Perplexity, r.PerplexityUncertainty))
		}
		if r.KLD != nil {
			k := r.KLD.Summary()
			if !strings.Contains(l, pm(k.MeanKLD, k.MeanKLDUncertainty)) {
				t.Errorf("line %q lacks mean KLD %s", l, pm(k.MeanKLD, k.MeanKLDUncertainty))
			}
		}
	}
	tm.Send(press('q'))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	if fm, ok := tm.FinalModel(t).(observed).m.(Model); !ok || len(fm.SavedReports()) != 3 {
		t.Errorf("saved files: %v", fm.SavedReports())
	}
}

// TestSweepViewStopResume stops a sweep in the middle of model 1 (q): the
// base model's record stays, model 1 keeps its journal and is marked
// stopped; opened again with Resume, the sweep skips the base model,
// resumes model 1 and ends with the records an uninterrupted sweep writes.
func TestSweepViewStopResume(t *testing.T) {
	root := t.TempDir()
	h := heldSweeper{held: make(chan struct{}), release: make(chan struct{})}
	sj := sweepFixture(t, root)
	tm, obs, app := startSweep(t, sj, h)
	select {
	case <-h.held:
	case <-time.After(60 * time.Second):
		t.Fatal("the sweep never reached model 1's second window")
	}
	tm.Send(press('q'))
	obs.waitScreen(t, "stopped", func(s string) bool { return strings.Contains(s, "STOPPED") })
	if l := line(obs.screen, "stories260K-q8_0.gguf"); !strings.Contains(l, "stopped (journal kept)") {
		t.Errorf("model 1 %q: want stopped, journal kept", l)
	}
	if !strings.Contains(obs.screen, "--resume continues the sweep") {
		t.Errorf("no word on continuing:\n%s", obs.screen)
	}
	tm.Send(press('q'))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	app.Close()
	journals, _ := filepath.Glob(filepath.Join(root, "*.journal"))
	if len(journals) != 1 {
		t.Fatalf("journals after the stop: %v", journals)
	}

	sj.Resume = true
	tm, obs, app = startSweep(t, sj, SweeperFunc(workbench.Sweep))
	defer app.Close()
	obs.waitScreen(t, "the resumed sweep done", func(s string) bool { return strings.Contains(s, "done: 3 records") })
	if l := line(obs.screen, "stories260K-f32.gguf (base)"); !strings.Contains(l, "recorded before") {
		t.Errorf("base line %q: want skipped as recorded before", l)
	}
	tm.Send(press('q'))
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

	// The same sweep uninterrupted, elsewhere: the same numbers.
	other := t.TempDir()
	ref := sweepFixture(t, other)
	if _, err := workbench.Sweep(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	got, _, err := results.Records(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := results.Records(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	figures := func(rs []scoring.Report) []string {
		var out []string
		for _, r := range rs {
			f := r.Record.Model.File + " " + pm(r.Perplexity, r.PerplexityUncertainty)
			if r.KLD != nil {
				k := r.KLD.Summary()
				f += " " + pm(k.MeanKLD, k.MeanKLDUncertainty) + " " + pct(k.SameTop, 3)
			}
			out = append(out, f)
		}
		slices.Sort(out)
		return out
	}
	if g, w := figures(got), figures(want); !slices.Equal(g, w) {
		t.Errorf("resumed sweep's records:\n%v\nuninterrupted:\n%v", g, w)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "*.journal")); len(left) != 0 {
		t.Errorf("journals left: %v", left)
	}
	if _, err := os.Stat(sj.Base); err != nil {
		t.Errorf("base: %v", err)
	}
}
