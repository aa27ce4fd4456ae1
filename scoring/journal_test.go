package scoring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// untimed is the report's JSON with the timing fields zeroed.
func untimed(t *testing.T, rep Report) string {
	t.Helper()
	rep.ElapsedSeconds, rep.PrefillTokensPerSecond, rep.ProgressHeldSeconds = 0, 0, 0
	rep.Windows = append([]WindowReport(nil), rep.Windows...)
	for i := range rep.Windows {
		rep.Windows[i].Seconds = 0
	}
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stopAfter is a Progress callback that cancels after n windows.
func stopAfter(n int, cancel func()) func(Event) {
	done := 0
	return func(e Event) {
		if e.Kind == EventWindowDone {
			if done++; done == n {
				cancel()
			}
		}
	}
}

// TestJournalResume: a run stopped after some windows, its journal's last
// record cut short as a kill mid-append leaves it, then resumed, gives the
// report and the base of an uninterrupted run; recording and comparing.
func TestJournalResume(t *testing.T) {
	dir := t.TempDir()
	tokens := randomTokens(2, 1000, 64)
	f := newFake(64, 8, 3, 0)
	g := f.withNoise(0.05, 9)
	ref := filepath.Join(dir, "ref.kld")
	refRep, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: ref})
	if err != nil {
		t.Fatal(err)
	}
	refCmp, err := Run(context.Background(), g, Request{KLDBase: ref})
	if err != nil {
		t.Fatal(err)
	}
	// A comparison against a llama.cpp base journals its comparisons too.
	lref := filepath.Join(dir, "ref-llama.kld")
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: lref, KLDBaseFormat: BaseFormatLlama}); err != nil {
		t.Fatal(err)
	}
	refLlama, err := Run(context.Background(), g, Request{KLDBase: lref})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		eng  *fakeEngine
		req  Request
		want Report
	}{
		{"record", f, Request{Tokens: tokens, Ctx: 100}, refRep},
		{"compare", g, Request{KLDBase: ref}, refCmp},
		{"compare-llama", g, Request{KLDBase: lref}, refLlama},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := t.TempDir()
			req := c.req
			req.Journal = filepath.Join(sub, "r.json.journal")
			if c.name == "record" {
				req.KLDBaseOut = ref // same path as the reference, so the reports match
				os.Rename(ref, ref+".keep")
				defer os.Rename(ref+".keep", ref)
			}
			ctx, cancel := context.WithCancel(context.Background())
			stopped := req
			stopped.Progress = stopAfter(4, cancel)
			if _, err := Run(ctx, c.eng, stopped); !errors.Is(err, ErrStopped) {
				t.Fatalf("stopped run: %v", err)
			}
			cancel()
			if n, err := JournalWindows(req.Journal); err != nil || n != 4 {
				t.Fatalf("journal holds %d windows (%v), want 4", n, err)
			}
			// Without Resume the journal is refused, never overwritten.
			if _, err := Run(context.Background(), c.eng, req); err == nil || !strings.Contains(err.Error(), "--resume") {
				t.Fatalf("second run without resume: %v", err)
			}
			// A fifth record half written.
			jf, _ := os.OpenFile(req.Journal, os.O_WRONLY|os.O_APPEND, 0)
			jf.Write([]byte{0x40, 0x02, 0, 0, 7, 7, 7})
			jf.Close()

			req.Resume = true
			var started Event
			req.Progress = func(e Event) {
				if e.Kind == EventStarted {
					started = e
				}
			}
			got, err := Run(context.Background(), c.eng, req)
			if err != nil {
				t.Fatal(err)
			}
			if started.Resumed != 4 || started.WindowsDone != 4 {
				t.Errorf("started event %+v, want 4 windows resumed", started)
			}
			if a, b := untimed(t, got), untimed(t, c.want); a != b {
				t.Errorf("resumed report differs:\n%s\nwant\n%s", a, b)
			}
			if got.Trace == nil || got.Trace.Scored() != got.ScoredTokens || !reflect.DeepEqual(got.Trace, c.want.Trace) {
				t.Errorf("resumed token trace differs from the uninterrupted one")
			}
			if c.name == "record" {
				a, _ := os.ReadFile(ref)
				b, _ := os.ReadFile(ref + ".keep")
				if !bytes.Equal(a, b) || len(a) == 0 {
					t.Errorf("resumed base differs from the uninterrupted one (%d vs %d bytes)", len(a), len(b))
				}
			}
			if n, _ := JournalWindows(req.Journal); n != 10 {
				t.Errorf("journal holds %d windows after the resumed run, want 10", n)
			}
			if err := RemoveJournal(req.Journal); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestJournalRefusesOtherRun: a journal resumed by a run with another
// text, protocol or engine config is refused, naming the field.
func TestJournalRefusesOtherRun(t *testing.T) {
	dir := t.TempDir()
	tokens := randomTokens(2, 1000, 64)
	f := newFake(64, 8, 3, 0)
	path := filepath.Join(dir, "j")
	ctx, cancel := context.WithCancel(context.Background())
	Run(ctx, f, Request{Tokens: tokens, Ctx: 100, Journal: path, Progress: stopAfter(2, cancel)})
	cancel()

	other := newFake(64, 8, 3, 0)
	other.kv = 2048
	for _, c := range []struct {
		eng  *fakeEngine
		req  Request
		want string
	}{
		{f, Request{Tokens: randomTokens(3, 1000, 64), Ctx: 100}, "token_ids_sha256 is"},
		{f, Request{Tokens: tokens, Ctx: 50}, "ctx is 100 in the journal, 50 in this run"},
		{f, Request{Tokens: tokens, Ctx: 100, Chunks: 5}, "chunk_limit is 0 in the journal, 5 in this run"},
		{f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: filepath.Join(dir, "b.kld")}, "kld_base_out_top_k is 0 in the journal, 32"},
		{other, Request{Tokens: tokens, Ctx: 100}, "config.kv_capacity is 4096 in the journal, 2048 in this run"},
	} {
		c.req.Journal, c.req.Resume = path, true
		_, err := Run(context.Background(), c.eng, c.req)
		if !errors.Is(err, ErrJournalMismatch) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%+v: %v, want %q", c.req, err, c.want)
		}
	}
	os.WriteFile(path, []byte("PLXJRNL\x00junk"), 0o644)
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Journal: path, Resume: true}); !errors.Is(err, ErrBadJournal) {
		t.Errorf("junk journal: %v", err)
	}
	// Resume with no journal starts the run.
	fresh := filepath.Join(dir, "fresh")
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Journal: fresh, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if n, _ := JournalWindows(fresh); n != 10 {
		t.Errorf("fresh journal holds %d windows", n)
	}
}

