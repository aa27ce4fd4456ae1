package scoring

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTopCodes: the k largest codes, descending, lower index first among
// ties, against a stable sort; with many ties and k beyond the row.
func TestTopCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		v := 1 + r.IntN(90)
		q := make([]uint16, v)
		span := []int{3, 50, 65536}[trial%3]
		for j := range q {
			q[j] = uint16(r.IntN(span))
		}
		k := 1 + r.IntN(40)
		got := topCodes(q, make([]int32, k))
		idx := make([]int32, v)
		for j := range idx {
			idx[j] = int32(j)
		}
		slices.SortStableFunc(idx, func(a, b int32) int { return int(q[b]) - int(q[a]) })
		if want := idx[:min(k, v)]; !slices.Equal(got, want) {
			t.Fatalf("v=%d k=%d: got %v, want %v (codes %v)", v, k, got, want, q)
		}
	}
}

// coarsenedRef is the top-k KLD of a run's logits against a llama.cpp row,
// written out from the definition in float64: the row's k most likely ids
// (decoded as llama.cpp decodes them), the rest one outcome.
func coarsenedRef(k int, logits []float32, row *LlamaRow) float64 {
	v := len(logits)
	idx := make([]int, v)
	for j := range idx {
		idx[j] = j
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(row.Q[b]) - int(row.Q[a]) })
	lse := logSumExp64(logits)
	var kld, pr, qr float64
	for i, j := range idx {
		lp := float64(row.LogProb(j))
		lq := float64(float32(float64(logits[j]) - lse))
		p := math.Exp(lp)
		if lp <= -llamaLogRange {
			p = 0 // clamped by the row: left out, as llama.cpp's full KLD does
		}
		if i >= k || p == 0 {
			pr, qr = pr+p, qr+math.Exp(lq)
			continue
		}
		kld += p * (lp - lq)
	}
	if k < v && pr > 0 {
		kld += pr * math.Log(pr/qr)
	}
	return kld
}

// TestCoarsenedKLD: the top-k KLD against a llama.cpp row matches the
// definition, never exceeds the full-vocabulary KLD by more than the
// rounding of the row (coarsening loses information), and at k = V is the
// full KLD over the same ids.
func TestCoarsenedKLD(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		v := 2 + r.IntN(200)
		base, run := make([]float32, v), make([]float32, v)
		for j := range base {
			base[j] = float32(3 * r.NormFloat64())
			run[j] = base[j] + float32(0.3*r.NormFloat64())
		}
		row := encodeRow(base)
		mx, arg := slices.Max(run), int32(slices.Index(run, slices.Max(run)))
		var s float64
		for _, l := range run {
			s += float64(expf(l - mx))
		}
		target := int32(r.IntN(v))
		c := CompareFull(target, run, mx, arg, s, row)
		for _, k := range []int{1, 5, 32, v} {
			ids, bl, rl := make([]int32, k), make([]float32, k), make([]float32, k)
			got := CoarsenedKLD(k, run, mx, arg, s, row, c.NLL, c.BaseNLL, ids, bl, rl)
			want := coarsenedRef(k, run, row)
			if !close(got, want, 1e-5, 1e-7) {
				t.Fatalf("trial %d v=%d k=%d: %v, definition %v", trial, v, k, got, want)
			}
			// Coarsening a distribution never raises its KL divergence;
			// the decoded row sums to 1 only within its 16-bit rounding
			// (mass error δ), which the lumped rest absorbs: its term
			// pr·ln(pr/qr) moves by at most δ·(1 + |ln(pr/qr)|).
			if bound := c.KLD + restSlack(k, run, row); got > bound {
				t.Fatalf("trial %d v=%d k=%d: top-k KLD %v above the full KLD %v (bound %v)", trial, v, k, got, c.KLD, bound)
			}
		}
	}
}

// restSlack bounds how far the decoded row's mass error can move the
// lumped rest's term of a top-k KLD (see TestCoarsenedKLD).
func restSlack(k int, logits []float32, row *LlamaRow) float64 {
	idx := topCodes(row.Q, make([]int32, k))
	lse := logSumExp64(logits)
	var mass, ps, qs float64
	for j := range row.Q {
		mass += math.Exp(float64(row.LogProb(j)))
	}
	for _, j := range idx {
		ps += math.Exp(float64(row.LogProb(int(j))))
		qs += math.Exp(float64(logits[j]) - lse)
	}
	d := math.Abs(1 - mass)
	pr, qr := max(1-ps, d), max(1-qs, 1e-300)
	return d*(1+math.Abs(math.Log(pr/qr))) + 1e-7
}

