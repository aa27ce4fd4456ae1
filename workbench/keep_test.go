package workbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/scoring"
)

// TestKept: a run whose record cannot be kept returns its report and
// ErrNotKept; a stopped run is kept only when asked (Unrecorded), and a
// base it was to keep leaves no pending file behind either way.
func TestKept(t *testing.T) {
	t.Parallel()
	p := profiles.Default()
	p.Model = shareddata.Path(t, "models", "stories260K-f32.gguf")
	p.Text = shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	p.Ctx, p.Chunks, p.Threads = 64, 2, 1
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Job{Profile: p, Keep: Keep{Root: filepath.Join(file, "root")}, hasher: &modelHasher{}})
	if !errors.Is(err, ErrNotKept) || out.KeepErr != err || out.Report.Record == nil || out.Record != "" {
		t.Fatalf("a root that cannot be made: %v, kept %q, record %v", err, out.Record, out.Report.Record != nil)
	}

	// stop runs j after its first window (a run stopped before any has
	// nothing to keep).
	stop := func(j Job) (Outcome, error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		j.Progress = func(e scoring.Event) {
			if e.Kind == scoring.EventWindowDone {
				cancel()
			}
		}
		return Run(ctx, j)
	}
	root := filepath.Join(dir, "root")
	out, err = stop(Job{Profile: p, Keep: Keep{Root: root, Base: true}, hasher: &modelHasher{}})
	if !errors.Is(err, scoring.ErrStopped) || out.Record != "" || !out.Report.Partial {
		t.Fatalf("a stopped run: %v, kept %q", err, out.Record)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("a stopped run not asked to be kept left %v", ents)
	}
	out, err = stop(Job{Profile: p, Keep: Keep{Root: root, Base: true, Unrecorded: true, Profile: true}, hasher: &modelHasher{}})
	if !errors.Is(err, scoring.ErrStopped) || !strings.Contains(out.Record, "_stopped-") {
		t.Fatalf("a stopped run kept as %q: %v", out.Record, err)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left being written: %s", e.Name())
		}
	}
	if _, err := os.Stat(strings.TrimSuffix(out.Record, ".json") + ".toml"); err != nil {
		t.Errorf("its profile: %v", err)
	}
}
