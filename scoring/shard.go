package scoring

// shard.go owns sharded runs: a run given Shard i of n scores only the
// windows whose index is i mod n, keeps its raw sums and per-token values
// in the report (RunSums), and MergeShards combines the n shard reports
// into the report one unsharded run gives: sums and statistics merge
// exactly, percentiles come from the merged per-token values.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// ErrShards marks shard reports that do not merge.
var ErrShards = errors.New("shards do not merge")

// ShardSpec is shard I of N (0 <= I < N); the zero value is no sharding.
type ShardSpec struct {
	I, N int
}

// ParseShard parses "i/n".
func ParseShard(s string) (ShardSpec, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return ShardSpec{}, fmt.Errorf("shard %q: want i/n, e.g. 0/3", s)
	case n < 1 || i < 0 || i >= n:
		return ShardSpec{}, fmt.Errorf("shard %q: the index must be 0..n-1 (here 0..%d)", s, max(0, n-1))
	}
	return ShardSpec{I: i, N: n}, nil
}

func (s ShardSpec) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// has reports whether window index w belongs to the shard.
func (s ShardSpec) has(w int) bool { return s.N == 0 || w%s.N == s.I }

// RunSums are a shard's raw accumulators, what MergeShards adds.
type RunSums struct {
	NLL NLLStats `json:"nll"`
	KLD *KLDSums `json:"kld,omitempty"`
}

// KLDSums is KLDStats's state, exported for a shard report.
type KLDSums struct {
	N, NSame, NTop5 int
	SNLL, SNLL2     float64
	SB, SB2, SNB    float64
	NKLD            int
	SKLD, SKLD2     float64
	NonFinite       int
	SDP, SDP2, SDP4 float64
	SMass           float64
	KLD, DP         []float32
	Clusters        []KLDClusterSums
}

// KLDClusterSums is one window's share of a comparison.
type KLDClusterSums struct {
	Window, N, NKLD, SameTop int
	SumKLD                   float64
}

// Sums exports the accumulator's state.
func (s *KLDStats) Sums() *KLDSums {
	o := &KLDSums{N: s.n, NSame: s.nSame, NTop5: s.nTop5, SNLL: s.sNLL, SNLL2: s.sNLL2, SB: s.sB, SB2: s.sB2,
		SNB: s.sNB, NKLD: s.nKLD, SKLD: s.sKLD, SKLD2: s.sKLD2, NonFinite: s.nonFinite, SDP: s.sDP, SDP2: s.sDP2,
		SDP4: s.sDP4, SMass: s.sMass, KLD: slices.Clone(s.kld), DP: slices.Clone(s.dp)}
	for w, c := range s.clusters {
		o.Clusters = append(o.Clusters, KLDClusterSums{Window: w, N: c.N, NKLD: c.NKLD, SameTop: c.SameTop, SumKLD: c.SumKLD})
	}
	slices.SortFunc(o.Clusters, func(a, b KLDClusterSums) int { return a.Window - b.Window })
	return o
}

// Stats rebuilds an accumulator from exported state.
func (o *KLDSums) Stats() *KLDStats {
	s := &KLDStats{n: o.N, nSame: o.NSame, nTop5: o.NTop5, sNLL: o.SNLL, sNLL2: o.SNLL2, sB: o.SB, sB2: o.SB2,
		sNB: o.SNB, nKLD: o.NKLD, sKLD: o.SKLD, sKLD2: o.SKLD2, nonFinite: o.NonFinite, sDP: o.SDP, sDP2: o.SDP2,
		sDP4: o.SDP4, sMass: o.SMass, kld: slices.Clone(o.KLD), dp: slices.Clone(o.DP),
		clusters: make(map[int]kldCluster, len(o.Clusters))}
	for _, c := range o.Clusters {
		s.clusters[c.Window] = kldCluster{N: c.N, NKLD: c.NKLD, SumKLD: c.SumKLD, SameTop: c.SameTop}
	}
	return s
}