// encodeRow is a llama.cpp base row of a logit row.
func encodeRow(logits []float32) *LlamaRow {
	mx := slices.Max(logits)
	var s float64
	for _, l := range logits {
		s += float64(expf(l - mx))
	}
	rec := make([]byte, 2*llamaRowWords(len(logits)))
	EncodeLlamaRow(logits, mx, s, rec)
	le := binary.LittleEndian
	row := &LlamaRow{Scale: math.Float32frombits(le.Uint32(rec)), MinLP: math.Float32frombits(le.Uint32(rec[4:])),
		Q: make([]uint16, len(logits))}
	for j := range row.Q {
		row.Q[j] = le.Uint16(rec[8+2*j:])
	}
	return row
}

// TestRunCoarsened: a run against a llama.cpp base with CoarsenTopK gives
// the full and top-k KLDs of the same tokens (the full one equal to the
// run's kld.mean_kld, the top-k one the mean of the definition's), and it
// is refused without a llama.cpp base, with a journal or as a shard.
func TestRunCoarsened(t *testing.T) {
	dir := t.TempDir()
	a := newFake(48, 6, 31, 0)
	b := a.withNoise(0.2, 32)
	tokens := randomTokens(3, 700, 48)
	full := filepath.Join(dir, "a.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: full, KLDBaseFormat: BaseFormatLlama}); err != nil {
		t.Fatal(err)
	}
	const k = 4
	rep, err := Run(context.Background(), b, Request{KLDBase: full, CoarsenTopK: k})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.KLD.TopKCoarsened
	if c == nil || c.TopK != k || c.Tokens != rep.KLD.Tokens {
		t.Fatalf("top_k_coarsened %+v for %d tokens", c, rep.KLD.Tokens)
	}
	if !close(c.MeanFullKLD, rep.KLD.MeanKLD, 1e-12, 0) {
		t.Errorf("full KLD %v, the run's mean KLD %v", c.MeanFullKLD, rep.KLD.MeanKLD)
	}
	base, err := OpenBase(full)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	plan, _ := PlanWindows(len(tokens), Geometry{Ctx: 100})
	var sum float64
	n := 0
	row := LlamaRow{}
	for _, w := range plan.Windows {
		in := w.Input(tokens, nil)
		for p := w.FirstRow; p <= w.LastRow(); p++ {
			if err := base.NextLlama(&row); err != nil {
				t.Fatal(err)
			}
			sum += coarsenedRef(k, b.fullLogits(in, p), &row)
			n++
		}
	}
	if !close(c.MeanTopKKLD, sum/float64(n), 1e-5, 1e-9) || c.MeanTopKKLD <= 0 || c.MeanTopKKLD > c.MeanFullKLD {
		t.Errorf("top-%d KLD %v (full %v), definition %v", k, c.MeanTopKKLD, c.MeanFullKLD, sum/float64(n))
	}
	if !close(c.MeanMissedKLD, c.MeanFullKLD-c.MeanTopKKLD, 1e-9, 1e-15) || !close(c.SeenFraction, c.MeanTopKKLD/c.MeanFullKLD, 1e-12, 0) {
		t.Errorf("missed %v, seen %v for full %v and top-k %v", c.MeanMissedKLD, c.SeenFraction, c.MeanFullKLD, c.MeanTopKKLD)
	}

	top := filepath.Join(dir, "a-top.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: top}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		req  Request
		want string
	}{
		{Request{KLDBase: top, CoarsenTopK: k}, "needs a llama.cpp base"},
		{Request{Tokens: tokens, Ctx: 100, CoarsenTopK: k}, "needs a llama.cpp base"},
		{Request{KLDBase: full, CoarsenTopK: k, Journal: filepath.Join(dir, "j")}, "journal"},
		{Request{KLDBase: full, CoarsenTopK: k, Shard: ShardSpec{I: 0, N: 2}}, "shards"},
		{Request{KLDBase: full, CoarsenTopK: MaxTopK + 1}, "out of range"},
	} {
		if _, err := Run(context.Background(), b, bad.req); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want an error saying %q", bad.req, err, bad.want)
		}
	}
}
