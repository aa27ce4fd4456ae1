// compare.go owns the A/B arithmetic: ΔPPL with an uncertainty from the
// paired per-window differences, the speed ratio with its spread, and the
// verdict line in words. A and B score identical windows, so differences
// window by window cancel the text's own variation, which dominates the
// plain ± of each perplexity.
package tui

import (
	"fmt"
	"math"
	"strings"

	"plexbench/scoring"
)

// Comparison is B against A over the windows both have scored.
type Comparison struct {
	Windows int // paired windows

	// DeltaMeanNLL is the token-weighted mean over windows of B's minus A's
	// mean NLL, ln(PPL_B/PPL_A) over the paired windows, with the standard
	// error over windows (reduces to sd/√n for chunks, whose windows all
	// score the same number of tokens).
	DeltaMeanNLL            float64 `json:"delta_mean_nll"`
	DeltaMeanNLLUncertainty float64 `json:"delta_mean_nll_uncertainty"`
	// DeltaPPLPercent is 100·(PPL_B/PPL_A − 1) with its propagated uncertainty.
	DeltaPPLPercent            float64 `json:"delta_ppl_percent"`
	DeltaPPLPercentUncertainty float64 `json:"delta_ppl_percent_uncertainty"`

	// SpeedRatio is B's prefill speed over A's (A's seconds over B's, summed
	// over the paired windows); its uncertainty is the standard error of the
	// per-window ratios.
	SpeedRatio            float64 `json:"speed_ratio"`
	SpeedRatioUncertainty float64 `json:"speed_ratio_uncertainty"`
	// AttentionKeptA and AttentionKeptB are each side's mean fraction of
	// causal attention blocks computed over the paired windows (1 for
	// dense, FlashPrefill's selection otherwise), beside the speed ratio.
	AttentionKeptA float64 `json:"attention_kept_a"`
	AttentionKeptB float64 `json:"attention_kept_b"`

	// KLD summarises B against A's base (nil when B ran without one).
	KLD *KLDSummary `json:"kld,omitempty"`
}

// KLDSummary is the part of a KLD comparison the views show, from a live
// snapshot or a finished report.
type KLDSummary struct {
	Tokens             int     `json:"tokens"`
	MeanKLD            float64 `json:"mean_kld"`
	MeanKLDUncertainty float64 `json:"mean_kld_uncertainty"`
	P50                float64 `json:"kld_p50"`
	P90                float64 `json:"kld_p90"`
	P99                float64 `json:"kld_p99"`
	Max                float64 `json:"kld_max"`
	SameTop            float64 `json:"same_top"`
	SameTopUncertainty float64 `json:"same_top_uncertainty"`
	MeanDeltaP         float64 `json:"mean_delta_p"`
	NonFinite          int     `json:"nonfinite_tokens"`
}

func kldFromSnapshot(k *scoring.KLDSnapshot) *KLDSummary {
	if k == nil {
		return nil
	}
	return &KLDSummary{Tokens: k.Tokens, MeanKLD: k.MeanKLD, MeanKLDUncertainty: k.MeanKLDUncertainty,
		P50: k.P50, P90: k.P90, P99: k.P99, Max: k.Max, SameTop: k.SameTop,
		SameTopUncertainty: k.SameTopUncertainty, MeanDeltaP: k.MeanDeltaP, NonFinite: k.NonFinite}
}

func kldFromReport(k *scoring.KLDReport) *KLDSummary {
	if k == nil {
		return nil
	}
	return &KLDSummary{Tokens: k.Tokens, MeanKLD: k.MeanKLD, MeanKLDUncertainty: k.MeanKLDUncertainty,
		P50: k.KLDPercentiles.Median, P90: k.KLDPercentiles.P90, P99: k.KLDP99, Max: k.KLDMax,
		SameTop: k.SameTop, SameTopUncertainty: k.SameTopUncertainty, MeanDeltaP: k.MeanDeltaP,
		NonFinite: k.NonFiniteTokens}
}

