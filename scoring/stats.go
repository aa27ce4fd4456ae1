package scoring

// stats.go owns the per-token arithmetic and the accumulators: NLL and
// perplexity with llama.cpp's ±, and the comparison against a compact KLD
// base (coarsened KL divergence, Δp, same top, log ratio, percentiles,
// window-clustered errors). Sums are float64; percentiles follow
// llama.cpp's f32 interpolation. Accumulators have Add, Merge and Result
// so windows can be scored separately and combined.

import (
	"fmt"
	"math"
	"slices"
)

// NLL is a token's negative log-likelihood from its row's reductions, as
// llama-perplexity computes it: −(f64(l_t − max) − ln S) with the
// subtraction in f32 and S = Σ f64(expf(l_j − max)).
func NLL(target, max float32, sumExp float64) float64 {
	return -(float64(target-max) - math.Log(sumExp))
}

// LogProb is the log-probability of a logit rounded to f32, the precision a
// base stores. A comparison run rounds its own log-probabilities the same
// way, so a run compared with its own base gives exactly zero.
func LogProb(logit, max float32, lnSumExp float64) float32 {
	return float32(float64(logit-max) - lnSumExp)
}

// mu is llama.cpp's MU: mean and standard error of the mean, the error
// only when the variance is positive and n > 10.
func mu(sum, sum2 float64, n int) (mean, se float64) {
	if n < 1 {
		return 0, 0
	}
	fn := float64(n)
	mean = sum / fn
	v := sum2/fn - mean*mean
	if v > 0 && n > 10 {
		se = math.Sqrt(v / (fn - 1))
	}
	return mean, se
}

// cov is llama.cpp's COV: the covariance of two means (same scale as se²).
func cov(sa, sb, sab float64, n int) float64 {
	if n < 10 {
		return 0
	}
	fn := float64(n)
	return (sab/fn - (sa/fn)*(sb/fn)) / (fn - 1)
}

// sqrtPos is sqrt clamped at zero, for variances that rounding can push
// just below zero (a run compared with itself).
func sqrtPos(x float64) float64 {
	if x > 0 {
		return math.Sqrt(x)
	}
	return 0
}

// NLLStats accumulates per-token NLLs.
type NLLStats struct {
	N    int
	Sum  float64
	Sum2 float64
}

// Add adds one token's NLL.
func (s *NLLStats) Add(nll float64) {
	s.N++
	s.Sum += nll
	s.Sum2 += nll * nll
}

// Merge adds another accumulator's tokens.
func (s *NLLStats) Merge(o NLLStats) {
	s.N += o.N
	s.Sum += o.Sum
	s.Sum2 += o.Sum2
}

// BitsPerByte is the run's NLL in bits per byte of text, the figure that
// compares models whose tokenizers differ: Σ NLL / (ln 2 · textBytes),
// where textBytes is what the scored tokens cover of the text (the sum of
// Engine.TokenBytes over them: each token's piece as the tokenizer
// detokenizes it, BOS and control tokens 0, SPM's dummy leading space left
// out; for windows of consecutive targets, the byte span of the text they
// cover). Its ± is the mean NLL's standard error (llama.cpp's PPL ± is
// PPL times it) scaled the same way, by N / (ln 2 · textBytes). Both are 0
// when textBytes is.
func BitsPerByte(r PPLResult, textBytes int64) (bpb, uncertainty float64) {
	if textBytes <= 0 || r.N == 0 {
		return 0, 0
	}
	scale := float64(r.N) / (math.Ln2 * float64(textBytes))
	bpb = r.MeanNLL * scale
	if r.Perplexity > 0 {
		uncertainty = r.Uncertainty / r.Perplexity * scale
	}
	return bpb, uncertainty
}

// spanBytes sums per-token byte counts.
func spanBytes(n []int32) int64 {
	var s int64
	for _, v := range n {
		s += int64(v)
	}
	return s
}

// PPLResult is the perplexity estimate.
type PPLResult struct {
	N           int
	MeanNLL     float64
	Perplexity  float64
	Uncertainty float64 // llama.cpp's ±: PPL · sqrt(var/(N−1)), 0 when var <= 0
}

