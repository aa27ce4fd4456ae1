package scoring

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"plexbench/kernels"
)

func close(a, b, rel, abs float64) bool {
	return math.Abs(a-b) <= abs+rel*math.Max(math.Abs(a), math.Abs(b))
}

func logSumExp64(row []float32) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

func randRow(r *rand.Rand, v int, scale float64) []float32 {
	row := make([]float32, v)
	for i := range row {
		row[i] = float32(r.NormFloat64() * scale)
	}
	return row
}

func TestNLLMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, v := range []int{2, 17, 1000, 32000} {
		for range 20 {
			row := randRow(r, v, 5)
			tgt := int32(r.IntN(v))
			picked := []float32{0}
			mx, _, s := kernels.Pick(row, []int32{tgt}, picked)
			got := NLL(picked[0], mx, s)
			want := logSumExp64(row) - float64(row[tgt])
			if !close(got, want, 1e-6, 1e-6) {
				t.Fatalf("V=%d: NLL %v, float64 reference %v", v, got, want)
			}
		}
	}
}

func TestNLLStatsResult(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var s, a, b NLLStats
	var xs []float64
	for i := range 5000 {
		x := -math.Log(r.Float64())
		xs = append(xs, x)
		s.Add(x)
		if i%3 == 0 {
			a.Add(x)
		} else {
			b.Add(x)
		}
	}
	a.Merge(b)
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	se := math.Sqrt(ss / float64(len(xs)) / float64(len(xs)-1))
	for _, res := range []PPLResult{s.Result(), a.Result()} {
		if res.N != 5000 || !close(res.MeanNLL, mean, 1e-12, 0) || !close(res.Perplexity, math.Exp(mean), 1e-12, 0) ||
			!close(res.Uncertainty, math.Exp(mean)*se, 1e-9, 0) {
			t.Fatalf("result %+v, want mean %v ppl %v ± %v", res, mean, math.Exp(mean), math.Exp(mean)*se)
		}
	}
	if (NLLStats{}).Result() != (PPLResult{}) {
		t.Fatal("empty stats must give zeros")
	}
}

func TestPercentileAndMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 2, 3, 10, 101, 1000} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		slices.Sort(v)
		for _, f := range []float32{0.001, 0.01, 0.05, 0.1, 0.25, 0.75, 0.9, 0.95, 0.99, 0.999} {
			x := float64(f) * float64(n-1)
			i := int(x)
			j := min(i+1, n-1)
			want := (1-(x-float64(i)))*float64(v[i]) + (x-float64(i))*float64(v[j])
			if got := Percentile(v, f); !close(float64(got), want, 1e-5, 1e-6) {
				t.Fatalf("n=%d P(%v) = %v, want %v", n, f, got, want)
			}
		}
		if Percentile(v, 0) != v[0] || Percentile(v, 1) != v[n-1] || Percentile(v, -1) != v[0] {
			t.Fatalf("n=%d: ends wrong", n)
		}
		want := float64(v[n/2])
		if n%2 == 0 {
			want = (float64(v[n/2]) + float64(v[n/2-1])) / 2
		}
		if got := Median(v); !close(float64(got), want, 1e-6, 1e-7) {
			t.Fatalf("n=%d median %v want %v", n, got, want)
		}
	}
	if Percentile(nil, 0.5) != 0 || Median(nil) != 0 {
		t.Fatal("empty percentile")
	}
	// Median of an even count is the mean of the middle pair, not P(0.5)'s rank.
	if Median([]float32{1, 2, 3, 10}) != 2.5 {
		t.Fatal("median of 1,2,3,10")
	}
}