// Compare pairs a's and b's windows by index and compares them. Windows
// only one side has, or whose scored counts differ (not the same window),
// are left out.
func Compare(a, b []scoring.WindowReport) Comparison {
	byIndex := make(map[int]scoring.WindowReport, len(a))
	for _, w := range a {
		byIndex[w.Index] = w
	}
	var (
		n            int
		sw, swd      float64 // Σ weights, Σ w·d
		ds, ws       []float64
		secA, secB   float64
		keptA, keptB float64
		ratios       []float64
	)
	for _, wb := range b {
		wa, ok := byIndex[wb.Index]
		if !ok || wa.Scored != wb.Scored || wa.Scored == 0 {
			continue
		}
		n++
		d := wb.NLLSum/float64(wb.Scored) - wa.NLLSum/float64(wa.Scored)
		w := float64(wa.Scored)
		ds, ws = append(ds, d), append(ws, w)
		sw += w
		swd += w * d
		secA += wa.Seconds
		secB += wb.Seconds
		keptA += wa.AttentionKept
		keptB += wb.AttentionKept
		if wa.Seconds > 0 && wb.Seconds > 0 {
			ratios = append(ratios, wa.Seconds/wb.Seconds)
		}
	}
	c := Comparison{Windows: n}
	if n == 0 {
		return c
	}
	c.AttentionKeptA, c.AttentionKeptB = keptA/float64(n), keptB/float64(n)
	mean := swd / sw
	c.DeltaMeanNLL = mean
	if n > 1 {
		// Standard error of a weighted mean of independent window
		// differences, with the n/(n−1) small-sample correction.
		var v float64
		for i, d := range ds {
			v += ws[i] * ws[i] * (d - mean) * (d - mean)
		}
		c.DeltaMeanNLLUncertainty = math.Sqrt(v/(sw*sw)) * math.Sqrt(float64(n)/float64(n-1))
	}
	r := math.Exp(mean)
	c.DeltaPPLPercent = 100 * (r - 1)
	c.DeltaPPLPercentUncertainty = 100 * r * c.DeltaMeanNLLUncertainty
	if secB > 0 {
		c.SpeedRatio = secA / secB
	}
	if len(ratios) > 1 {
		var m, v float64
		for _, x := range ratios {
			m += x
		}
		m /= float64(len(ratios))
		for _, x := range ratios {
			v += (x - m) * (x - m)
		}
		c.SpeedRatioUncertainty = math.Sqrt(v / float64(len(ratios)-1) / float64(len(ratios)))
	}
	return c
}

// Thresholds of the verdict. A mean KLD below matchKLD (nats) is what
// lossless changes (KV f16 vs f32, batch plans) show; closeKLD is where
// 8-bit quantization sits.
const (
	matchKLD = 0.001
	closeKLD = 0.01
	// sigmas is how many standard errors a ΔPPL must exceed to count.
	sigmas = 2.0
	// slightPct is the |ΔPPL| (percent) below which a real difference is
	// called slight.
	slightPct = 1.0
)

// Clear reports whether more windows would not change the verdict's
// words: the ΔPPL is beyond 3σ of zero, or known to ±0.05%, with enough
// windows (10) that the standard error itself can be trusted.
func (c Comparison) Clear() bool {
	if c.Windows < 10 || c.DeltaMeanNLLUncertainty <= 0 {
		return false
	}
	return math.Abs(c.DeltaMeanNLL) > 3*c.DeltaMeanNLLUncertainty || c.DeltaPPLPercentUncertainty < 0.05
}

// Verdict says in words how B compares to A, for example
// "B matches A: mean KLD 0.0003 ± 0.0001, same top 99.6%; PPL +0.02% ± 0.03%; 1.8× faster".
func (c Comparison) Verdict() string {
	if c.Windows == 0 {
		return "no windows to compare yet"
	}
	noise := math.Abs(c.DeltaMeanNLL) <= sigmas*c.DeltaMeanNLLUncertainty
	var head string
	switch {
	case noise && c.KLD != nil && c.KLD.MeanKLD <= matchKLD:
		head = "B matches A"
	case noise && (c.KLD == nil || c.KLD.MeanKLD <= closeKLD):
		head = "B is close to A"
	case noise:
		head = "B differs from A (same perplexity, different distributions)"
	case c.DeltaMeanNLL > 0 && c.DeltaPPLPercent < slightPct:
		head = "B is slightly worse than A"
	case c.DeltaMeanNLL > 0:
		head = "B is worse than A"
	case c.DeltaPPLPercent > -slightPct:
		head = "B has slightly lower perplexity than A"
	default:
		head = "B has lower perplexity than A"
	}
	var parts []string
	if k := c.KLD; k != nil {
		parts = append(parts, fmt.Sprintf("mean KLD %s, same top %s", pm(k.MeanKLD, k.MeanKLDUncertainty), pct(k.SameTop, 1)))
	}
	if c.Windows > 1 {
		parts = append(parts, "PPL "+pmSigned(c.DeltaPPLPercent, c.DeltaPPLPercentUncertainty)+"%")
	} else {
		parts = append(parts, fmt.Sprintf("PPL %+.2f%% (one window: no spread yet)", c.DeltaPPLPercent))
	}
	if s := c.speedWords(); s != "" {
		parts = append(parts, s)
	}
	return head + ": " + strings.Join(parts, "; ")
}

// speedWords says "1.8× faster", "1.3× slower" or "same speed".
func (c Comparison) speedWords() string {
	r := c.SpeedRatio
	switch {
	case r <= 0 || math.IsNaN(r) || math.IsInf(r, 0):
		return ""
	case math.Abs(r-1) <= max(0.03, sigmas*c.SpeedRatioUncertainty):
		return "same speed"
	case r > 1:
		return factor(r) + "× faster"
	}
	return factor(1/r) + "× slower"
}

// factor writes a ratio above 1 with one decimal, two when that would read 1.0.
func factor(x float64) string {
	s := fmt.Sprintf("%.1f", x)
	if s == "1.0" {
		s = fmt.Sprintf("%.2f", x)
	}
	return s
}
