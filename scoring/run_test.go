package scoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// bruteNLLs recomputes every scored token's NLL of a plan from full logit
// rows in float64, as a reference for Run.
func bruteNLLs(f *fakeEngine, tokens []int32, plan Plan) [][]float64 {
	var out [][]float64
	for _, w := range plan.Windows {
		in := w.Input(tokens, nil)
		hid := f.hiddenRows(in)
		var nlls []float64
		for p := w.FirstRow; p <= w.LastRow(); p++ {
			row := f.logits(hid[p*f.h : (p+1)*f.h])
			nlls = append(nlls, logSumExp64(row)-float64(row[tokens[w.Begin+p+1]]))
		}
		out = append(out, nlls)
	}
	return out
}

func TestRunMatchesBruteForce(t *testing.T) {
	tokens := randomTokens(9, 1000, 64)
	cases := []struct {
		name string
		g    Geometry
	}{
		{"chunks ctx 300", Geometry{Method: MethodChunks, Ctx: 300}},
		{"chunks ctx 300 add-BOS", Geometry{Method: MethodChunks, Ctx: 300, AddBOS: true, BOS: 1}},
		{"sliding ctx 200 stride 64", Geometry{Method: MethodSliding, Ctx: 200, Stride: 64}},
		{"sliding ctx 150 add-BOS", Geometry{Method: MethodSliding, Ctx: 150, AddBOS: true, BOS: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var first *Report
			for _, ub := range []int{7, 64, 512} {
				f := newFake(64, 8, 1, 0)
				f.ubatch, f.addBOS, f.bos = ub, c.g.AddBOS, c.g.BOS
				rep, err := Run(context.Background(), f, Request{Tokens: tokens, Method: c.g.Method, Ctx: c.g.Ctx, Stride: c.g.Stride})
				if err != nil {
					t.Fatal(err)
				}
				if f.maxHeadRows > HeadRows {
					t.Fatalf("HeadReduce got %d rows", f.maxHeadRows)
				}
				plan, _ := PlanWindows(len(tokens), c.g)
				ref := bruteNLLs(f, tokens, plan)
				var sum, sum2 float64
				n := 0
				for i, w := range rep.Windows {
					var ws float64
					for _, x := range ref[i] {
						ws += x
						sum += x
						sum2 += x * x
						n++
					}
					pw := plan.Windows[i]
					if w.Index != i || w.Begin != pw.Begin || w.End != pw.End || w.FirstTarget != pw.FirstTarget ||
						w.Scored != len(ref[i]) || !close(w.NLLSum, ws, 1e-6, 1e-9) ||
						!close(w.MeanNLL, ws/float64(len(ref[i])), 1e-6, 0) || w.MeanKLD != nil {
						t.Fatalf("ubatch %d window %d: %+v, reference nll sum %v", ub, i, w, ws)
					}
				}
				mean := sum / float64(n)
				se := math.Sqrt((sum2/float64(n) - mean*mean) / float64(n-1))
				if rep.ScoredTokens != n || rep.WindowsScored != len(plan.Windows) || rep.Partial ||
					!close(rep.MeanNLL, mean, 1e-6, 0) || !close(rep.Perplexity, math.Exp(mean), 1e-6, 0) ||
					!close(rep.PerplexityUncertainty, math.Exp(mean)*se, 1e-5, 0) {
					t.Fatalf("ubatch %d: report %v ± %v over %d, reference %v ± %v over %d",
						ub, rep.Perplexity, rep.PerplexityUncertainty, rep.ScoredTokens, math.Exp(mean), math.Exp(mean)*se, n)
				}
				if rep.PrefillTokens != plan.PrefillToks || f.prefills != len(plan.Windows) {
					t.Fatalf("prefill tokens %d / calls %d, want %d / %d", rep.PrefillTokens, f.prefills, plan.PrefillToks, len(plan.Windows))
				}
				for i, from := range f.prefillFroms {
					w := plan.Windows[i]
					if from != w.FirstRow {
						t.Fatalf("prefill %d from %d, want %d", i, from, w.FirstRow)
					}
					want := tokens[w.Begin]
					if c.g.AddBOS {
						want = c.g.BOS
					}
					if f.firstTokens[i] != want {
						t.Fatalf("prefill %d starts with %d, want %d", i, f.firstTokens[i], want)
					}
				}
				// The pass plan must not change a bit of the result.
				if first == nil {
					first = &rep
				} else if rep.MeanNLL != first.MeanNLL || rep.PerplexityUncertainty != first.PerplexityUncertainty {
					t.Fatalf("ubatch %d: %v, ubatch 7: %v", ub, rep.MeanNLL, first.MeanNLL)
				}
			}
		})
	}
}

