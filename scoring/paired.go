package scoring

// paired.go owns the A/B arithmetic: ΔPPL with an uncertainty from the
// paired per-window differences, the speed ratio with its spread, and the
// verdict line in words, with B's mean KLD against A placed in the usual
// bands. A and B score identical windows, so differences window by window
// cancel the text's own variation, which dominates the plain ± of each
// perplexity. The TUI's A/B view and `plexbench ab` both use it.

import (
	"fmt"
	"math"
	"strings"
)

// Comparison is B against A over the windows both have scored.
type Comparison struct {
	Windows int `json:"windows"` // paired windows

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
	// NoiseFloor is the engine's noise floor measured for A's base
	// (`plexbench noise`, noise.go), when known: the verdict says when
	// B's mean KLD is within it.
	NoiseFloor *float64 `json:"noise_floor,omitempty"`
}

// Summary is the report's KLD summary; nil for nil.
func (k *KLDReport) Summary() *KLDSummary {
	if k == nil {
		return nil
	}
	return &KLDSummary{Tokens: k.Tokens, MeanKLD: k.MeanKLD, MeanKLDUncertainty: k.MeanKLDUncertainty,
		P50: k.KLDPercentiles.Median, P90: k.KLDPercentiles.P90, P99: k.KLDP99, Max: k.KLDMax,
		SameTop: k.SameTop, SameTopUncertainty: k.SameTopUncertainty, MeanDeltaP: k.MeanDeltaP,
		NonFinite: k.NonFiniteTokens}
}

// PairedStats accumulates (A, B) window pairs. Sums are float64 and
// order-free, so pairs can be added in any order or merged from parts.
// The zero value is ready to use.
type PairedStats struct {
	N                int     // pairs
	SW, SWD          float64 // Σ w, Σ w·d (w = tokens scored, d = B's − A's mean NLL)
	SW2, SW2D, SW2D2 float64 // Σ w², Σ w²·d, Σ w²·d²
	SecA, SecB       float64 // Σ seconds
	KeptA, KeptB     float64 // Σ attention_kept
	NRatio           int     // pairs with both times positive
	SRatio, SRatio2  float64 // Σ r, Σ r² of the per-window speed ratios
}

// WindowDelta is B's minus A's mean NLL of one window pair.
func WindowDelta(a, b WindowReport) float64 {
	return b.NLLSum/float64(b.Scored) - a.NLLSum/float64(a.Scored)
}

// Add adds one pair; it reports false, adding nothing, when the two are
// not the same window (different index or scored count) or score nothing.
func (s *PairedStats) Add(a, b WindowReport) bool {
	if a.Index != b.Index || a.Scored != b.Scored || a.Scored == 0 {
		return false
	}
	d, w := WindowDelta(a, b), float64(a.Scored)
	s.N++
	s.SW += w
	s.SWD += w * d
	s.SW2 += w * w
	s.SW2D += w * w * d
	s.SW2D2 += w * w * d * d
	s.SecA += a.Seconds
	s.SecB += b.Seconds
	s.KeptA += a.AttentionKept
	s.KeptB += b.AttentionKept
	if a.Seconds > 0 && b.Seconds > 0 {
		r := a.Seconds / b.Seconds
		s.NRatio++
		s.SRatio += r
		s.SRatio2 += r * r
	}
	return true
}

// Merge adds another accumulator's pairs.
func (s *PairedStats) Merge(o PairedStats) {
	s.N += o.N
	s.SW += o.SW
	s.SWD += o.SWD
	s.SW2 += o.SW2
	s.SW2D += o.SW2D
	s.SW2D2 += o.SW2D2
	s.SecA += o.SecA
	s.SecB += o.SecB
	s.KeptA += o.KeptA
	s.KeptB += o.KeptB
	s.NRatio += o.NRatio
	s.SRatio += o.SRatio
	s.SRatio2 += o.SRatio2
}

// Result is the comparison over the pairs added (KLD left to the caller).
func (s PairedStats) Result() Comparison {
	c := Comparison{Windows: s.N}
	if s.N == 0 {
		return c
	}
	c.AttentionKeptA, c.AttentionKeptB = s.KeptA/float64(s.N), s.KeptB/float64(s.N)
	mean := s.SWD / s.SW
	c.DeltaMeanNLL = mean
	if s.N > 1 {
		// Standard error of a weighted mean of independent window
		// differences, Σ w²(d − mean)² / (Σ w)², with the n/(n−1)
		// small-sample correction.
		v := s.SW2D2 - 2*mean*s.SW2D + mean*mean*s.SW2
		c.DeltaMeanNLLUncertainty = sqrtPos(v/(s.SW*s.SW)) * math.Sqrt(float64(s.N)/float64(s.N-1))
	}
	r := math.Exp(mean)
	c.DeltaPPLPercent = 100 * (r - 1)
	c.DeltaPPLPercentUncertainty = 100 * r * c.DeltaMeanNLLUncertainty
	if s.SecB > 0 {
		c.SpeedRatio = s.SecA / s.SecB
	}
	if n := float64(s.NRatio); s.NRatio > 1 {
		m := s.SRatio / n
		c.SpeedRatioUncertainty = sqrtPos((s.SRatio2 - n*m*m) / (n - 1) / n)
	}
	return c
}

// ComparePaired pairs a's and b's windows by index and compares them.
// Windows only one side has, or whose scored counts differ (not the same
// window), are left out.
func ComparePaired(a, b []WindowReport) Comparison {
	byIndex := make(map[int]WindowReport, len(a))
	for _, w := range a {
		byIndex[w.Index] = w
	}
	var s PairedStats
	for _, wb := range b {
		if wa, ok := byIndex[wb.Index]; ok {
			s.Add(wa, wb)
		}
	}
	return s.Result()
}

