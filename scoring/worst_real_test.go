package scoring_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"plexbench/engine"
	"plexbench/scoring"
)

// logitsAt is the model's full logit row at window position p of input,
// through Prefill and a head reduction picking every id.
func logitsAt(t *testing.T, m *engine.Model, input []int32, p int) []float32 {
	t.Helper()
	h := m.Info().HiddenSize
	var row []float32
	err := m.Prefill(context.Background(), input, p, func(pos int, hidden []float32, n int) error {
		if pos <= p && p < pos+n && row == nil {
			row = slices.Clone(hidden[(p-pos)*h : (p-pos+1)*h])
		}
		return nil
	})
	if err != nil || row == nil {
		t.Fatalf("prefill to row %d: %v", p, err)
	}
	v := m.Info().VocabSize
	req := engine.RowRequest{IDs: make([]int32, v)}
	for j := range req.IDs {
		req.IDs[j] = int32(j)
	}
	res := engine.RowResult{Picked: make([]float32, v)}
	if err := m.HeadReduce(row, 1, []engine.RowRequest{req}, []engine.RowResult{res}); err != nil {
		t.Fatal(err)
	}
	return res.Picked
}

// directKLD is KL(base ‖ run) over the base's k most likely ids plus the
// rest, in float64 from the two logit rows, with both NLLs and argmaxes.
func directKLD(base, run []float32, target int32, k int) (kld, nll, baseNLL float64, baseTop, runTop int32) {
	lse := func(row []float32) float64 {
		m := float64(slices.Max(row))
		var s float64
		for _, l := range row {
			s += math.Exp(float64(l) - m)
		}
		return m + math.Log(s)
	}
	lb, lr := lse(base), lse(run)
	ids := make([]int32, len(base))
	for j := range ids {
		ids[j] = int32(j)
	}
	slices.SortStableFunc(ids, func(a, b int32) int { // descending, lower id first among ties
		switch {
		case base[a] > base[b]:
			return -1
		case base[a] < base[b]:
			return 1
		}
		return 0
	})
	var ps, qs float64
	for _, id := range ids[:k] {
		p, q := math.Exp(float64(base[id])-lb), math.Exp(float64(run[id])-lr)
		kld += p * math.Log(p/q)
		ps, qs = ps+p, qs+q
	}
	if pr, qr := 1-ps, 1-qs; pr > 0 {
		kld += pr * math.Log(pr/qr)
	}
	runTop = int32(slices.Index(run, slices.Max(run)))
	return kld, lr - float64(run[target]), lb - float64(base[target]), ids[0], runTop
}

// TestRealWorstTokens: `worst` on stories260K q4_0 against the f32 base.
// Each of the 20 tokens of largest KLD has the KLD, NLLs and top ids a
// direct float64 computation from the two models' logit rows gives, and
// its excerpt is the text's own bytes around the token.
func TestRealWorstTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real engine over 60 chunks twice")
	}
	dir := realData(t)
	text := readText(t, filepath.Join(dir, "tinystories", "tinystories-16k.txt"))
	base := filepath.Join(t.TempDir(), "f32.kld")
	f32, q4 := loadModel(t, dir, "f32"), loadModel(t, dir, "q4_0")
	if _, err := scoring.Run(context.Background(), f32, scoring.Request{Text: text, Ctx: 128, KLDBaseOut: base}); err != nil {
		t.Fatal(err)
	}
	rep, err := scoring.Run(context.Background(), q4, scoring.Request{KLDBase: base})
	if err != nil {
		t.Fatal(err)
	}
	l, err := scoring.Worst(rep.Trace, scoring.WorstByKLD, 20)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := f32.Tokenize(text)
	offsets := []int{0}
	for _, n := range f32.TokenBytes(tokens) {
		offsets = append(offsets, offsets[len(offsets)-1]+int(n))
	}
	info := f32.Info()
	plan, _ := scoring.PlanWindows(len(tokens), scoring.Geometry{Ctx: 128, AddBOS: info.AddBOS, BOS: info.BOS})
	for i, x := range l.Tokens {
		w := plan.Windows[x.Window]
		in := w.Input(tokens, nil)
		kld, nll, baseNLL, baseTop, runTop := directKLD(logitsAt(t, f32, in, x.Position-1), logitsAt(t, q4, in, x.Position-1), tokens[x.Index], 32)
		if i < 3 {
			t.Logf("#%d window %d pos %d: kld %.7f (direct %.7f), %q⟦%q⟧%q", i+1, x.Window, x.Position, *x.KLD, kld, x.TextBefore, x.Token, x.TextAfter)
		}
		if x.Index != w.Begin+x.Position || math.Abs(*x.KLD-kld) > 1e-5*kld+1e-6 ||
			math.Abs(x.NLL-nll) > 1e-5*nll+1e-6 || math.Abs(*x.BaseNLL-baseNLL) > 1e-5*baseNLL+1e-6 ||
			*x.BaseTopID != baseTop || x.RunTopID != runTop {
			t.Errorf("#%d (window %d pos %d): kld %v nll %v base %v tops %d/%d; direct %v %v %v %d/%d",
				i+1, x.Window, x.Position, *x.KLD, x.NLL, *x.BaseNLL, *x.BaseTopID, x.RunTopID, kld, nll, baseNLL, baseTop, runTop)
		}
		off := offsets[x.Index]
		if got := text[off-len(x.TextBefore) : off+len(x.Token)+len(x.TextAfter)]; got != x.TextBefore+x.Token+x.TextAfter || x.Token == "" {
			t.Errorf("#%d: excerpt %q⟦%q⟧%q, the text there %q", i+1, x.TextBefore, x.Token, x.TextAfter, got)
		}
		if i > 0 && *x.KLD > *l.Tokens[i-1].KLD {
			t.Errorf("#%d: kld %v above #%d's %v", i+1, *x.KLD, i, *l.Tokens[i-1].KLD)
		}
	}
}