// Result is llama-perplexity's "Final estimate": PPL = exp(mean NLL) and
// ΔPPL = PPL·σ with σ = sqrt((μ2 − μ²)/(N − 1)).
func (s NLLStats) Result() PPLResult {
	if s.N == 0 {
		return PPLResult{}
	}
	n := float64(s.N)
	m := s.Sum / n
	r := PPLResult{N: s.N, MeanNLL: m, Perplexity: math.Exp(m)}
	if v := s.Sum2/n - m*m; v > 0 && s.N > 1 {
		r.Uncertainty = r.Perplexity * math.Sqrt(v/(n-1))
	}
	return r
}

// TokenComparison is one scored token compared against its base record.
type TokenComparison struct {
	NLL         float64 // this run
	BaseNLL     float64
	KLD         float64 // over the base's k ids plus the rest; may be +Inf
	DeltaP      float64 // exp(−NLL) − exp(−BaseNLL)
	BaseTopMass float64 // Σ of the base's k probabilities
	SameTop     bool    // run's argmax == base's top id
	Top5        bool    // run's argmax among the base's first min(5,k) ids
	BaseTop     int32   // the base's most likely id
	BaseTopP    float64 // its probability under the base
}

// CompareToken compares one token. baseIDs/baseLP are the base's top-k ids
// (descending) and log-probabilities; runLP are this run's log-probabilities
// of the same ids (rounded with LogProb). restEmpty says the k ids cover the
// whole vocabulary, so there is no "rest" outcome.
//
// The KLD is KL(base ‖ run) over k+1 outcomes, Σ p_i ln(p_i/q_i) +
// p_rest ln(p_rest/q_rest), with 0·ln 0 = 0 and p_rest, q_rest = 1 − Σ
// clamped at 0. It is +Inf when q_rest is 0 and p_rest is not.
func CompareToken(nll, baseNLL float64, runArgMax int32, baseIDs []int32, baseLP, runLP []float32, restEmpty bool) TokenComparison {
	c := TokenComparison{NLL: nll, BaseNLL: baseNLL, DeltaP: math.Exp(-nll) - math.Exp(-baseNLL)}
	kld, ps, qs := topTerms(baseLP, runLP)
	c.BaseTopMass = ps
	if !restEmpty {
		kld += restTerm(max(0, 1-ps), max(0, 1-qs))
	}
	c.KLD = kld
	if len(baseIDs) > 0 {
		c.BaseTop, c.BaseTopP = baseIDs[0], math.Exp(float64(baseLP[0]))
		c.SameTop = runArgMax == baseIDs[0]
		for _, id := range baseIDs[:min(5, len(baseIDs))] {
			if id == runArgMax {
				c.Top5 = true
			}
		}
	}
	return c
}

// topTerms is Σ p·(ln p − ln q) over the listed ids, with their masses
// Σ p and Σ q (f64 of the f32 log-probabilities).
func topTerms(baseLP, runLP []float32) (kld, ps, qs float64) {
	for i := range baseLP {
		lp, lq := float64(baseLP[i]), float64(runLP[i])
		p := math.Exp(lp)
		ps += p
		qs += math.Exp(lq)
		if p > 0 {
			kld += p * (lp - lq)
		}
	}
	return kld, ps, qs
}

// restTerm is the lumped rest's pr·ln(pr/qr): 0 without base mass, +Inf
// when the run gives the rest none.
func restTerm(pr, qr float64) float64 {
	switch {
	case pr <= 0:
		return 0
	case qr == 0:
		return math.Inf(1)
	}
	return pr * math.Log(pr/qr)
}

// kldCluster is one window's share of a comparison, for the per-window
// report and the clustered standard error.
type kldCluster struct {
	N       int     // tokens
	NKLD    int     // tokens with a finite KLD
	SumKLD  float64 // over finite KLDs
	SameTop int
	// SumDelta is Σ (NLL − base NLL): the paired difference, for the
	// stopping rules on ΔPPL.
	SumDelta float64
}

// KLDStats accumulates token comparisons. The zero value is ready to use.
type KLDStats struct {
	n, nSame, nTop5 int
	sNLL, sNLL2     float64
	sB, sB2, sNB    float64
	nKLD            int // finite KLDs
	sKLD, sKLD2     float64
	nonFinite       int
	sDP, sDP2, sDP4 float64
	sMass           float64

	kld, dp   []float32 // finite KLDs and all Δp, as llama.cpp keeps them (f32)
	kldSorted int       // kld[:kldSorted] is sorted
	dpSorted  int
	scratch   []float32
	clusters  map[int]kldCluster // by window index
}