// Thresholds of the verdict. matchKLD and closeKLD bound what reads as "B
// matches A" and "B is close to A" (nats; the bands of KLDBand).
const (
	matchKLD = 1e-4
	closeKLD = 1e-2
	// Sigmas is how many standard errors a ΔPPL must exceed to count.
	Sigmas = 2.0
	// slightPct is the |ΔPPL| (percent) below which a real difference is
	// called slight.
	slightPct = 1.0
)

// KLDBand places a mean KLD (nats) in the bands users of mlx-kld and
// llama-perplexity read them by (../shared/spec/peers/
// kld-methodology-notes.txt): below 1e-4 indistinguishable, 1e-3–5e-3
// like a 6-bit quantization, 1e-2–5e-2 like 4-bit, above 1e-1
// substantial; the gaps between are named as such. Rules of thumb, not
// validated thresholds.
func KLDBand(meanKLD float64) string {
	for _, b := range kldBands {
		if meanKLD < b.below {
			return b.name
		}
	}
	return "substantial"
}

// kldBands are KLDBand's bands, by their upper bound.
var kldBands = []struct {
	below float64
	name  string
}{
	{1e-4, "indistinguishable"},
	{1e-3, "small, below a 6-bit quantization's"},
	{5e-3, "like a 6-bit quantization"},
	{1e-2, "between a 6-bit and a 4-bit quantization"},
	{5e-2, "like a 4-bit quantization"},
	{1e-1, "beyond a typical 4-bit quantization"},
}

// Significant reports whether the ΔPPL is beyond Sigmas standard errors
// of zero, and by how many (z; 0 without an error estimate).
func (c Comparison) Significant() (z float64, significant bool) {
	if c.DeltaMeanNLLUncertainty > 0 {
		z = c.DeltaMeanNLL / c.DeltaMeanNLLUncertainty
	}
	return z, math.Abs(c.DeltaMeanNLL) > Sigmas*c.DeltaMeanNLLUncertainty
}

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
// "B is close to A: mean KLD 0.00066 ± 0.00002 (small, below a 6-bit
// quantization's), same top 99.6%; PPL +0.02 ± 0.03%; 1.8× faster".
func (c Comparison) Verdict() string {
	if c.Windows == 0 {
		return "no windows to compare yet"
	}
	_, sig := c.Significant()
	noise := !sig
	var head string
	switch {
	case noise && c.KLD != nil && c.NoiseFloor != nil && WithinFloor(c.KLD.MeanKLD, *c.NoiseFloor):
		head = fmt.Sprintf("B is within the engine's noise (its floor %.3g)", *c.NoiseFloor)
	case noise && c.KLD != nil && c.KLD.MeanKLD < matchKLD:
		head = "B matches A"
	case noise && (c.KLD == nil || c.KLD.MeanKLD < closeKLD):
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
		parts = append(parts, fmt.Sprintf("mean KLD %s (%s), same top %s",
			PM(k.MeanKLD, k.MeanKLDUncertainty), KLDBand(k.MeanKLD), Percent(k.SameTop, 1)))
	}
	if c.Windows > 1 {
		parts = append(parts, "PPL "+PMSigned(c.DeltaPPLPercent, c.DeltaPPLPercentUncertainty)+"%")
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
	case math.Abs(r-1) <= max(0.03, Sigmas*c.SpeedRatioUncertainty):
		return "same speed"
	case r > 1:
		return Factor(r) + "× faster"
	}
	return Factor(1/r) + "× slower"
}

// Factor writes a ratio above 1 with one decimal, two when that would read 1.0.
func Factor(x float64) string {
	s := fmt.Sprintf("%.1f", x)
	if s == "1.0" {
		s = fmt.Sprintf("%.2f", x)
	}
	return s
}

// Decimals returns how many decimals show two significant digits of u,
// clamped to 0..8; 4 when u is zero or not finite.
func Decimals(u float64) int {
	if u == 0 || math.IsNaN(u) || math.IsInf(u, 0) {
		return 4
	}
	d := 1 - int(math.Floor(math.Log10(math.Abs(u))))
	return max(0, min(8, d))
}

// PM writes v ± u with both at u's precision (two significant digits of
// u). Tiny values (KLDs of lossless changes) share an exponent instead of
// a row of zeros: "(1.010 ± 0.030)e-6".
func PM(v, u float64) string {
	if a := math.Abs(v); a != 0 && a < 1e-4 && !math.IsInf(a, 0) && !math.IsNaN(a) && u < a*10 {
		e := int(math.Floor(math.Log10(a)))
		scale := math.Pow(10, float64(e))
		d := Decimals(u / scale)
		if u == 0 {
			d = 3
		}
		return fmt.Sprintf("(%.*f ± %.*f)e%d", d, v/scale, d, u/scale, e)
	}
	d := Decimals(u)
	return fmt.Sprintf("%.*f ± %.*f", d, v, d, u)
}

// PMSigned is PM with an explicit sign on v.
func PMSigned(v, u float64) string {
	d := Decimals(u)
	return fmt.Sprintf("%+.*f ± %.*f", d, v, d, u)
}

// Percent writes a fraction as a percentage with at least the given
// decimals, more when fewer would round a fraction short of 1 up to "100".
func Percent(f float64, decimals int) string {
	s := fmt.Sprintf("%.*f", decimals, 100*f)
	for f < 1 && decimals < 6 && strings.HasPrefix(s, "100") {
		decimals++
		s = fmt.Sprintf("%.*f", decimals, 100*f)
	}
	return s + "%"
}