// TestJournalAcrossBackends: the fields that say only where a run
// computes (backend, device, its ops, the CPU fallback) are not compared
// when a journal is resumed; one that changes the numbers still is, and
// named. A run stopped on a "device" and resumed on the CPU backend ends
// with the uninterrupted CPU run's numbers, this run's config, a warning
// saying where its first windows come from, and a started event naming
// both placements.
func TestJournalAcrossBackends(t *testing.T) {
	cpu := EngineConfig{Backend: "cpu", DeviceArch: "cpu", KVCacheDType: "f16", KVCapacity: 512, BatchSize: 512,
		UBatchSize: 512, Threads: 4, CPUFallbackAllowed: true, Kernels: map[string]string{"matmul.f32": "avx2"}, CPULevel: "native"}
	dev := cpu
	dev.Backend, dev.DeviceArch, dev.CPUFallbackAllowed = "cuda", "sm_90", false
	dev.DeviceOps, dev.CPUFallbackOps = []string{"matmul", "attention", "head"}, []string{"gdn"}
	id := func(c EngineConfig) journalIdentity {
		return journalIdentity{TokenIDsSHA256: "ab", Tokens: 1000, Method: MethodChunks, Ctx: 100, Windows: 10, Config: c}
	}
	if d := identityMismatch(id(dev), id(cpu)); d != "" {
		t.Errorf("device journal, CPU run: %s", d)
	}
	if d := identityMismatch(id(cpu), id(dev)); d != "" {
		t.Errorf("CPU journal, device run: %s", d)
	}
	for _, c := range []struct {
		change func(*EngineConfig)
		want   string
	}{
		{func(c *EngineConfig) { c.KVCacheDType = "q8_0" }, `config.kv_cache_dtype is "f16" in the journal, "q8_0" in this run`},
		{func(c *EngineConfig) { c.UBatchSize = 256 }, "config.ubatch_size is 512 in the journal, 256 in this run"},
		{func(c *EngineConfig) { c.Kernels = map[string]string{"matmul.f32": "go"} }, `config.kernels.matmul.f32 is "avx2" in the journal, "go" in this run`},
		{func(c *EngineConfig) { c.CPULevel = "generic" }, `config.cpu_level is "native" in the journal, "generic" in this run`},
	} {
		r := cpu
		r.Kernels = maps.Clone(cpu.Kernels)
		c.change(&r)
		if d := identityMismatch(id(dev), id(r)); d != c.want {
			t.Errorf("mismatch %q, want %q", d, c.want)
		}
	}

	dir := t.TempDir()
	tokens := randomTokens(2, 1000, 64)
	f := newFake(64, 8, 3, 0)
	want, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100})
	if err != nil {
		t.Fatal(err)
	}
	g := newFake(64, 8, 3, 0)
	g.device = &dev
	req := Request{Tokens: tokens, Ctx: 100, Journal: filepath.Join(dir, "r.json.journal")}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := req
	stopped.Progress = stopAfter(4, cancel)
	if _, err := Run(ctx, g, stopped); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	cancel()
	req.Resume = true
	var started Event
	req.Progress = func(e Event) {
		if e.Kind == EventStarted {
			started = e
		}
	}
	got, err := Run(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	if started.Resumed != 4 || started.ResumedFrom != "cuda (sm_90)" || started.ResumedOn != "fake (cpu)" {
		t.Errorf("started event: resumed %d from %q on %q, want 4 from cuda (sm_90) on fake (cpu)", started.Resumed, started.ResumedFrom, started.ResumedOn)
	}
	const warning = "the first 4 of 10 windows come from the journal of a run begun on cuda (sm_90); this run, whose config this is, computed the rest on fake (cpu)"
	if len(got.Warnings) != 1 || got.Warnings[0] != warning {
		t.Errorf("warnings %q, want [%q]", got.Warnings, warning)
	}
	if !reflect.DeepEqual(got.Config, want.Config) {
		t.Errorf("config %+v, want this run's %+v", got.Config, want.Config)
	}
	got.Warnings = nil
	if a, b := untimed(t, got), untimed(t, want); a != b {
		t.Errorf("resumed report differs:\n%s\nwant\n%s", a, b)
	}
}