// compareRows compares a run row q against a base row b as Run does, and
// returns the result with the brute-force full-vocabulary distributions.
func compareRows(b, q []float32, tgt int32, k int) (TokenComparison, float64, float64) {
	v := len(b)
	k = min(k, v)
	ids := make([]int32, k)
	tl := make([]float32, k)
	kernels.TopK(b, k, ids, tl)
	bp := []float32{0}
	bmax, _, bs := kernels.Pick(b, []int32{tgt}, bp)
	blp := make([]float32, k)
	for i := range k {
		blp[i] = LogProb(tl[i], bmax, math.Log(bs))
	}
	req := append([]int32{tgt}, ids...)
	qp := make([]float32, len(req))
	qmax, qarg, qs := kernels.Pick(q, req, qp)
	qlp := make([]float32, k)
	for i := range k {
		qlp[i] = LogProb(qp[1+i], qmax, math.Log(qs))
	}
	c := CompareToken(NLL(qp[0], qmax, qs), NLL(bp[0], bmax, bs), qarg, ids, blp, qlp, k >= v)

	// float64 references: the coarsened KLD and the full-vocabulary KLD.
	lb, lq := logSumExp64(b), logSumExp64(q)
	var coarse, full, ps, qsum float64
	in := map[int32]bool{}
	for _, id := range ids {
		in[id] = true
		p, qq := math.Exp(float64(b[id])-lb), math.Exp(float64(q[id])-lq)
		coarse += p * math.Log(p/qq)
		ps += p
		qsum += qq
	}
	var pr, qr float64
	for j := range v {
		p, qq := math.Exp(float64(b[j])-lb), math.Exp(float64(q[j])-lq)
		full += p * math.Log(p/qq)
		if !in[int32(j)] {
			pr += p
			qr += qq
		}
	}
	if pr > 0 {
		coarse += pr * math.Log(pr/qr)
	}
	return c, coarse, full
}

func TestCompareTokenMatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, v := range []int{8, 33, 200, 5000} {
		for _, k := range []int{1, 5, 32} {
			for range 20 {
				b := randRow(r, v, 3)
				q := make([]float32, v)
				for i := range q {
					q[i] = b[i] + float32(r.NormFloat64()*0.3)
				}
				tgt := int32(r.IntN(v))
				c, coarse, full := compareRows(b, q, tgt, k)
				if !close(c.KLD, coarse, 1e-4, 2e-6) {
					t.Fatalf("V=%d k=%d: KLD %v, float64 coarsened %v", v, k, c.KLD, coarse)
				}
				if c.KLD > full+2e-6 {
					t.Fatalf("V=%d k=%d: coarsened KLD %v above the full %v", v, k, c.KLD, full)
				}
				if k >= v && !close(c.KLD, full, 1e-4, 2e-6) {
					t.Fatalf("V=%d k=%d: k covers the vocabulary, KLD %v != full %v", v, k, c.KLD, full)
				}
				pb := math.Exp(float64(b[tgt]) - logSumExp64(b))
				pq := math.Exp(float64(q[tgt]) - logSumExp64(q))
				if !close(c.DeltaP, pq-pb, 1e-5, 1e-7) {
					t.Fatalf("Δp %v want %v", c.DeltaP, pq-pb)
				}
			}
		}
	}
}

func TestCompareTokenIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for range 50 {
		b := randRow(r, 300, 4)
		c, _, _ := compareRows(b, b, int32(r.IntN(300)), 32)
		if c.KLD != 0 || c.DeltaP != 0 || !c.SameTop || !c.Top5 || c.NLL != c.BaseNLL {
			t.Fatalf("identical rows: %+v", c)
		}
	}
}

