package scoring

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestChunksGeometry(t *testing.T) {
	for _, c := range []struct{ n, ctx, chunks, wantWin int }{
		{1024, 512, 0, 2}, {1535, 512, 0, 2}, {1536, 512, 0, 3}, {7786, 128, 0, 60},
		{7786, 128, 10, 10}, {7786, 128, 100, 60}, {7786, 64, 0, 121}, {10, 5, 0, 2}, {4, 2, 0, 2},
	} {
		for _, bos := range []bool{false, true} {
			p, err := PlanWindows(c.n, Geometry{Ctx: c.ctx, Chunks: c.chunks, AddBOS: bos, BOS: 7})
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			if len(p.Windows) != c.wantWin || p.Method != MethodChunks || p.Stride != c.ctx {
				t.Fatalf("%+v: %d windows (%s stride %d), want %d", c, len(p.Windows), p.Method, p.Stride, c.wantWin)
			}
			first := c.ctx / 2
			per := c.ctx - 1 - first
			if p.Scored != per*c.wantWin || p.PrefillToks != c.ctx*c.wantWin {
				t.Fatalf("%+v: scored %d prefill %d", c, p.Scored, p.PrefillToks)
			}
			for i, w := range p.Windows {
				if w.Index != i || w.Begin != i*c.ctx || w.End != (i+1)*c.ctx || w.Scored != per ||
					w.FirstRow != first || w.FirstTarget != w.Begin+first+1 || w.LastRow() != c.ctx-2 ||
					w.SubstituteBOS != bos {
					t.Fatalf("%+v: window %d = %+v", c, i, w)
				}
			}
		}
	}
	// llama.cpp: 255 scored per chunk at 512, 2047 at 4096; first target 257.
	p, _ := PlanWindows(4096, Geometry{Ctx: 512})
	if p.Windows[0].Scored != 255 || p.Windows[0].FirstTarget != 257 {
		t.Fatalf("ctx 512: %+v", p.Windows[0])
	}
	p, _ = PlanWindows(8192, Geometry{Ctx: 4096})
	if p.Windows[0].Scored != 2047 {
		t.Fatalf("ctx 4096: %+v", p.Windows[0])
	}
}

func TestWindowInputBOS(t *testing.T) {
	toks := randomTokens(1, 40, 50)
	p, err := PlanWindows(len(toks), Geometry{Ctx: 10, AddBOS: true, BOS: 99})
	if err != nil {
		t.Fatal(err)
	}
	orig := append([]int32(nil), toks...)
	var buf []int32
	for _, w := range p.Windows {
		buf = w.Input(toks, buf)
		if len(buf) != 10 || buf[0] != 99 {
			t.Fatalf("window %d input %v", w.Index, buf)
		}
		for i := 1; i < 10; i++ {
			if buf[i] != toks[w.Begin+i] {
				t.Fatalf("window %d input[%d] = %d, want %d", w.Index, i, buf[i], toks[w.Begin+i])
			}
		}
	}
	for i := range toks {
		if toks[i] != orig[i] {
			t.Fatal("Input modified the token stream")
		}
	}
	p, _ = PlanWindows(len(toks), Geometry{Ctx: 10})
	buf = p.Windows[1].Input(toks, buf)
	if buf[0] != toks[10] {
		t.Fatal("without add-BOS the first token must be kept")
	}
}

// TestSlidingGeometry checks issue 3's promises on random sizes: each
// target is scored at most once, by the first window that holds it;
// stride < ctx scores every token but the text's first exactly once with
// at least ctx−stride tokens of context after the first window; stride ==
// ctx scores every token of each window but its first.
func TestSlidingGeometry(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for it := 0; it < 400; it++ {
		ctx := 2 + r.IntN(40)
		stride := 1 + r.IntN(ctx)
		if it%4 == 0 {
			stride = ctx
		}
		n := 2*ctx + r.IntN(5*ctx)
		p, err := PlanWindows(n, Geometry{Method: MethodSliding, Ctx: ctx, Stride: stride, AddBOS: true, BOS: 3})
		if err != nil {
			t.Fatalf("n=%d ctx=%d stride=%d: %v", n, ctx, stride, err)
		}
		seen := make([]int, n)
		total := 0
		for i, w := range p.Windows {
			if w.Index != i || w.Begin != i*stride && !(stride == ctx && w.Begin%ctx == 0) {
				t.Fatalf("ctx=%d stride=%d: window %d begins at %d", ctx, stride, i, w.Begin)
			}
			if w.Len() > ctx || w.Len() < 2 || w.End > n || !w.SubstituteBOS || w.BOSID != 3 {
				t.Fatalf("ctx=%d stride=%d: window %+v", ctx, stride, w)
			}
			if w.FirstTarget != w.Begin+w.FirstRow+1 || w.LastRow() != w.Len()-2 {
				t.Fatalf("ctx=%d stride=%d: rows of %+v", ctx, stride, w)
			}
			if stride == ctx && w.FirstTarget != w.Begin+1 {
				t.Fatalf("stride==ctx: window %+v does not score all but its first", w)
			}
			for tgt := w.FirstTarget; tgt < w.End; tgt++ {
				seen[tgt]++
				if i > 0 && stride < ctx && tgt-w.Begin < ctx-stride {
					t.Fatalf("ctx=%d stride=%d: target %d has context %d < %d", ctx, stride, tgt, tgt-w.Begin, ctx-stride)
				}
			}
			total += w.Scored
		}
		if total != p.Scored {
			t.Fatalf("scored %d, windows sum to %d", p.Scored, total)
		}
		for tgt, c := range seen {
			want := 1
			if tgt == 0 || (stride == ctx && tgt%ctx == 0) {
				want = 0
			}
			if c != want {
				t.Fatalf("n=%d ctx=%d stride=%d: token %d scored %d times, want %d", n, ctx, stride, tgt, c, want)
			}
		}
	}
}

func TestSlidingChunkLimit(t *testing.T) {
	p, err := PlanWindows(1000, Geometry{Method: MethodSliding, Ctx: 100, Stride: 50, Chunks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Windows) != 3 || p.WindowsMax != 19 || p.Scored != 99+50+50 {
		t.Fatalf("limit 3: %d windows of %d, %d scored", len(p.Windows), p.WindowsMax, p.Scored)
	}
}

func TestGeometryErrors(t *testing.T) {
	for _, c := range []struct {
		n    int
		g    Geometry
		want string
	}{
		{1023, Geometry{Ctx: 512}, "text tokenizes to 1023 tokens; method chunks at ctx 512 needs at least 1024"},
		{100, Geometry{Method: MethodSliding, Ctx: 64}, "method sliding at ctx 64 needs at least 128"},
		{5000, Geometry{Ctx: 1024, KVCapacity: 512}, "ctx 1024 exceeds the KV cache capacity 512"},
		{5000, Geometry{Ctx: 0}, "ctx must be > 0"},
		{5000, Geometry{Ctx: 1}, "needs ctx >= 2"},
		{5000, Geometry{Method: "window", Ctx: 64}, `unknown method "window"`},
		{5000, Geometry{Ctx: 64, Stride: 32}, "stride 32 applies to method sliding only"},
		{5000, Geometry{Method: MethodSliding, Ctx: 64, Stride: 65}, "stride 65 out of range"},
	} {
		_, err := PlanWindows(c.n, c.g)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want %q", c.g, err, c.want)
		}
	}
	_, err := PlanWindows(10, Geometry{Ctx: 512})
	if !errors.Is(err, ErrTooFewTokens) {
		t.Fatalf("short text: %v is not ErrTooFewTokens", err)
	}
}