// Add adds one token of window w.
func (s *KLDStats) Add(w int, c TokenComparison) {
	s.n++
	s.sNLL += c.NLL
	s.sNLL2 += c.NLL * c.NLL
	s.sB += c.BaseNLL
	s.sB2 += c.BaseNLL * c.BaseNLL
	s.sNB += c.NLL * c.BaseNLL
	d2 := c.DeltaP * c.DeltaP
	s.sDP += c.DeltaP
	s.sDP2 += d2
	s.sDP4 += d2 * d2
	s.dp = append(s.dp, float32(c.DeltaP))
	s.sMass += c.BaseTopMass
	if s.clusters == nil {
		s.clusters = make(map[int]kldCluster)
	}
	cl := s.clusters[w]
	cl.N++
	cl.SumDelta += c.NLL - c.BaseNLL
	if c.SameTop {
		s.nSame++
		cl.SameTop++
	}
	if c.Top5 {
		s.nTop5++
	}
	// A KLD the f32 percentiles cannot hold counts as non-finite too, so
	// that none reaches the report.
	if !(math.Abs(c.KLD) <= math.MaxFloat32) {
		s.nonFinite++
	} else {
		s.nKLD++
		s.sKLD += c.KLD
		s.sKLD2 += c.KLD * c.KLD
		s.kld = append(s.kld, float32(c.KLD))
		cl.NKLD++
		cl.SumKLD += c.KLD
	}
	s.clusters[w] = cl
}

// Merge adds another accumulator's tokens; windows with the same index are
// treated as the same cluster.
func (s *KLDStats) Merge(o *KLDStats) {
	s.n += o.n
	s.nSame += o.nSame
	s.nTop5 += o.nTop5
	s.sNLL += o.sNLL
	s.sNLL2 += o.sNLL2
	s.sB += o.sB
	s.sB2 += o.sB2
	s.sNB += o.sNB
	s.nKLD += o.nKLD
	s.sKLD += o.sKLD
	s.sKLD2 += o.sKLD2
	s.nonFinite += o.nonFinite
	s.sDP += o.sDP
	s.sDP2 += o.sDP2
	s.sDP4 += o.sDP4
	s.sMass += o.sMass
	s.kld = append(s.kld, o.kld...)
	s.dp = append(s.dp, o.dp...)
	if len(o.clusters) > 0 && s.clusters == nil {
		s.clusters = make(map[int]kldCluster)
	}
	for w, c := range o.clusters {
		m := s.clusters[w]
		m.N += c.N
		m.NKLD += c.NKLD
		m.SumKLD += c.SumKLD
		m.SameTop += c.SameTop
		m.SumDelta += c.SumDelta
		s.clusters[w] = m
	}
}

// Tokens is the number of tokens compared.
func (s *KLDStats) Tokens() int { return s.n }

// Window returns window w's mean KLD (finite tokens) and same-top fraction.
func (s *KLDStats) Window(w int) (meanKLD, sameTop float64, ok bool) {
	c, ok := s.clusters[w]
	if !ok || c.N == 0 {
		return 0, 0, false
	}
	if c.NKLD > 0 {
		meanKLD = c.SumKLD / float64(c.NKLD)
	}
	return meanKLD, float64(c.SameTop) / float64(c.N), true
}

// WindowDelta is window w's mean paired difference NLL − base NLL; false
// when it has no tokens.
func (s *KLDStats) WindowDelta(w int) (float64, bool) {
	c, ok := s.clusters[w]
	if !ok || c.N == 0 {
		return 0, false
	}
	return c.SumDelta / float64(c.N), true
}

// sortTail keeps v[:*sorted] sorted and merges the unsorted tail into it,
// so live snapshots cost O(n) per window rather than a full sort.
func (s *KLDStats) sortTail(v []float32, sorted *int) {
	if *sorted == len(v) {
		return
	}
	tail := v[*sorted:]
	slices.Sort(tail)
	if *sorted > 0 {
		s.scratch = append(s.scratch[:0], v[:*sorted]...)
		a, b, k := s.scratch, tail, 0
		// Merge from the front into v; b is a suffix of v, but it is read
		// ahead of every write (k <= i+j), so nothing unread is overwritten.
		i, j := 0, 0
		for i < len(a) && j < len(b) {
			if b[j] < a[i] {
				v[k] = b[j]
				j++
			} else {
				v[k] = a[i]
				i++
			}
			k++
		}
		for ; i < len(a); i++ {
			v[k] = a[i]
			k++
		}
	}
	*sorted = len(v)
}

