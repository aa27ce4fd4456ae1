package scoring

// floor.go owns what a top-k base cannot see. A plexbench base keeps each
// scored token's top k log-probabilities and lumps the rest of the
// vocabulary into one outcome, so its KL divergence is that of the
// coarsened distributions: never more than the full-vocabulary KLD (the
// data-processing inequality), and exactly 0 for a model compared with its
// own base (there is no additive reconstruction floor, unlike a top-k base
// that models the rest as a uniform tail).
//
// Against a llama.cpp base, which holds whole rows, one run gives both
// numbers on the same tokens: llama-perplexity's full-vocabulary KLD
// (CompareFull) and the top-k KLD a plexbench base of that k would have
// given (the base row's k most likely ids, the rest lumped, CompareToken's
// arithmetic). CoarseningStats accumulates the pair; `plexbench floor`
// uses it to measure a model's floors.

import (
	"math"
	"slices"
)

// CoarsenedKLD is the top-k KLD of one token against a llama.cpp base row:
// the row's k largest codes (ties: lower id first; those at the row's
// 16-nat floor left out, see rowTop) with their decoded
// log-probabilities, the run's log-probabilities of those ids rounded as a
// comparison against a plexbench base rounds them, and the rest lumped.
// The rest's masses are summed over the ids outside the top k (the base's
// over those above its floor, as CompareFull counts them), not taken as 1
// less the top's: the decoded row sums to 1 only within its 16-bit
// rounding, which would swamp the tiny rest of a large k. ids and lp are
// scratch of length >= k.
func CoarsenedKLD(k int, logits []float32, mx float32, argMax int32, sumExp float64, row *LlamaRow, nll, baseNLL float64, ids []int32, baseLP, runLP []float32) float64 {
	ids = rowTop(k, logits, mx, sumExp, row, ids, baseLP, runLP)
	tb, tq := rowMasses(logits, mx, sumExp, row)
	return coarsened(k, len(row.Q), ids, baseLP, runLP, tb, tq)
}

// coarsened is the top-k KLD from rowTop's ids (its top k) and the
// masses rowMasses gives of the whole row.
func coarsened(k, vocab int, ids []int32, baseLP, runLP []float32, tb, tq float64) float64 {
	n := min(k, len(ids))
	kld, ps, qs := topTerms(baseLP[:n], runLP[:n])
	if k < vocab {
		kld += restTerm(max(0, tb-ps), max(0, tq-qs))
	}
	return kld
}

// rowMasses is the base row's mass above its floor and the run's over the
// whole vocabulary, each summed as topTerms sums them.
func rowMasses(logits []float32, mx float32, sumExp float64, row *LlamaRow) (tb, tq float64) {
	lnS := math.Log(sumExp)
	for j, l := range logits {
		if lp := row.LogProb(j); lp > -llamaLogRange {
			tb += math.Exp(float64(lp))
		}
		tq += math.Exp(float64(LogProb(l, mx, lnS)))
	}
	return tb, tq
}

// rowTop fills ids with the row's min(k, vocabulary) largest codes (ties:
// lower id first), baseLP with their decoded log-probabilities and runLP
// with the run's, rounded as a comparison against a plexbench base rounds
// them; it returns ids cut to that length. The first j ids are the row's
// top j for every j <= k, so one call serves every smaller k. Ids at the
// row's floor (16 nats below its maximum, where llama.cpp clamps them and
// CompareFull leaves them out) are left to the lumped rest: their decoded
// log-probability is the clamp, not theirs, and a large k would otherwise
// add their made-up terms.
func rowTop(k int, logits []float32, mx float32, sumExp float64, row *LlamaRow, ids []int32, baseLP, runLP []float32) []int32 {
	k = min(k, len(row.Q))
	ids = topCodes(row.Q, ids[:k])
	lnS := math.Log(sumExp)
	for i, id := range ids {
		if baseLP[i] = row.LogProb(int(id)); baseLP[i] <= -llamaLogRange {
			return ids[:i]
		}
		runLP[i] = LogProb(logits[id], mx, lnS)
	}
	return ids
}

// topCodes fills ids with the indices of q's len(ids) largest values in
// descending order, the lower index first among ties.
func topCodes(q []uint16, ids []int32) []int32 {
	n := 0
	for j, v := range q {
		if n == len(ids) && v <= q[ids[n-1]] {
			continue
		}
		i := min(n, len(ids)-1)
		for i > 0 && v > q[ids[i-1]] {
			ids[i] = ids[i-1]
			i--
		}
		ids[i] = int32(j)
		n = min(n+1, len(ids))
	}
	return ids[:n]
}

// CoarseningStats accumulates, per token, the full-vocabulary KLD and the
// top-k KLD of the same token. The zero value is ready; set TopK.
type CoarseningStats struct {
	TopK int

	n, nonFinite  int
	sFull, sFull2 float64
	sTopK, sTopK2 float64
	sGap, sGap2   float64
}

// Add adds one token: full is its full-vocabulary KLD, topK its top-k KLD.
// A token where either is not finite is counted apart.
func (s *CoarseningStats) Add(full, topK float64) {
	if math.IsInf(full, 0) || math.IsNaN(full) || math.IsInf(topK, 0) || math.IsNaN(topK) {
		s.nonFinite++
		return
	}
	s.n++
	s.sFull += full
	s.sFull2 += full * full
	s.sTopK += topK
	s.sTopK2 += topK * topK
	g := full - topK
	s.sGap += g
	s.sGap2 += g * g
}

// CoarseningSet accumulates the coarsening at several k on the same
// tokens: each row's top codes are found once, for the largest k, and
// every smaller k takes their prefix.
type CoarseningSet struct {
	Stats         []CoarseningStats // by ascending TopK
	ids           []int32
	baseLP, runLP []float32
}

