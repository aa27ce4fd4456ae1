package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/served/servedtest"
	"plexbench/workbench"
)

// TestServedRun: the app's runner scores a profile that names a server
// (the header says so); a server that starts failing ends the run with
// its status and body on screen, the windows scored before kept as a
// partial run.
func TestServedRun(t *testing.T) {
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	srv, err := servedtest.Load(model, 128, "vllm")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, fail := range []bool{false, true} {
		dir := t.TempDir()
		p := profiles.Default()
		p.Name, p.Ctx, p.Chunks, p.Server, p.Tokenizer, p.ServerParallel = "served", 64, 6, srv.URL, model, 1
		p.Text = shareddata.Path(t, "tinystories", "tinystories-16k.txt")
		srv.SetFault(nil)
		if fail {
			n0 := srv.Requests()
			srv.SetFault(func(n int) servedtest.Fault {
				if n > n0+2 {
					return servedtest.Status500
				}
				return servedtest.None
			})
		}
		app, err := New(Config{Profiles: []profiles.Profile{p}, ResultsDir: dir, Runner: RunnerFunc(workbench.Run), NoColor: true})
		if err != nil {
			t.Fatal(err)
		}
		obs := &observer{notify: make(chan struct{}, 1)}
		tm := teatest.NewTestModel(t, observed{m: app, obs: obs}, teatest.WithInitialTermSize(160, 40))
		want := "report saved to"
		if fail {
			want = "500 Internal Server Error"
		}
		obs.waitScreen(t, "the run's end", func(s string) bool {
			return strings.Contains(s, "served at "+srv.URL) && strings.Contains(s, want)
		})
		tm.Send(press('q'))
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		app.Close()
		e := onlyRun(t, dir)
		if e.Run.Partial != fail || (fail && e.Run.WindowsScored != 2) || (!fail && e.Run.WindowsScored != 6) {
			t.Errorf("fail=%v: kept run partial %v with %d windows", fail, e.Run.Partial, e.Run.WindowsScored)
		}
	}
}