// Percentile is llama.cpp's percentile of an ascending slice, in f32:
// x = f·(n−1), linear interpolation between v[trunc x] and the next.
func Percentile(v []float32, f float32) float32 {
	n := len(v)
	if n == 0 {
		return 0
	}
	if f <= 0 {
		return v[0]
	}
	if f >= 1 {
		return v[n-1]
	}
	x := f * float32(n-1)
	i := int(x)
	frac := x - float32(i)
	j := min(i+1, n-1)
	// Conversions keep each product rounded to f32 (no fused multiply-add).
	return float32((1-frac)*v[i]) + float32(frac*v[j])
}

// Median is llama.cpp's median of an ascending slice: the mean of the two
// middle values (in f32) when n is even. It is not Percentile(v, 0.5).
func Median(v []float32) float32 {
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return float32(0.5) * (v[n/2] + v[n/2-1])
}

// clusteredSE is the CR1 (window-clustered) standard error of the mean of
// the finite KLDs: sqrt(G/(G−1) · Σ_g (Σ_{i∈g} (x_i − x̄))² / N²).
func (s *KLDStats) clusteredSE() float64 {
	if s.nKLD == 0 {
		return 0
	}
	keys := make([]int, 0, len(s.clusters))
	for w, c := range s.clusters {
		if c.NKLD > 0 {
			keys = append(keys, w)
		}
	}
	g := len(keys)
	if g < 2 {
		return 0
	}
	slices.Sort(keys) // fixed order: the same bits every time
	n := float64(s.nKLD)
	mean := s.sKLD / n
	var ss float64
	for _, w := range keys {
		c := s.clusters[w]
		u := c.SumKLD - float64(c.NKLD)*mean
		ss += u * u
	}
	return sqrtPos(float64(g) / float64(g-1) * ss / (n * n))
}

func binomialSE(k, n int) (p, se float64) {
	if n < 1 {
		return 0, 0
	}
	p = float64(k) / float64(n)
	if n > 1 {
		se = sqrtPos(p * (1 - p) / float64(n-1))
	}
	return p, se
}

// Snapshot is the running summary for progress events.
func (s *KLDStats) Snapshot() KLDSummary {
	s.sortTail(s.kld, &s.kldSorted)
	mk, sek := mu(s.sKLD, s.sKLD2, s.nKLD)
	mdp, _ := mu(s.sDP, s.sDP2, s.n)
	st, sst := binomialSE(s.nSame, s.n)
	snap := KLDSummary{
		Tokens: s.n, NonFinite: s.nonFinite,
		MeanKLD: mk, MeanKLDUncertainty: sek,
		SameTop: st, SameTopUncertainty: sst,
		MeanDeltaP: mdp,
	}
	if len(s.kld) > 0 {
		snap.P50 = float64(Median(s.kld))
		snap.P90 = float64(Percentile(s.kld, 0.90))
		snap.P99 = float64(Percentile(s.kld, 0.99))
		snap.Max = float64(s.kld[len(s.kld)-1])
	}
	return snap
}