func TestCompareTokenEdgeCases(t *testing.T) {
	ninf := float32(math.Inf(-1))
	// A base outcome with probability 0 contributes 0 (0·ln 0 = 0), not NaN.
	c := CompareToken(1, 1, 0, []int32{0, 1}, []float32{0, ninf}, []float32{-0.1, -3}, true)
	if math.IsNaN(c.KLD) || !close(c.KLD, 0.1, 1e-6, 0) {
		t.Fatalf("0·ln0: KLD %v", c.KLD)
	}
	// The run puts all its mass on the k ids while the base leaves some
	// outside: q_rest clamps to 0 and the KLD is +Inf.
	c = CompareToken(1, 1, 0, []int32{0}, []float32{float32(math.Log(0.5))}, []float32{0}, false)
	if !math.IsInf(c.KLD, 1) {
		t.Fatalf("q_rest = 0: KLD %v, want +Inf", c.KLD)
	}
	// Same but the base leaves nothing outside: the rest term is 0.
	c = CompareToken(1, 1, 0, []int32{0}, []float32{0}, []float32{0}, false)
	if c.KLD != 0 {
		t.Fatalf("p_rest = q_rest = 0: KLD %v", c.KLD)
	}
	// Top-5 agreement: argmax 9 is the base's 3rd id.
	c = CompareToken(1, 1, 9, []int32{4, 5, 9, 6, 7, 8}, make([]float32, 6), make([]float32, 6), false)
	if c.SameTop || !c.Top5 {
		t.Fatalf("top5: %+v", c)
	}
	c = CompareToken(1, 1, 8, []int32{4, 5, 9, 6, 7, 8}, make([]float32, 6), make([]float32, 6), false)
	if c.Top5 {
		t.Fatal("the 6th id is not in the top 5")
	}
}

type tok struct {
	w int
	c TokenComparison
}

func randomComparisons(seed uint64, n, windows int) []tok {
	r := rand.New(rand.NewPCG(seed, 21))
	out := make([]tok, n)
	for i := range out {
		w := i * windows / n
		bias := float64(w%3) * 0.01 // windows differ: clustering matters
		nb := -math.Log(r.Float64())
		nq := nb + r.NormFloat64()*0.1 + bias
		out[i] = tok{w, TokenComparison{
			NLL: nq, BaseNLL: nb, KLD: math.Abs(r.NormFloat64())*0.01 + bias,
			DeltaP: math.Exp(-nq) - math.Exp(-nb), BaseTopMass: 0.9 + 0.1*r.Float64(),
			SameTop: r.Float64() < 0.9, Top5: r.Float64() < 0.97,
		}}
	}
	return out
}