func TestRunHeadBatches(t *testing.T) {
	// ctx 600: 299 scored rows per chunk → head batches of 128, 128, 43.
	f := newFake(40, 4, 2, 0)
	f.ubatch = 50
	rep, err := Run(context.Background(), f, Request{Tokens: randomTokens(1, 1200, 40), Ctx: 600})
	if err != nil {
		t.Fatal(err)
	}
	if f.maxHeadRows != HeadRows || f.headCalls != 2*3 || rep.ScoredTokens != 2*299 {
		t.Fatalf("max rows %d, calls %d, scored %d", f.maxHeadRows, f.headCalls, rep.ScoredTokens)
	}
}

func recordBase(t *testing.T, f *fakeEngine, req Request) (string, Report) {
	t.Helper()
	if req.KLDBaseOut == "" {
		req.KLDBaseOut = filepath.Join(t.TempDir(), "base.kld")
	}
	rep, err := Run(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.KLDBaseOut != req.KLDBaseOut {
		t.Fatalf("report kld_base_out %q", rep.KLDBaseOut)
	}
	return req.KLDBaseOut, rep
}

func TestRunSelfCompareIsExactlyZero(t *testing.T) {
	for _, g := range []Request{{Ctx: 128}, {Method: MethodSliding, Ctx: 96, Stride: 40}} {
		f := newFake(64, 8, 3, 0)
		f.addBOS = true
		g.Text = strings.Repeat("the quick brown fox jumps over the lazy dog. ", 20)
		path, base := recordBase(t, f, g)

		st, _ := os.Stat(path)
		raw, _ := os.ReadFile(path)
		hdr := int64(100) + int64(raw[96]) + int64(raw[97])<<8 + 4*int64(base.Tokens) + 32
		if st.Size() != hdr+264*int64(base.ScoredTokens) {
			t.Fatalf("base size %d, want %d + 264 × %d", st.Size(), hdr, base.ScoredTokens)
		}

		rep, err := Run(context.Background(), f, Request{KLDBase: path})
		if err != nil {
			t.Fatal(err)
		}
		k := rep.KLD
		if k == nil || k.Tokens != base.ScoredTokens || k.TopK != 32 || k.Base != path {
			t.Fatalf("kld %+v", k)
		}
		if k.MeanKLD != 0 || k.KLDMax != 0 || k.KLDPercentiles.Min != 0 || k.SameTop != 1 || k.MeanDeltaP != 0 ||
			k.RMSDeltaP != 0 || k.MeanLogRatio != 0 || k.DeltaPerplexity != 0 || k.PerplexityRatio != 1 ||
			k.Top5Agreement != 1 || k.NonFiniteTokens != 0 || k.MeanKLDUncertaintyCR1 != 0 {
			t.Fatalf("self comparison is not exactly zero: %+v", k)
		}
		if rep.Perplexity != base.Perplexity || k.BasePerplexity != k.Perplexity || rep.Method != base.Method ||
			rep.Ctx != base.Ctx || rep.Stride != base.Stride || rep.TokenIDsSHA256 != base.TokenIDsSHA256 {
			t.Fatalf("comparison run differs from its base run: %+v vs %+v", rep, base)
		}
		if k.MeanBaseTopMass <= 0.5 || k.MeanBaseTopMass > 1+1e-6 {
			t.Fatalf("mean base top mass %v", k.MeanBaseTopMass)
		}
		for _, w := range rep.Windows {
			if w.MeanKLD == nil || *w.MeanKLD != 0 || *w.SameTop != 1 {
				t.Fatalf("window %+v", w)
			}
		}
		if len(rep.Warnings) != 0 {
			t.Fatalf("warnings %v", rep.Warnings)
		}
	}
}

func TestRunCompareMatchesBruteForce(t *testing.T) {
	tokens := randomTokens(4, 900, 48)
	a := newFake(48, 6, 5, 0)
	b := a.withNoise(0.15, 6)
	path, _ := recordBase(t, a, Request{Tokens: tokens, Ctx: 200, KLDTopK: 10})
	var events []Event
	rep, err := Run(context.Background(), b, Request{KLDBase: path, Progress: func(e Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := PlanWindows(len(tokens), Geometry{Ctx: 200})
	var sk, sfull, sdp float64
	same, n := 0, 0
	for _, w := range plan.Windows {
		in := w.Input(tokens, nil)
		ha, hb := a.hiddenRows(in), b.hiddenRows(in)
		for p := w.FirstRow; p <= w.LastRow(); p++ {
			ra, rb := a.logits(ha[p*a.h:(p+1)*a.h]), b.logits(hb[p*b.h:(p+1)*b.h])
			tgt := tokens[w.Begin+p+1]
			c, coarse, full := compareRows(ra, rb, tgt, 10)
			_ = c
			sk += coarse
			sfull += full
			la, lb := logSumExp64(ra), logSumExp64(rb)
			sdp += math.Exp(float64(rb[tgt])-lb) - math.Exp(float64(ra[tgt])-la)
			am, bm := 0, 0
			for j := range ra {
				if ra[j] > ra[am] {
					am = j
				}
				if rb[j] > rb[bm] {
					bm = j
				}
			}
			if am == bm {
				same++
			}
			n++
		}
	}
	k := rep.KLD
	if k.Tokens != n || !close(k.MeanKLD, sk/float64(n), 1e-4, 1e-7) || k.MeanKLD > sfull/float64(n) ||
		k.SameTop != float64(same)/float64(n) || !close(k.MeanDeltaP, sdp/float64(n), 1e-4, 1e-7) || k.TopK != 10 {
		t.Fatalf("kld %+v; reference mean KLD %v (full %v), same top %v, Δp %v",
			k, sk/float64(n), sfull/float64(n), float64(same)/float64(n), sdp/float64(n))
	}
	if k.MeanKLD <= 0 || k.SameTop == 1 {
		t.Fatalf("a perturbed model must differ: %+v", k)
	}
	if events[0].Kind != EventStarted || events[len(events)-1].Kind != EventFinished || len(events) != len(plan.Windows)+2 {
		t.Fatalf("events %d, kinds first %v last %v", len(events), events[0].Kind, events[len(events)-1].Kind)
	}
	last := events[len(events)-2]
	if last.KLD == nil || last.KLD.Tokens != n || !close(last.KLD.MeanKLD, k.MeanKLD, 1e-12, 0) ||
		last.WindowsDone != len(plan.Windows) || last.ScoredDone != n || last.Window == nil {
		t.Fatalf("last window event %+v", last)
	}
}

func TestRunRefusesMismatchedBase(t *testing.T) {
	f := newFake(64, 8, 3, 0)
	tokens := randomTokens(1, 1000, 64)
	path, _ := recordBase(t, f, Request{Tokens: tokens, Ctx: 128, Chunks: 5})
	other := append([]int32(nil), tokens...)
	other[500]++
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Tokens: other}, "token ids differ"},
		{Request{Text: "some other text entirely, long enough to not matter"}, "token ids differ"},
		{Request{Method: MethodSliding}, "method is chunks in the base, sliding in this run"},
		{Request{Ctx: 256}, "ctx is 128 in the base, 256 in this run"},
		{Request{Chunks: 7}, "holds the first 5 chunks (its chunk limit), this run asks for 7: give --perplexity-chunks 5 or less"},
		{Request{Stride: 64}, "stride is 128 in the base, 64 in this run"},
	} {
		c.req.KLDBase = path
		f.prefills = 0
		_, err := Run(context.Background(), f, c.req)
		if err == nil || !errors.Is(err, ErrBaseMismatch) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want ErrBaseMismatch with %q", c.req, err, c.want)
		}
		if f.prefills != 0 {
			t.Errorf("%+v: refused only after prefill started", c.req)
		}
	}
	// The same tokens given explicitly are accepted.
	full, err := Run(context.Background(), f, Request{KLDBase: path, Tokens: tokens, Ctx: 128, Chunks: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Fewer chunks than the base holds: its first ones, the same figures.
	first, err := Run(context.Background(), f, Request{KLDBase: path, Chunks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if first.WindowsScored != 3 || !slices.Contains(first.Warnings, "compared over the first 3 of the base's 5 windows") {
		t.Fatalf("3 of the base's 5 chunks: %d windows, warnings %q", first.WindowsScored, first.Warnings)
	}
	for i := range 3 {
		if a, b := first.Windows[i].MeanKLD, full.Windows[i].MeanKLD; a == nil || b == nil || *a != *b {
			t.Fatalf("window %d: KLD %v over 3 chunks, %v over all 5", i, a, b)
		}
	}
	// A truncated base is detected.
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, raw[:len(raw)-264], 0o644)
	if _, err := Run(context.Background(), f, Request{KLDBase: path}); !errors.Is(err, ErrBadBase) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated base: %v", err)
	}
}

func TestRunCancellationGivesPartialReport(t *testing.T) {
	dir := t.TempDir()
	f := newFake(64, 8, 3, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last Event
	done := 0
	req := Request{
		Tokens: randomTokens(2, 1000, 64), Ctx: 100, KLDBaseOut: filepath.Join(dir, "b.kld"),
		Progress: func(e Event) {
			last = e
			if e.Kind == EventWindowDone {
				if done++; done == 2 {
					cancel()
				}
			}
		},
	}
	rep, err := Run(ctx, f, req)
	if !errors.Is(err, ErrStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want ErrStopped wrapping context.Canceled", err)
	}
	if !rep.Partial || rep.WindowsScored != 2 || len(rep.Windows) != 2 || rep.WindowsTotal != 10 ||
		rep.ScoredTokens != 2*49 || !strings.Contains(rep.PartialReason, "stopped after 2 of 10 windows") ||
		!strings.Contains(rep.PartialReason, "base holds the 2 complete windows") || rep.KLDBaseOut != req.KLDBaseOut {
		t.Fatalf("partial report %+v", rep)
	}
	if last.Kind != EventFinished || !last.Partial {
		t.Fatalf("last event %+v", last)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a stopped run left %v, want its partial base alone", ents)
	}
	if _, err := rep.JSON(); err != nil {
		t.Fatal(err)
	}
}

// TestPartialBase: a recording stopped early (cancelled, or an engine
// failure mid-window) keeps its complete windows as a base marked partial;
// a comparison over at most that many windows works and gives what a
// comparison against the complete base gives over those windows; one that
// needs more is refused with both numbers.
func TestPartialBase(t *testing.T) {
	dir := t.TempDir()
	tokens := randomTokens(2, 1000, 64)
	f := newFake(64, 8, 3, 0)
	full := filepath.Join(dir, "full.kld")
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: full}); err != nil {
		t.Fatal(err)
	}

	stopped := filepath.Join(dir, "stopped.kld")
	ctx, cancel := context.WithCancel(context.Background())
	done := 0
	_, err := Run(ctx, f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: stopped, Progress: func(e Event) {
		if e.Kind == EventWindowDone {
			if done++; done == 3 {
				cancel()
			}
		}
	}})
	cancel()
	if !errors.Is(err, ErrStopped) {
		t.Fatal(err)
	}
	failed := filepath.Join(dir, "failed.kld")
	g := newFake(64, 8, 3, 0)
	g.failPrefill = 4
	if _, err := Run(context.Background(), g, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: failed}); err == nil {
		t.Fatal("induced failure did not fail")
	}
	// A failure after the window's first 128 records were appended: the
	// base is cut back to the complete window (199 records).
	cut := filepath.Join(dir, "cut.kld")
	g = newFake(64, 8, 3, 0)
	g.failHead = 4
	if _, err := Run(context.Background(), g, Request{Tokens: tokens, Ctx: 400, KLDBaseOut: cut}); err == nil {
		t.Fatal("induced head failure did not fail")
	}
	if b, err := OpenBase(cut); err != nil || !b.Header.Partial() || b.Header.Windows != 1 || b.Header.Scored != 199 {
		t.Fatalf("cut base: %v %+v", err, b)
	} else {
		b.Close()
	}
	if got, err := Run(context.Background(), f, Request{KLDBase: cut, Chunks: 1}); err != nil || got.KLD.MeanKLD != 0 || got.KLD.Tokens != 199 {
		t.Fatalf("against the cut base: %v", err)
	}

	for _, path := range []string{stopped, failed} {
		b, err := OpenBase(path)
		if err != nil {
			t.Fatal(err)
		}
		h := b.Header
		b.Close()
		if !h.Partial() || h.Windows != 3 || h.Scored != 3*49 || h.Meta.WindowsPlanned != 10 || h.ChunkLimit != 0 {
			t.Fatalf("%s: header %+v", path, h)
		}
		if raw, _ := os.ReadFile(path); int64(len(raw)) != baseSize(len(mustMeta(t, h.Meta)), &h) {
			t.Fatalf("%s: %d bytes", path, len(raw))
		}
		for _, chunks := range []int{1, 3} {
			got, err := Run(context.Background(), f, Request{KLDBase: path, Chunks: chunks})
			if err != nil {
				t.Fatalf("%s chunks %d: %v", path, chunks, err)
			}
			want, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Chunks: chunks})
			if err != nil {
				t.Fatal(err)
			}
			if got.KLD == nil || got.KLD.Tokens != chunks*49 || got.KLD.MeanKLD != 0 || got.MeanNLL != want.MeanNLL ||
				got.KLD.BasePerplexity != got.KLD.Perplexity || !strings.Contains(strings.Join(got.Warnings, "\n"), "partial") {
				t.Fatalf("%s chunks %d: report %+v kld %+v", path, chunks, got, got.KLD)
			}
		}
		for chunks, want := range map[int]string{0: "holding 3 windows, this run needs 10", 4: "holding 3 windows, this run needs 4"} {
			_, err := Run(context.Background(), f, Request{KLDBase: path, Chunks: chunks})
			if !errors.Is(err, ErrBaseMismatch) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s chunks %d: %v, want %q", path, chunks, err, want)
			}
		}
	}
	// The complete base is not partial, and gives a prefix too (issue 37:
	// a complete base allows scoring fewer chunks), saying so.
	b, err := OpenBase(full)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if b.Header.Partial() || b.Header.Meta.WindowsPlanned != 10 {
		t.Fatalf("full base header %+v", b.Header)
	}
	if got, err := Run(context.Background(), f, Request{KLDBase: full, Chunks: 3}); err != nil || got.KLD == nil || got.KLD.Tokens != 3*49 ||
		got.KLD.MeanKLD != 0 || !slices.Contains(got.Warnings, "compared over the first 3 of the base's 10 windows") {
		t.Errorf("complete base, chunks 3: %v, warnings %q", err, got.Warnings)
	}
	// Stopped before any window: nothing is kept.
	none := filepath.Join(dir, "none.kld")
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	rep, _ := Run(ctx, f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: none})
	if _, err := os.Stat(none); err == nil || rep.KLDBaseOut != "" || !strings.Contains(rep.PartialReason, "not written") {
		t.Errorf("no window: base %v, report %+v", err, rep)
	}
}

