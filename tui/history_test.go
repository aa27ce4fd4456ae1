package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plexbench/profiles"
	"plexbench/scoring"
)

func TestRunName(t *testing.T) {
	p := profiles.Default()
	p.Name, p.Model = "f16 kv/x", "/m/stories260K-f32.gguf"
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	name := RunName(p, at)
	want := "f16-kv-x_stories260K-f32_" + p.Digest() + "_20250102-030405"
	if name != want {
		t.Errorf("RunName = %q, want %q", name, want)
	}
	q := p
	q.KVCacheDType = "f32"
	if RunName(q, at) == name {
		t.Error("different settings, same name")
	}
	p.Model = ""
	if !strings.Contains(RunName(p, at), "_demo_") {
		t.Errorf("demo model: %q", RunName(p, at))
	}
}

func TestSaveAndHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	if h, err := History(dir); err != nil || len(h) != 0 {
		t.Fatalf("missing folder: %v, %v", h, err)
	}
	p := profiles.Default()
	p.Name, p.Ctx = "hist", 64
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f1, err := newRunFiles(dir, p, at)
	if err != nil {
		t.Fatal(err)
	}
	rep := scoring.Report{Object: scoring.ReportObject, Method: "chunks", Ctx: 64, WindowsTotal: 3, WindowsScored: 3,
		Perplexity: 5.5, Windows: []scoring.WindowReport{{Index: 0, Scored: 31}}}
	if err := f1.save(p, &rep); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f1.Base, []byte("base"), 0o644)
	// Same second, same settings: a second name, not an overwrite.
	f2, err := newRunFiles(dir, p, at)
	if err != nil {
		t.Fatal(err)
	}
	if f2.Report == f1.Report {
		t.Fatal("second run reuses the first's name")
	}
	rep2 := rep
	rep2.Partial, rep2.WindowsScored = true, 1
	if err := f2.save(p, &rep2); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(f2.Report, later, later)
	// An A/B summary and a broken report sit beside them.
	if err := savePair(filepath.Join(dir, "x.ab.json"), pairFile{A: f1.Report, B: f2.Report}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644)

	h, err := History(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 {
		t.Fatalf("history holds %d entries, want 3 (two runs, one unreadable)", len(h))
	}
	if h[0].Report != f2.Report || !h[0].Run.Partial || h[0].Base != "" || !h[0].HasProfile {
		t.Errorf("newest entry: %+v", h[0])
	}
	var first *Entry
	for i := range h {
		if h[i].Report == f1.Report {
			first = &h[i]
		}
	}
	if first == nil || first.Base != f1.Base || first.Profile.Name != "hist" || first.Run.Perplexity != 5.5 {
		t.Errorf("first run's entry: %+v", first)
	}
	bad := 0
	for _, e := range h {
		if e.Err != nil {
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("%d unreadable entries, want 1", bad)
	}
}

func TestGatePausesAndStops(t *testing.T) {
	var g gate
	done := make(chan struct{})
	g.set(true)
	go func() {
		g.wait(context.Background())
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("wait returned while paused")
	case <-time.After(20 * time.Millisecond):
	}
	g.set(false)
	<-done // resumes

	ctx, cancel := context.WithCancel(context.Background())
	g.set(true)
	done = make(chan struct{})
	go func() {
		g.wait(ctx)
		close(done)
	}()
	cancel() // a stop while paused ends the pause
	<-done
	g.set(false)
	g.wait(context.Background()) // not paused: returns at once
}