func TestKLDStatsAgainstBruteForce(t *testing.T) {
	toks := randomComparisons(1, 3000, 12)
	var s, a, b KLDStats
	for i, x := range toks {
		s.Add(x.w, x.c)
		if i%2 == 0 {
			a.Add(x.w, x.c)
		} else {
			b.Add(x.w, x.c)
		}
		if i == 1500 {
			s.Snapshot() // exercise the incremental sort midway
		}
	}
	a.Merge(&b)
	n := float64(len(toks))
	meanSE := func(f func(TokenComparison) float64) (float64, float64) {
		var m float64
		for _, x := range toks {
			m += f(x.c)
		}
		m /= n
		var ss float64
		for _, x := range toks {
			ss += (f(x.c) - m) * (f(x.c) - m)
		}
		return m, math.Sqrt(ss / n / (n - 1))
	}
	mk, sek := meanSE(func(c TokenComparison) float64 { return c.KLD })
	md, sed := meanSE(func(c TokenComparison) float64 { return c.NLL - c.BaseNLL })
	mdp, sedp := meanSE(func(c TokenComparison) float64 { return c.DeltaP })
	mq, seq := meanSE(func(c TokenComparison) float64 { return c.NLL })
	mb, seb := meanSE(func(c TokenComparison) float64 { return c.BaseNLL })
	var sab float64
	for _, x := range toks {
		sab += (x.c.NLL - mq) * (x.c.BaseNLL - mb)
	}
	corr := sab / n / (seq * seb * (n - 1))
	// CR1 by the definition: residual sums per window.
	u := map[int]float64{}
	for _, x := range toks {
		u[x.w] += x.c.KLD - mk
	}
	var uu float64
	for _, v := range u {
		uu += v * v
	}
	g := float64(len(u))
	cr1 := math.Sqrt(g / (g - 1) * uu / (n * n))
	var same, top5 int
	kl := make([]float32, 0, len(toks))
	for _, x := range toks {
		if x.c.SameTop {
			same++
		}
		if x.c.Top5 {
			top5++
		}
		kl = append(kl, float32(x.c.KLD))
	}
	slices.Sort(kl)
	ps := float64(same) / n

	for name, st := range map[string]*KLDStats{"single": &s, "merged": &a} {
		r := st.Result()
		checks := []struct {
			what      string
			got, want float64
		}{
			{"mean_kld", r.MeanKLD, mk}, {"mean_kld_uncertainty", r.MeanKLDUncertainty, sek},
			{"mean_log_ratio", r.MeanLogRatio, md}, {"mean_log_ratio_uncertainty", r.MeanLogRatioUncertainty, sed},
			{"mean_delta_p", r.MeanDeltaP, mdp}, {"mean_delta_p_uncertainty", r.MeanDeltaPUncertainty, sedp},
			{"perplexity", r.Perplexity, math.Exp(mq)}, {"base_perplexity", r.BasePerplexity, math.Exp(mb)},
			{"perplexity_ratio", r.PerplexityRatio, math.Exp(md)}, {"ppl_correlation", r.PPLCorrelation, corr},
			{"same_top", r.SameTop, ps}, {"same_top_uncertainty", r.SameTopUncertainty, math.Sqrt(ps * (1 - ps) / (n - 1))},
			{"top5", r.Top5Agreement, float64(top5) / n}, {"cr1", r.MeanKLDUncertaintyCR1, cr1},
			{"kld_max", r.KLDMax, float64(kl[len(kl)-1])}, {"kld_p99", r.KLDP99, float64(Percentile(kl, 0.99))},
			{"kld_median", r.KLDPercentiles.Median, float64(Median(kl))}, {"kld_min", r.KLDPercentiles.Min, float64(kl[0])},
		}
		for _, c := range checks {
			if !close(c.got, c.want, 1e-7, 1e-12) {
				t.Errorf("%s: %s = %v, want %v", name, c.what, c.got, c.want)
			}
		}
		if r.Tokens != len(toks) || r.NonFiniteTokens != 0 || r.NonFiniteNote != "" {
			t.Errorf("%s: tokens %d nonfinite %d", name, r.Tokens, r.NonFiniteTokens)
		}
		// Clustering by window, with windows that differ, widens the error.
		if r.MeanKLDUncertaintyCR1 <= r.MeanKLDUncertainty {
			t.Errorf("%s: CR1 %v not above iid %v with correlated windows", name, r.MeanKLDUncertaintyCR1, r.MeanKLDUncertainty)
		}
	}
	m, st, ok := s.Window(3)
	var wm float64
	var wn, ws int
	for _, x := range toks {
		if x.w == 3 {
			wm += x.c.KLD
			wn++
			if x.c.SameTop {
				ws++
			}
		}
	}
	if !ok || !close(m, wm/float64(wn), 1e-12, 0) || st != float64(ws)/float64(wn) {
		t.Fatalf("window 3: %v %v %v", m, st, ok)
	}
}

func TestKLDStatsNonFiniteAndWarnings(t *testing.T) {
	var s KLDStats
	for i := range 200 {
		k := 0.5
		if i%50 == 0 {
			k = math.Inf(1)
		}
		s.Add(i/20, TokenComparison{NLL: 1, BaseNLL: 1, KLD: k, SameTop: i%3 == 0})
	}
	r := s.Result()
	if r.NonFiniteTokens != 4 || r.MeanKLD != 0.5 || r.KLDMax != 0.5 || r.Tokens != 200 {
		t.Fatalf("nonfinite: %+v", r)
	}
	w := strings.Join(r.Warnings(), "\n")
	if !strings.Contains(w, "same_top") || !strings.Contains(w, "4 of 200 tokens had a non-finite KLD") {
		t.Fatalf("warnings: %q", w)
	}
	var big KLDStats
	for range 20 {
		big.Add(0, TokenComparison{KLD: 2, SameTop: true})
	}
	r = big.Result()
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "mean_kld") {
		t.Fatalf("mean_kld > 1 warning: %q", w)
	}
}