func mustMeta(t *testing.T, m BaseMeta) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRunEngineFailure(t *testing.T) {
	f := newFake(64, 8, 3, 0)
	f.failPrefill = 3
	rep, err := Run(context.Background(), f, Request{Tokens: randomTokens(2, 1000, 64), Ctx: 100})
	if err == nil || !strings.Contains(err.Error(), "induced failure") || errors.Is(err, ErrStopped) {
		t.Fatalf("error %v", err)
	}
	if !rep.Partial || rep.WindowsScored != 2 || !strings.Contains(rep.PartialReason, "failed in window 3 of 10") {
		t.Fatalf("report %+v", rep)
	}
}

func TestRunBadRequests(t *testing.T) {
	f := newFake(64, 8, 3, 0)
	f.kv = 256
	long := randomTokens(2, 2000, 64)
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{}, "nothing to score"},
		{Request{Text: "", TextPath: "empty.txt"}, "empty.txt: text is empty"},
		{Request{Text: "a", Tokens: []int32{1}}, "not both"},
		{Request{Tokens: long, Method: "rolling"}, `unknown method "rolling"`},
		{Request{Tokens: long, Ctx: 512}, "exceeds the KV cache capacity 256"},
		{Request{Tokens: []int32{1, 2, 3, 64}, Ctx: 2}, "token 64 at index 3 is outside the vocabulary (size 64)"},
		{Request{Tokens: []int32{1, -2, 3}, Ctx: 2}, "token -2 at index 1"},
		{Request{Tokens: long, Ctx: 128, KLDBaseOut: filepath.Join(t.TempDir(), "x"), KLDTopK: 1025}, "kld_top_k 1025 out of range"},
		{Request{Text: "short text", TextPath: "short.txt", Ctx: 64}, "short.txt: too few tokens: text tokenizes to 10 tokens; method chunks at ctx 64 needs at least 128"},
		{Request{Tokens: long, KLDBase: filepath.Join(t.TempDir(), "missing.kld")}, "missing.kld"},
	} {
		f.prefills = 0
		_, err := Run(context.Background(), f, c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.req, err, c.want)
		}
		if f.prefills != 0 {
			t.Errorf("%q: prefill ran before the refusal", c.want)
		}
	}
	small := newFake(20, 4, 1, 0)
	_, err := Run(context.Background(), small, Request{Tokens: randomTokens(1, 300, 20), Ctx: 64,
		KLDBaseOut: filepath.Join(t.TempDir(), "b"), KLDTopK: 21})
	if err == nil || !strings.Contains(err.Error(), "exceeds the vocabulary size 20") {
		t.Fatalf("top-k over vocab: %v", err)
	}
}

