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
)

// CoarsenedKLD is the top-k KLD of one token against a llama.cpp base row:
// the row's k largest codes (ties: lower id first) with their decoded
// log-probabilities, the run's log-probabilities of those ids rounded as a
// comparison against a plexbench base rounds them, and the rest lumped.
// ids and lp are scratch of length >= k.
func CoarsenedKLD(k int, logits []float32, mx float32, argMax int32, sumExp float64, row *LlamaRow, nll, baseNLL float64, ids []int32, baseLP, runLP []float32) float64 {
	k = min(k, len(row.Q))
	ids = topCodes(row.Q, ids[:k])
	lnS := math.Log(sumExp)
	for i, id := range ids {
		baseLP[i] = row.LogProb(int(id))
		runLP[i] = LogProb(logits[id], mx, lnS)
	}
	return CompareToken(nll, baseNLL, argMax, ids, baseLP[:k], runLP[:k], k >= len(row.Q)).KLD
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
	ids           []int32
	baseLP, runLP []float32
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

// AddRow coarsens one token's comparison against a llama.cpp base row and
// adds it; c is CompareFull's result for the same token.
func (s *CoarseningStats) AddRow(c TokenComparison, logits []float32, mx float32, argMax int32, sumExp float64, row *LlamaRow) {
	if len(s.ids) < s.TopK {
		s.ids, s.baseLP, s.runLP = make([]int32, s.TopK), make([]float32, s.TopK), make([]float32, s.TopK)
	}
	topK := CoarsenedKLD(s.TopK, logits, mx, argMax, sumExp, row, c.NLL, c.BaseNLL, s.ids, s.baseLP, s.runLP)
	s.Add(c.KLD, topK)
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
	// Floor is the measured floor of comparisons against the top-k base
	// (SelfTopKMeanKLD): compare marks results within 2× of it.
	Floor float64 `json:"floor"`
}