// NewCoarseningSet is a set for the given k, sorted, without repeats
// and without those below 1.
func NewCoarseningSet(ks ...int) *CoarseningSet {
	ks = slices.Compact(slices.Sorted(slices.Values(ks)))
	s := &CoarseningSet{}
	for _, k := range ks {
		if k >= 1 {
			s.Stats = append(s.Stats, CoarseningStats{TopK: k})
		}
	}
	return s
}

// AddRow coarsens one token at every k and adds it; c is CompareFull's
// result for the same token.
func (s *CoarseningSet) AddRow(c TokenComparison, logits []float32, mx float32, argMax int32, sumExp float64, row *LlamaRow) {
	if len(s.Stats) == 0 {
		return
	}
	kmax := s.Stats[len(s.Stats)-1].TopK
	if len(s.ids) < kmax {
		s.ids, s.baseLP, s.runLP = make([]int32, kmax), make([]float32, kmax), make([]float32, kmax)
	}
	ids := rowTop(kmax, logits, mx, sumExp, row, s.ids, s.baseLP, s.runLP)
	tb, tq := rowMasses(logits, mx, sumExp, row)
	for i := range s.Stats {
		s.Stats[i].Add(c.KLD, coarsened(s.Stats[i].TopK, len(row.Q), ids, s.baseLP, s.runLP, tb, tq))
	}
}

// Result is the coarsening at k; false when the set has no such k.
func (s *CoarseningSet) Result(k int) (CoarseningReport, bool) {
	for i := range s.Stats {
		if s.Stats[i].TopK == k {
			return s.Stats[i].Result(), true
		}
	}
	return CoarseningReport{}, false
}

// CoarseningReport is the report's kld.top_k_coarsened object: on the same
// tokens, the full-vocabulary KLD, the top-k KLD a plexbench base of TopK
// ids would give, their difference (what the top-k base misses), and the
// fraction of the full KLD it sees.
type CoarseningReport struct {
	TopK                     int     `json:"top_k"`
	Tokens                   int     `json:"tokens"`
	NonFiniteTokens          int     `json:"nonfinite_tokens,omitempty"`
	MeanFullKLD              float64 `json:"mean_full_kld"`
	MeanFullKLDUncertainty   float64 `json:"mean_full_kld_uncertainty"`
	MeanTopKKLD              float64 `json:"mean_top_k_kld"`
	MeanTopKKLDUncertainty   float64 `json:"mean_top_k_kld_uncertainty"`
	MeanMissedKLD            float64 `json:"mean_missed_kld"` // full − top-k, per token
	MeanMissedKLDUncertainty float64 `json:"mean_missed_kld_uncertainty"`
	SeenFraction             float64 `json:"seen_fraction"` // mean top-k / mean full; 1 when both are 0
}

// Result is the accumulated comparison.
func (s *CoarseningStats) Result() CoarseningReport {
	r := CoarseningReport{TopK: s.TopK, Tokens: s.n, NonFiniteTokens: s.nonFinite}
	r.MeanFullKLD, r.MeanFullKLDUncertainty = mu(s.sFull, s.sFull2, s.n)
	r.MeanTopKKLD, r.MeanTopKKLDUncertainty = mu(s.sTopK, s.sTopK2, s.n)
	r.MeanMissedKLD, r.MeanMissedKLDUncertainty = mu(s.sGap, s.sGap2, s.n)
	r.SeenFraction = 1
	if r.MeanFullKLD > 0 {
		r.SeenFraction = r.MeanTopKKLD / r.MeanFullKLD
	}
	return r
}

// FloorReport is the report's floor object, written by `plexbench floor`:
// a model compared with its own bases.
type FloorReport struct {
	TopK int `json:"top_k"`
	// SelfTopK is the model's rerun against its own top-k base: 0 by
	// construction for a deterministic engine (the measured floor).
	SelfTopKMeanKLD float64 `json:"self_top_k_mean_kld"`
	SelfTopKMaxKLD  float64 `json:"self_top_k_max_kld"`
	SelfTopKSameTop float64 `json:"self_top_k_same_top"`
	// SelfFull is the model against its own llama.cpp base (16-bit rows):
	// the floor of a full-vocabulary comparison, and the top-k KLD on the
	// same run.
	SelfFull CoarseningReport `json:"self_full"`
	// Against is a second model's run against the model's llama.cpp base:
	// its full-vocabulary KLD and top-k KLD on the same tokens, the
	// coarsening a top-k base applies to a real difference.
	AgainstModel string            `json:"against_model,omitempty"`
	Against      *CoarseningReport `json:"against,omitempty"`
	// Coarsening is the same measurement at several k (FloorTopKs) on the
	// same tokens, so that k can be chosen from it.
	Coarsening []FloorCoarsening `json:"coarsening,omitempty"`
	// Floor is the measured floor of comparisons against the top-k base
	// (SelfTopKMeanKLD): compare marks results within 2× of it.
	Floor float64 `json:"floor"`
}

// FloorTopKs are the top-k sizes `floor` measures the coarsening at: 32,
// 64, 256 and 1024, each at most the vocabulary (vocab; 0 when unknown),
// without repeats.
func FloorTopKs(vocab int) []int {
	var ks []int
	for _, k := range []int{32, 64, 256, 1024} {
		if vocab > 0 {
			k = min(k, vocab)
		}
		if !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// FloorCoarsening is one k of the floor's coarsening list: the model
// against its own full-vocabulary base, and the Against model's real
// difference, each seen through a top-k base of TopK ids.
type FloorCoarsening struct {
	TopK     int               `json:"top_k"`
	SelfFull CoarseningReport  `json:"self_full"`
	Against  *CoarseningReport `json:"against,omitempty"`
}
