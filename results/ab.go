package results

// ab.go owns the A/B summary: B against A, as the TUI's A/B view shows it
// and `plexbench ab` prints it, kept beside B's record (ABPath) by both.

import (
	"encoding/json"
	"fmt"
	"math"

	"plexbench/internal/outfile"
	"plexbench/scoring"
)

// ABObject is an A/B summary's object value.
const ABObject = "plexbench.ab"

// ABSide is one run's headline figures.
type ABSide struct {
	Name                   string  `json:"name"`
	Report                 string  `json:"report,omitempty"` // its report's path
	Perplexity             float64 `json:"perplexity"`
	PerplexityUncertainty  float64 `json:"perplexity_uncertainty"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	WindowsScored          int     `json:"windows_scored"`
}

// SideOf is r's headline figures under name; report is its path.
func SideOf(name, report string, r *scoring.Report) ABSide {
	return ABSide{Name: name, Report: report, Perplexity: r.Perplexity, PerplexityUncertainty: r.PerplexityUncertainty,
		PrefillTokensPerSecond: r.PrefillTokensPerSecond, WindowsScored: r.WindowsScored}
}

// ABSummary is B against A.
type ABSummary struct {
	Object      string             `json:"object"`
	A           ABSide             `json:"a"`
	B           ABSide             `json:"b"`
	Diff        []string           `json:"diff,omitempty"` // the profiles' differences, B − A
	Base        string             `json:"base,omitempty"` // the base B was compared against
	Comparison  scoring.Comparison `json:"comparison"`
	DeltaZ      float64            `json:"delta_z"`     // ΔmeanNLL / its standard error
	Significant bool               `json:"significant"` // |z| > scoring.Sigmas
	KLDBand     string             `json:"kld_band,omitempty"`
	Verdict     string             `json:"verdict"`
	NoiseRecord string             `json:"noise_record,omitempty"` // the record of the noise floor the verdict used
	Partial     bool               `json:"partial,omitempty"`      // B did not score every window
	// StoppedEarly is B's stopping rule where it stopped B (its report's
	// stopped_early): the comparison is over the windows scored to then.
	StoppedEarly *scoring.StopReport `json:"stopped_early,omitempty"`
	// TokenizerMismatch, when the sides' tokenizers or token streams
	// differ and the comparison was allowed, says how; the sides are then
	// compared by bits per byte only (PairBitsPerByte): no KLD, no paired
	// statistics.
	TokenizerMismatch           string   `json:"tokenizer_mismatch,omitempty"`
	DeltaBitsPerByte            *float64 `json:"delta_bits_per_byte,omitempty"` // B − A
	DeltaBitsPerByteUncertainty *float64 `json:"delta_bits_per_byte_uncertainty,omitempty"`
	// Choice is two multiple-choice runs' comparison (PairChoices); the
	// perplexity fields are then empty.
	Choice *scoring.ChoiceComparison `json:"choice,omitempty"`
	Failed []string                  `json:"failed,omitempty"` // --fail-if conditions that hold
}

// NewABSummary is the summary of comparison c between sides a and b, with
// its significance, KLD band and verdict.
func NewABSummary(c scoring.Comparison, a, b ABSide) ABSummary {
	z, sig := c.Significant()
	s := ABSummary{Object: ABObject, A: a, B: b, Comparison: c, DeltaZ: z, Significant: sig, Verdict: c.Verdict()}
	if c.KLD != nil {
		s.KLDBand = scoring.KLDBand(c.KLD.MeanKLD)
	}
	return s
}

// Pair compares two finished reports: their paired windows and B's KLD
// report against its base. The sides' names and paths are the caller's.
func Pair(a, b *scoring.Report) ABSummary {
	c := scoring.ComparePaired(a.Windows, b.Windows)
	c.KLD = b.KLD.Summary()
	s := NewABSummary(c, SideOf("", "", a), SideOf("", "", b))
	s.StoppedEarly = b.StoppedEarly
	return s
}

// SetNoiseFloor gives the comparison the engine's noise floor measured
// for A's base (by the noise record named record) and redoes the verdict.
func (s *ABSummary) SetNoiseFloor(floor float64, record string) {
	s.Comparison.NoiseFloor, s.NoiseRecord = &floor, record
	s.Verdict = s.Comparison.Verdict()
}

// PairBitsPerByte compares two reports scored with different tokenizers
// (mismatch says how they differ) by bits per byte alone: B − A, with
// the sides' errors added in quadrature (their tokens do not pair, so
// no covariance is taken out). No KLD, no paired windows.
func PairBitsPerByte(a, b *scoring.Report, mismatch string) ABSummary {
	s := ABSummary{Object: ABObject, A: SideOf("", "", a), B: SideOf("", "", b), TokenizerMismatch: mismatch}
	d := b.BitsPerByte - a.BitsPerByte
	u := math.Hypot(a.BitsPerByteUncertainty, b.BitsPerByteUncertainty)
	s.DeltaBitsPerByte, s.DeltaBitsPerByteUncertainty = &d, &u
	if u > 0 {
		s.DeltaZ = d / u
	}
	s.Significant = math.Abs(s.DeltaZ) > scoring.Sigmas
	head := "B is within noise of A"
	switch {
	case s.Significant && d > 0:
		head = "B is worse than A"
	case s.Significant:
		head = "B is better than A"
	}
	s.Verdict = fmt.Sprintf("%s by bits per byte only (tokenizers differ: no KLD, no paired statistics): %.4f vs %.4f bits/byte, B − A %s",
		head, a.BitsPerByte, b.BitsPerByte, scoring.PMSigned(d, u))
	return s
}

// WriteAB writes s at path.
func WriteAB(path string, s ABSummary) error {
	s.Object = ABObject
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(data, '\n'))
}

// PairChoices compares two finished multiple-choice reports over the same
// tasks (scoring.CompareChoices).
func PairChoices(a, b *scoring.Report) (ABSummary, error) {
	ca, cb := a.Choice(), b.Choice()
	if ca == nil || cb == nil {
		return ABSummary{}, fmt.Errorf("%w: a multiple-choice report against a perplexity report", scoring.ErrDifferentTasks)
	}
	c, err := scoring.CompareChoices(ca, cb)
	if err != nil {
		return ABSummary{}, err
	}
	s := ABSummary{Object: ABObject, A: SideOf("", "", a), B: SideOf("", "", b), Choice: &c, Verdict: c.Verdict(), Significant: c.Significant}
	return s, nil
}
