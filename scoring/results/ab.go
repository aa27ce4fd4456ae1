package results

// ab.go owns the A/B summary: B against A, as the TUI's A/B view shows it
// and `plexbench ab` prints it, kept beside B's record (ABPath) by both.

import (
	"encoding/json"
	"fmt"

	"plexbench/scoring"
	"plexbench/scoring/outfile"
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
	Partial     bool               `json:"partial,omitempty"` // B did not score every window
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
	return NewABSummary(c, SideOf("", "", a), SideOf("", "", b))
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