// Result is the comparison's statistics, as llama-perplexity's
// --kl-divergence summary computes them (Base and TopK are left to the
// caller). The uncertainties of the perplexities and their ratio and
// difference take the covariance of the two runs' NLLs into account.
func (s *KLDStats) Result() KLDReport {
	s.sortTail(s.kld, &s.kldSorted)
	s.sortTail(s.dp, &s.dpSorted)
	r := KLDReport{Tokens: s.n, NonFiniteTokens: s.nonFinite}
	if s.n == 0 {
		return r
	}
	mq, seq := mu(s.sNLL, s.sNLL2, s.n)
	mb, seb := mu(s.sB, s.sB2, s.n)
	c := cov(s.sNLL, s.sB, s.sNB, s.n)
	pq, pb := math.Exp(mq), math.Exp(mb)
	lr := sqrtPos(seq*seq + seb*seb - 2*c)
	r.Perplexity, r.PerplexityUncertainty = pq, pq*seq
	r.BasePerplexity, r.BasePerplexityUncertainty = pb, pb*seb
	r.MeanLogRatio, r.MeanLogRatioUncertainty = mq-mb, lr
	r.PerplexityRatio = math.Exp(mq - mb)
	r.PerplexityRatioUncertainty = r.PerplexityRatio * lr
	r.DeltaPerplexity = pq - pb
	r.DeltaPerplexityUncertainty = sqrtPos(pq*seq*pq*seq + pb*seb*pb*seb - 2*pq*pb*c)
	if seq > 0 && seb > 0 {
		r.PPLCorrelation = c / (seq * seb)
	}

	r.MeanKLD, r.MeanKLDUncertainty = mu(s.sKLD, s.sKLD2, s.nKLD)
	r.MeanKLDUncertaintyCR1 = s.clusteredSE()
	if k := s.kld; len(k) > 0 {
		r.KLDPercentiles = KLDPercentiles{
			Max: float64(k[len(k)-1]), P99_9: float64(Percentile(k, 0.999)),
			P99: float64(Percentile(k, 0.990)), P95: float64(Percentile(k, 0.950)),
			P90: float64(Percentile(k, 0.900)), Median: float64(Median(k)),
			P10: float64(Percentile(k, 0.100)), P5: float64(Percentile(k, 0.050)),
			P1: float64(Percentile(k, 0.010)), P0_1: float64(Percentile(k, 0.001)),
			Min: float64(k[0]),
		}
		r.KLDP99, r.KLDMax = r.KLDPercentiles.P99, r.KLDPercentiles.Max
	}
	r.Histogram = NewKLDHistogram(s.kld)
	d := s.dp
	r.DeltaPPercentiles = DeltaPPercentiles{
		Max: float64(d[len(d)-1]), P99_9: float64(Percentile(d, 0.999)),
		P99: float64(Percentile(d, 0.990)), P95: float64(Percentile(d, 0.950)),
		P90: float64(Percentile(d, 0.900)), P75: float64(Percentile(d, 0.750)),
		Median: float64(Median(d)), P25: float64(Percentile(d, 0.250)),
		P10: float64(Percentile(d, 0.100)), P5: float64(Percentile(d, 0.050)),
		P1: float64(Percentile(d, 0.010)), P0_1: float64(Percentile(d, 0.001)),
		Min: float64(d[0]),
	}
	r.MeanDeltaP, r.MeanDeltaPUncertainty = mu(s.sDP, s.sDP2, s.n)
	m2, se2 := mu(s.sDP2, s.sDP4, s.n)
	if r.RMSDeltaP = math.Sqrt(m2); r.RMSDeltaP > 0 {
		r.RMSDeltaPUncertainty = 0.5 / r.RMSDeltaP * se2
	}
	r.SameTop, r.SameTopUncertainty = binomialSE(s.nSame, s.n)
	r.Top5Agreement, r.Top5AgreementUncertainty = binomialSE(s.nTop5, s.n)
	r.MeanBaseTopMass = s.sMass / float64(s.n)
	if s.nonFinite > 0 {
		r.NonFiniteNote = fmt.Sprintf("%d of %d tokens had a non-finite KLD (the run gave the "+
			"base's top-k ids all the probability the base left outside them); they are excluded "+
			"from the KLD mean and percentiles and included everywhere else", s.nonFinite, s.n)
	}
	return r
}

// Warnings lists implausible results: a wrong model or a broken load.
func (r *KLDReport) Warnings() []string {
	var w []string
	if r.Tokens > 0 && r.SameTop < 0.5 {
		w = append(w, fmt.Sprintf("same_top is %.3f (< 0.5): the two runs rarely agree on the top token; "+
			"check that both used the same model and tokenizer", r.SameTop))
	}
	if r.MeanKLD > 1 {
		w = append(w, fmt.Sprintf("mean_kld is %.3f nats (> 1): implausibly large for the same model; "+
			"check the model and the load", r.MeanKLD))
	}
	if r.NonFiniteTokens > 0 {
		w = append(w, r.NonFiniteNote)
	}
	return w
}