// MergeShards combines the reports of shards 0/n … n−1/n of one run into
// the report the unsharded run gives; timings are summed (elapsed) or
// recomputed (rates). Record is left to the caller. The shards' token
// traces merge into its Trace when every shard carries one.
func MergeShards(reps []Report) (Report, error) {
	if len(reps) == 0 {
		return Report{}, fmt.Errorf("%w: no shard reports", ErrShards)
	}
	n := reps[0].Shards
	if n < 1 {
		return Report{}, fmt.Errorf("%w: report 1 is not a shard", ErrShards)
	}
	seen := make([]bool, n)
	first := &reps[0]
	same := func(r *Report) string {
		switch {
		case r.Shards != n:
			return fmt.Sprintf("it is a shard of %d, not %d", r.Shards, n)
		case r.TokenIDsSHA256 != first.TokenIDsSHA256:
			return "its token ids differ"
		case r.Method != first.Method || r.Ctx != first.Ctx || r.Stride != first.Stride || r.ChunkLimit != first.ChunkLimit:
			return "its windows differ"
		case (r.KLD == nil) != (first.KLD == nil) || (r.KLD != nil && (r.KLD.Base != first.KLD.Base || r.KLD.TopK != first.KLD.TopK)):
			return "it compared against another base"
		case !reflect.DeepEqual(r.Config, first.Config):
			return "its engine config differs"
		case r.Partial:
			return "it stopped early"
		case r.Sums == nil:
			return "it carries no sums"
		}
		return ""
	}
	var nll NLLStats
	var kld *KLDStats
	out := *first
	out.Windows, out.Shard, out.Shards, out.Sums, out.Record = nil, 0, 0, nil, nil
	out.WindowsScored, out.PrefillTokens, out.ElapsedSeconds, out.ProgressHeldSeconds = 0, 0, 0, 0
	out.TextBytes = 0
	out.Warnings = nil
	for i := range reps {
		r := &reps[i]
		if why := same(r); why != "" {
			return Report{}, fmt.Errorf("%w: shard report %d (%s): %s", ErrShards, i+1, r.ShardSpec(), why)
		}
		if seen[r.Shard] {
			return Report{}, fmt.Errorf("%w: shard %s given twice", ErrShards, r.ShardSpec())
		}
		seen[r.Shard] = true
		nll.Merge(r.Sums.NLL)
		if r.Sums.KLD != nil {
			if kld == nil {
				kld = &KLDStats{}
			}
			kld.Merge(r.Sums.KLD.Stats())
		}
		out.Windows = append(out.Windows, r.Windows...)
		out.WindowsScored += r.WindowsScored
		out.TextBytes += r.TextBytes
		out.PrefillTokens += r.PrefillTokens
		out.ElapsedSeconds += r.ElapsedSeconds
		out.ProgressHeldSeconds += r.ProgressHeldSeconds
		for _, w := range r.Warnings {
			if !slices.Contains(out.Warnings, w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return Report{}, fmt.Errorf("%w: shard %d/%d is missing", ErrShards, i, n)
		}
	}
	slices.SortFunc(out.Windows, func(a, b WindowReport) int { return a.Index - b.Index })
	var err error
	if out.Trace, err = mergeTraces(reps); err != nil { // nil when a shard has none
		return Report{}, fmt.Errorf("%w: %v", ErrShards, err)
	}
	res := nll.Result()
	out.ScoredTokens, out.MeanNLL, out.Perplexity, out.PerplexityUncertainty = res.N, res.MeanNLL, res.Perplexity, res.Uncertainty
	out.BitsPerByte, out.BitsPerByteUncertainty = BitsPerByte(res, out.TextBytes)
	out.PrefillTokensPerSecond = 0
	if working := out.ElapsedSeconds - out.ProgressHeldSeconds; working > 0 {
		out.PrefillTokensPerSecond = float64(out.PrefillTokens) / working
	}
	if kld != nil {
		k := kld.Result()
		k.Base, k.BaseFormat, k.TopK = first.KLD.Base, first.KLD.BaseFormat, first.KLD.TopK
		out.KLD = &k
	}
	out.sanitize()
	return out, nil
}
