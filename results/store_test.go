package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"plexbench/profiles"
	"plexbench/scoring"
)

// finished is a complete report as scoring.Run gives one.
func finished() scoring.Report {
	return scoring.Report{Object: scoring.ReportObject, Tokens: 600, TokenIDsSHA256: strings.Repeat("ab", 32),
		Method: scoring.MethodChunks, Ctx: 100, Stride: 100, WindowsTotal: 6, WindowsScored: 6, ScoredTokens: 294,
		Perplexity: 3.5, Text: "texts/tiny.txt", Config: scoring.EngineConfig{Threads: 2}}
}

func recorded(rep scoring.Report, modelHash string) scoring.Report {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ri := scoring.NewRecordInfo(&rep, scoring.BaseID{}, scoring.RecordModel{File: "m-" + modelHash + ".gguf", SHA256Prefix: modelHash},
		scoring.Machine{OS: "linux", Arch: "amd64", CPUs: 2}, "test", t0, t0.Add(time.Second))
	ri.Name = RecordName(&rep, &ri)
	rep.Record = &ri
	return rep
}

// TestRecordNamesAndWrite: a rerun of the same protocol, engine and model
// gets the same record name and replaces its file; anything else another.
func TestRecordNamesAndWrite(t *testing.T) {
	rep := finished()
	a, again, otherModel := recorded(rep, "aaaa"), recorded(rep, "aaaa"), recorded(rep, "bbbb")
	threads := rep
	threads.Config.Threads = 7
	ctx := rep
	ctx.Ctx = 50
	otherEngine, otherProto := recorded(threads, "aaaa"), recorded(ctx, "aaaa")
	if a.Record.Name != again.Record.Name || !strings.HasPrefix(a.Record.Name, "m-aaaa_tiny_") {
		t.Fatalf("rerun named %q, first %q", again.Record.Name, a.Record.Name)
	}
	for _, o := range []scoring.Report{otherModel, otherEngine, otherProto} {
		if o.Record.Name == a.Record.Name {
			t.Errorf("distinct runs share the record name %q", o.Record.Name)
		}
	}
	root := filepath.Join(t.TempDir(), "results")
	for _, r := range []scoring.Report{a, again, otherModel} {
		if _, err := WriteRecord(root, &r); err != nil {
			t.Fatal(err)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 2 {
		t.Fatalf("%d files after a rerun and one other run, want 2", len(ents))
	}
	recs, _, err := Records(root, nil)
	if err != nil || len(recs) != 2 {
		t.Fatalf("Records: %d, %v", len(recs), err)
	}
	partial := a
	partial.Partial = true
	if _, err := WriteRecord(root, &partial); err == nil {
		t.Error("a partial run was written as a record")
	}
}

// TestKeepTUIRun: a TUI run is kept under its record name with its profile
// and the base it recorded moved beside it (the record naming the kept
// file, never the pending one); a rerun replaces those files; a stopped
// run gets a stopped-run name; History lists both, not the A/B summary,
// newest first.
func TestKeepTUIRun(t *testing.T) {
	root := t.TempDir()
	p := profiles.Default()
	p.Name = "f16kv"
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	keep := func(rep scoring.Report) Run {
		t.Helper()
		pending, err := PendingBase(root, started)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pending, []byte("base"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep.KLDBaseOut = pending
		if rep.Record != nil {
			ri := *rep.Record
			ri.Protocol.BaseName = filepath.Base(pending)
			rep.Record = &ri
		}
		run, err := Keep(root, &rep, Beside{Unrecorded: true, Model: p.Model, Started: started, Profile: &p, PendingBase: pending})
		if err != nil {
			t.Fatal(err)
		}
		if rep.KLDBaseOut != run.Base || filepath.Ext(run.Base) != ".kld" {
			t.Fatalf("report names base %q, kept at %q", rep.KLDBaseOut, run.Base)
		}
		if rep.Record != nil && rep.Record.Protocol.BaseName != filepath.Base(run.Base) {
			t.Fatalf("record names base %q, kept at %q", rep.Record.Protocol.BaseName, run.Base)
		}
		return run
	}
	rec := recorded(withTrace(finished()), "aaaa")
	first, second := keep(rec), keep(rec)
	if first != second || filepath.Base(first.Report) != rec.Record.Name+".json" {
		t.Fatalf("rerun kept as %+v, first %+v", second, first)
	}
	if _, err := ReadTrace(first.Report, &rec); err != nil {
		t.Errorf("the kept run's trace: %v", err)
	}
	stopped := finished()
	stopped.Partial = true
	s := keep(stopped)
	if !strings.Contains(s.Report, "_stopped-20260102-030405") {
		t.Fatalf("stopped run kept as %s", s.Report)
	}
	if err := os.WriteFile(ABPath(first.Report), []byte(`{"object":"plexbench.ab"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := History(root)
	if err != nil || len(h) != 2 {
		t.Fatalf("History: %d entries, %v", len(h), err)
	}
	for _, e := range h {
		if e.Err != nil || !e.HasProfile || e.Profile.Name != "f16kv" || e.Base == "" {
			t.Errorf("entry %+v", e)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 8 {
		t.Errorf("%d files in the root, want 8 (two runs × 3, one trace, one summary)", len(ents))
	}
}

func TestRoot(t *testing.T) {
	if Root("", "") != DefaultRoot || Root("x", "") != "x" {
		t.Fatal("flag or default")
	}
	if Root("", "env") != "env" || Root("x", "env") != "x" {
		t.Fatal("env under the flag")
	}
}