// TestReportJSONFields checks the report carries every field issue 3 and
// issue 4 name, spelled exactly.
func TestReportJSONFields(t *testing.T) {
	f := newFake(64, 8, 3, 0)
	tokens := randomTokens(1, 600, 64)
	path, _ := recordBase(t, f, Request{Tokens: tokens, Ctx: 128})
	rep, err := Run(context.Background(), f.withNoise(0.1, 2), Request{KLDBase: path, IncludeTokenIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	need := func(obj map[string]any, where string, keys ...string) {
		for _, k := range keys {
			if _, ok := obj[k]; !ok {
				t.Errorf("%s: missing %q", where, k)
			}
		}
	}
	need(m, "report", "object", "tokens", "token_ids_sha256", "method", "ctx", "stride", "windows_scored",
		"scored_tokens", "mean_nll", "perplexity", "perplexity_uncertainty", "elapsed_seconds", "prefill_tokens",
		"prefill_tokens_per_second", "prefill_attention_kept", "config", "windows", "token_ids", "kld",
		"text_bytes", "bits_per_byte", "bits_per_byte_uncertainty")
	if m["object"] != "lse.perplexity" {
		t.Errorf("object %v", m["object"])
	}
	need(m["config"].(map[string]any), "config", "device_arch", "prefill_attention", "prefill_attention_scale",
		"kv_cache_dtype", "kv_capacity", "batch_size", "ubatch_size", "head_rows", "cpu_fallback_allowed",
		"threads", "backend", "model")
	need(m["windows"].([]any)[0].(map[string]any), "window", "index", "begin", "end", "first_target", "scored",
		"nll_sum", "nll_sum_sq", "mean_nll", "perplexity", "seconds", "attention_kept", "mean_kld", "same_top",
		"text_bytes", "bits_per_byte")
	need(m["kld"].(map[string]any), "kld", "base", "top_k", "tokens", "base_perplexity", "perplexity",
		"delta_perplexity", "perplexity_ratio", "mean_log_ratio", "mean_log_ratio_uncertainty", "mean_kld",
		"mean_kld_uncertainty", "kld_p99", "kld_max", "same_top", "same_top_uncertainty", "mean_delta_p",
		"mean_delta_p_uncertainty", "rms_delta_p", "mean_base_top_mass", "ppl_correlation", "top5_agreement",
		"mean_kld_uncertainty_cr1", "kld_percentiles", "delta_p_percentiles", "nonfinite_tokens", "histogram")
	if _, ok := m["partial"]; ok {
		t.Error("a complete run must not say partial")
	}
	if len(m["token_ids"].([]any)) != 600 {
		t.Error("token_ids")
	}
	no := false
	rep, _ = Run(context.Background(), f, Request{Tokens: tokens, Ctx: 128, IncludeWindows: &no})
	b, _ = rep.JSON()
	if strings.Contains(string(b), `"windows"`) || strings.Contains(string(b), `"token_ids"`) {
		t.Error("include_windows=false / include_token_ids=false still wrote them")
	}
}

// TestRunProgressHeldTime: time the Progress callback holds the run (a
// paused TUI) is reported and left out of the prefill rate.
func TestRunProgressHeldTime(t *testing.T) {
	const hold = 20 * time.Millisecond
	f := newFake(64, 8, 3, 0)
	req := Request{
		Tokens: randomTokens(2, 400, 64), Ctx: 100,
		Progress: func(e Event) {
			if e.Kind == EventWindowDone {
				time.Sleep(hold)
			}
		},
	}
	rep, err := Run(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	if held := rep.ProgressHeldSeconds; held < 4*hold.Seconds() || held > rep.ElapsedSeconds {
		t.Fatalf("progress held %.3fs of %.3fs, want at least %v", held, rep.ElapsedSeconds, 4*hold)
	}
	working := rep.ElapsedSeconds - rep.ProgressHeldSeconds
	if got := rep.PrefillTokensPerSecond * working; math.Abs(got-float64(rep.PrefillTokens)) > 1e-6*float64(rep.PrefillTokens) {
		t.Fatalf("rate × working time = %v, want the %d prefill tokens", got, rep.PrefillTokens)
	}
}

// TestRunAttentionKept checks that each window's attention_kept is the
// engine's count for that window's prefill, the report's
// prefill_attention_kept their pooled fraction, and the progress events
// carry the running fraction.
func TestRunAttentionKept(t *testing.T) {
	f := newFake(40, 4, 5, 0)
	f.sparse = true
	var last Event
	rep, err := Run(context.Background(), f, Request{Tokens: randomTokens(41, 1200, 40), Ctx: 100,
		Progress: func(e Event) {
			if e.Kind == EventWindowDone {
				last = e
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var kept, total int64
	for i, w := range rep.Windows {
		k := int64(f.firstTokens[i]%4 + 1)
		kept, total = kept+k, total+8
		if w.AttentionKept != float64(k)/8 {
			t.Errorf("window %d: attention_kept %v, want %v", i, w.AttentionKept, float64(k)/8)
		}
	}
	want := float64(kept) / float64(total)
	if rep.PrefillAttentionKept != want || last.AttentionKept != want {
		t.Errorf("prefill_attention_kept %v, last event %v; want %v", rep.PrefillAttentionKept, last.AttentionKept, want)
	}
	if want == 1 || want == rep.Windows[0].AttentionKept {
		t.Fatalf("the fake's counts do not vary: %v", want)
	}
}

// TestEventJSONRoundTrip: an event's JSON (a --progress jsonl line) reads
// back as the same event, durations to the nanosecond's float rounding.
func TestEventJSONRoundTrip(t *testing.T) {
	f := newFake(40, 6, 1, 0)
	var evs []Event
	tokens := randomTokens(1, 400, 40)
	ref := filepath.Join(t.TempDir(), "ref.kld")
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: ref}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), f, Request{KLDBase: ref, Progress: func(e Event) { evs = append(evs, e) }}); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back Event
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if d := back.Elapsed - e.Elapsed; d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("elapsed %v read back as %v", e.Elapsed, back.Elapsed)
		}
		back.Elapsed, back.ETA, e.Elapsed, e.ETA = 0, 0, 0, 0
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("event %+v read back as %+v from %s", e, back, data)
		}
		if e.Kind == EventWindowDone && (!strings.Contains(string(data), `"event":"window_done"`) || !strings.Contains(string(data), `"kld":{"tokens":`)) {
			t.Fatalf("window event JSON %s", data)
		}
	}
}

// TestRunTopK256Base: a top-256 base holds 8 + 8·256 bytes per scored
// token beside its fixed part, a model compared with it gives exactly 0,
// and a journal resumes its recording to the same base.
func TestRunTopK256Base(t *testing.T) {
	const k = 256
	f := newFake(300, 8, 5, 0)
	tokens := randomTokens(6, 700, 300)
	path, base := recordBase(t, f, Request{Tokens: tokens, Ctx: 128, KLDTopK: k})
	st, _ := os.Stat(path)
	raw, _ := os.ReadFile(path)
	fixed := int64(100) + int64(raw[96]) + int64(raw[97])<<8 + 4*int64(base.Tokens) + 32
	if BaseRecordBytes(k) != 2056 || st.Size() != fixed+2056*int64(base.ScoredTokens) {
		t.Fatalf("base size %d, want %d + 2056 × %d", st.Size(), fixed, base.ScoredTokens)
	}
	rep, err := Run(context.Background(), f, Request{KLDBase: path})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.KLD; c.TopK != k || c.MeanKLD != 0 || c.KLDMax != 0 || c.SameTop != 1 || c.NonFiniteTokens != 0 {
		t.Fatalf("self-compare against the top-%d base: %+v", k, c)
	}
	if g, err := Run(context.Background(), f.withNoise(0.1, 3), Request{KLDBase: path}); err != nil || g.KLD.MeanKLD <= 0 {
		t.Fatalf("another model against it: %v, %+v", err, g.KLD)
	}

	again := filepath.Join(t.TempDir(), "again.kld")
	req := Request{Tokens: tokens, Ctx: 128, KLDTopK: k, KLDBaseOut: again, Journal: again + ".journal"}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := req
	stopped.Progress = stopAfter(2, cancel)
	if _, err := Run(ctx, f, stopped); !errors.Is(err, ErrStopped) {
		t.Fatalf("stopped run: %v", err)
	}
	cancel()
	req.Resume = true
	if _, err := Run(context.Background(), f, req); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(again)
	if !bytes.Equal(b, raw) {
		t.Error("the resumed top-256 base differs from the one recorded in one go")
	}
}
