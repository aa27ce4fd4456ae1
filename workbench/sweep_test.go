package workbench

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/profiles"
	"plexbench/scoring"
)

// TestSweepEvents: a sweep tells each model's start, its run's events
// and its record, the base model first; resumed, it tells each as
// skipped with the record it found.
func TestSweepEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := func(q string) string { return shareddata.Path(t, "models", "stories260K-"+q+".gguf") }
	p := profiles.Default()
	p.Text, p.Ctx, p.Chunks = shareddata.Path(t, "tinystories", "tinystories-16k.txt"), 64, 4
	var events []string
	// Model hashes are not remembered: every sweep reads the files.
	j := SweepJob{Job: Job{Profile: p, hasher: &modelHasher{}}, BaseModel: model("f32"), Models: []string{model("q8_0"), model("q4_0")},
		Base: filepath.Join(dir, "b.kld"), Root: filepath.Join(dir, "results")}
	j.Progress = func(e SweepEvent) {
		s := []string{"started", "run", "done", "skipped"}[e.Kind]
		if e.Kind == SweepModelRun && e.Run.Kind != scoring.EventFinished {
			return
		}
		if e.Record != "" && (e.Report == nil || e.Report.Record == nil || filepath.Dir(e.Record) != j.Root) {
			s += " without its record"
		}
		events = append(events, filepath.Base(e.Model)[12:]+" "+s)
	}
	out, err := Sweep(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	j.Resume = true
	again, err := Sweep(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"f32.gguf started", "f32.gguf run", "f32.gguf done", "q8_0.gguf started", "q8_0.gguf run", "q8_0.gguf done",
		"q4_0.gguf started", "q4_0.gguf run", "q4_0.gguf done", "f32.gguf skipped", "q8_0.gguf skipped", "q4_0.gguf skipped"}
	if !slices.Equal(events, want) || !slices.Equal(out.Records, again.Records) || len(out.Records) != 3 {
		t.Errorf("events %v\nwant %v\nrecords %v then %v", events, want, out.Records, again.Records)
	}
}
