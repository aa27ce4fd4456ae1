package scoring

// choicepair.go owns the A/B arithmetic of two multiple-choice runs over
// the same tasks: the paired difference in accuracy with its standard
// error, and McNemar's exact test on the tasks only one side got right.

import (
	"errors"
	"fmt"
	"math"
)

// ErrDifferentTasks marks two multiple-choice runs that cannot be paired.
var ErrDifferentTasks = errors.New("different tasks")

// ChoiceComparison is B against A on the same multiple-choice tasks.
type ChoiceComparison struct {
	Method string `json:"method"`
	Tasks  int    `json:"tasks"` // paired tasks
	// AccuracyA and AccuracyB are 100·right/tasks; DeltaAccuracy is B − A
	// in percentage points, with the standard error of the paired
	// difference, 100·sqrt(b + c − (c − b)²/n)/n.
	AccuracyA                float64 `json:"accuracy_a"`
	AccuracyB                float64 `json:"accuracy_b"`
	DeltaAccuracy            float64 `json:"delta_accuracy"`
	DeltaAccuracyUncertainty float64 `json:"delta_accuracy_uncertainty"`
	// OnlyA (b) and OnlyB (c) count the tasks only A, only B chose right.
	OnlyA int `json:"only_a_right"`
	OnlyB int `json:"only_b_right"`
	// McNemarP is the exact two-sided p-value of McNemar's test: under no
	// difference each of the b + c discordant tasks goes either way with
	// probability ½; Significant is McNemarP < 0.05.
	McNemarP    float64 `json:"mcnemar_p"`
	Significant bool    `json:"significant"`
}

// CompareChoices pairs two multiple-choice runs task by task. They must
// be of one mode and one task file and have scored the same tasks, in the
// same order, with the same gold answers.
func CompareChoices(a, b *ChoiceSummary) (ChoiceComparison, error) {
	switch {
	case a.Method != b.Method:
		return ChoiceComparison{}, fmt.Errorf("%w: a %s run against a %s run", ErrDifferentTasks, a.Method, b.Method)
	case a.TaskFileSHA256 != "" && b.TaskFileSHA256 != "" && a.TaskFileSHA256 != b.TaskFileSHA256:
		return ChoiceComparison{}, fmt.Errorf("%w: task files of sha256 %.12s… and %.12s…", ErrDifferentTasks, a.TaskFileSHA256, b.TaskFileSHA256)
	case len(a.Results) != len(b.Results):
		return ChoiceComparison{}, fmt.Errorf("%w: %d tasks against %d", ErrDifferentTasks, len(a.Results), len(b.Results))
	case len(a.Results) == 0:
		return ChoiceComparison{}, fmt.Errorf("%w: no tasks scored", ErrDifferentTasks)
	}
	c := ChoiceComparison{Method: a.Method, Tasks: len(a.Results)}
	rightA, rightB := 0, 0
	for i, ra := range a.Results {
		rb := b.Results[i]
		if ra.Task != rb.Task || ra.Gold != rb.Gold {
			return ChoiceComparison{}, fmt.Errorf("%w: the %d-th task scored is task %d (gold %d) against task %d (gold %d)",
				ErrDifferentTasks, i+1, ra.Task, ra.Gold, rb.Task, rb.Gold)
		}
		okA, okB := ra.Chosen == ra.Gold, rb.Chosen == rb.Gold
		switch {
		case okA && !okB:
			c.OnlyA++
		case okB && !okA:
			c.OnlyB++
		}
		if okA {
			rightA++
		}
		if okB {
			rightB++
		}
	}
	n := float64(c.Tasks)
	c.AccuracyA, c.AccuracyB = 100*float64(rightA)/n, 100*float64(rightB)/n
	c.DeltaAccuracy = c.AccuracyB - c.AccuracyA
	d := float64(c.OnlyB - c.OnlyA)
	c.DeltaAccuracyUncertainty = 100 * math.Sqrt(math.Max(0, float64(c.OnlyA+c.OnlyB)-d*d/n)) / n
	c.McNemarP = McNemarExact(c.OnlyA, c.OnlyB)
	c.Significant = c.McNemarP < 0.05
	return c, nil
}

// McNemarExact is the exact two-sided p-value of McNemar's test for b and
// c discordant pairs: min(1, 2·P(X ≤ min(b, c))) for X ~ Binomial(b + c, ½),
// the terms summed in log space so that large counts neither overflow nor
// underflow early; 1 when there are no discordant pairs.
func McNemarExact(b, c int) float64 {
	n, k := b+c, min(b, c)
	if n == 0 {
		return 1
	}
	lgn, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgn - li - lr - float64(n)*math.Ln2)
	}
	return math.Min(1, 2*sum)
}

// Verdict says in words what the comparison shows.
func (c ChoiceComparison) Verdict() string {
	if !c.Significant {
		return fmt.Sprintf("no accuracy difference shown (B − A %+.2f points, McNemar p = %.3g over %d tasks)", c.DeltaAccuracy, c.McNemarP, c.Tasks)
	}
	better := "better"
	if c.DeltaAccuracy < 0 {
		better = "worse"
	}
	return fmt.Sprintf("B is %s by %.2f points (McNemar p = %.3g over %d tasks)", better, math.Abs(c.DeltaAccuracy), c.McNemarP, c.Tasks)
}
