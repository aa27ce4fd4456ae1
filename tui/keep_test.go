package tui

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestRunKeepsBaseOnlyWhenAsked: a run of stories260K in the real app is
// kept as a record with its trace and profile; its KLD base only with
// KeepBases (--keep-base), then beside the record under its name, which
// the record and the compare table name: no pending name is left in the
// results folder or reaches a record.
func TestRunKeepsBaseOnlyWhenAsked(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-base=%v", keep), func(t *testing.T) {
			dir := t.TempDir()
			p := profiles.Default()
			p.Name, p.Threads, p.Ctx, p.Chunks = "keep", 1, 64, 2
			p.Model = shareddata.Path(t, "models", "stories260K-f32.gguf")
			p.Text = shareddata.Path(t, "tinystories", "tinystories-16k.txt")
			app, err := New(Config{Profiles: []profiles.Profile{p}, ResultsDir: dir, KeepBases: keep,
				Runner: RunnerFunc(workbench.Run), NoColor: true})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			obs := &observer{notify: make(chan struct{}, 1)}
			tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(120, 40))
			obs.waitScreen(t, "the run's end", func(s string) bool { return strings.Contains(s, "report saved to") })
			tm.Send(press('q'))
			tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))

			e := onlyRun(t, dir)
			ri := e.Run.Record
			if ri == nil || e.Report != filepath.Join(dir, ri.Name+".json") || !e.HasProfile {
				t.Fatalf("kept as %s (record %v, profile %v)", e.Report, ri != nil, e.HasProfile)
			}
			bases, _ := filepath.Glob(filepath.Join(dir, "*.kld"))
			if dots, _ := filepath.Glob(filepath.Join(dir, ".*")); len(dots) > 0 {
				t.Errorf("files being written left in the results folder: %v", dots)
			}
			if !keep {
				if len(bases) != 0 || e.Base != "" || e.Run.KLDBaseOut != "" || ri.Protocol.Base != "" {
					t.Fatalf("a run not asked to keep a base kept %v (report names %q, record %q)", bases, e.Run.KLDBaseOut, ri.Protocol.Base)
				}
				return
			}
			want := filepath.Join(dir, ri.Name+".kld")
			if len(bases) != 1 || bases[0] != want || e.Base != want || e.Run.KLDBaseOut != want ||
				ri.Protocol.Base == "" || ri.Protocol.BaseName != filepath.Base(want) {
				t.Fatalf("bases %v, entry's %q, report names %q, record names %q (%s); want %s",
					bases, e.Base, e.Run.KLDBaseOut, ri.Protocol.BaseName, ri.Protocol.Base, want)
			}
			if id, err := scoring.IdentifyBase(want); err != nil || id.Identity != ri.Protocol.Base {
				t.Errorf("the kept base is %+v (%v), the record names %s", id, err, ri.Protocol.Base)
			}
			recs, _, err := results.Records(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			title := results.CompareTables(scoring.GroupRecords(recs)).Groups[0].Title
			if strings.Contains(title, ".pending") || !strings.Contains(title, filepath.Base(want)) {
				t.Errorf("compare's title names %q, want the kept base %s", title, filepath.Base(want))
			}
			if _, err := os.Stat(want); err != nil {
				t.Error(err)
			}
		})
	}
}