// FuzzJournal: no journal header or record may panic or allocate beyond
// its checked sizes; a record that decodes encodes back to the same bytes.
func FuzzJournal(f *testing.F) {
	dir := f.TempDir()
	tokens := randomTokens(2, 300, 64)
	eng := newFake(64, 8, 3, 0)
	ref := filepath.Join(dir, "ref.kld")
	if _, err := Run(context.Background(), eng, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: ref, KLDTopK: 2}); err != nil {
		f.Fatal(err)
	}
	// mode is the record shape: bit 0 comparing, bits 1.. the base top-k.
	for i, c := range []struct {
		mode byte
		req  Request
	}{
		{0, Request{Tokens: tokens, Ctx: 100}},
		{2 << 1, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: filepath.Join(dir, "b.kld"), KLDTopK: 2}},
		{1, Request{KLDBase: ref}},
	} {
		req := c.req
		req.Journal = filepath.Join(dir, fmt.Sprint("j", i))
		if _, err := Run(context.Background(), eng, req); err != nil {
			f.Fatal(err)
		}
		raw, err := os.ReadFile(req.Journal)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c.mode, raw)
		f.Add(c.mode, raw[:len(raw)-3])
	}
	f.Fuzz(func(t *testing.T, mode byte, data []byte) {
		r := bytes.NewReader(data)
		if _, n, err := readJournalHeader(r, "fuzz"); err == nil && n > int64(len(data)) {
			t.Fatalf("header of %d bytes read from %d", n, len(data))
		}
		j := &journal{path: "fuzz", kld: mode&1 != 0, k: int(mode>>1) % 3}
		var jw journalWindow
		for i := range 3 {
			w := Window{Index: i, Scored: 49}
			if !j.read(r, w, &jw) {
				return
			}
			got := append([]byte(nil), j.buf...)
			enc, err := j.encode(w, &jw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(enc[4:], got) {
				t.Fatalf("window %d: decoded record encodes differently", i)
			}
		}
	})
}
