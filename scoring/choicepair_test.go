package scoring

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestMcNemarExact: the p-value equals min(1, 2·Σ_{i ≤ min(b,c)} C(n,i)/2^n)
// summed in exact rationals, and stays finite and in (0, 1] for counts
// whose binomials overflow float64.
func TestMcNemarExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		b, c := r.IntN(80), r.IntN(80)
		n := b + c
		sum := new(big.Rat)
		for i := 0; i <= min(b, c); i++ {
			sum.Add(sum, new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n), int64(i)), new(big.Int).Lsh(big.NewInt(1), uint(n))))
		}
		want, _ := sum.Mul(sum, big.NewRat(2, 1)).Float64()
		want = math.Min(1, want)
		if got := McNemarExact(b, c); math.Abs(got-want) > 1e-12*want && !(b == c && got == 1) {
			t.Fatalf("b %d c %d: p %v, exact %v", b, c, got, want)
		}
	}
	for _, bc := range [][2]int{{2000, 2100}, {5000, 4000}, {0, 3000}} {
		if p := McNemarExact(bc[0], bc[1]); !(p >= 0 && p <= 1) || math.IsNaN(p) {
			t.Errorf("%v: p %v", bc, p)
		}
	}
	if McNemarExact(0, 0) != 1 || math.Abs(McNemarExact(0, 6)-2.0/64) > 1e-15 {
		t.Error("no discordant pairs, or six one way")
	}
}

// TestCompareChoices: discordant counts, accuracies and the difference
// recount from the results; runs of other tasks are refused.
func TestCompareChoices(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	var a, b ChoiceSummary
	a.Method, b.Method = MethodWinogrande, MethodWinogrande
	rightA, rightB, onlyA, onlyB := 0, 0, 0, 0
	for i := range 300 {
		gold := r.IntN(2)
		ca, cb := r.IntN(2), r.IntN(2)
		if r.IntN(3) > 0 {
			cb = ca
		}
		a.Results = append(a.Results, ChoiceResult{Task: i * 3, Gold: gold, Chosen: ca})
		b.Results = append(b.Results, ChoiceResult{Task: i * 3, Gold: gold, Chosen: cb})
		okA, okB := ca == gold, cb == gold
		rightA, rightB = rightA+btoi(okA), rightB+btoi(okB)
		onlyA, onlyB = onlyA+btoi(okA && !okB), onlyB+btoi(okB && !okA)
	}
	c, err := CompareChoices(&a, &b)
	if err != nil {
		t.Fatal(err)
	}
	if c.OnlyA != onlyA || c.OnlyB != onlyB || c.DeltaAccuracy != 100*float64(rightB)/300-100*float64(rightA)/300 ||
		c.McNemarP != McNemarExact(onlyA, onlyB) || c.Significant != (c.McNemarP < 0.05) || c.DeltaAccuracyUncertainty <= 0 {
		t.Fatalf("%+v; want only A %d, only B %d", c, onlyA, onlyB)
	}
	other := b
	other.Results = append([]ChoiceResult(nil), b.Results...)
	other.Results[7].Task++
	short := b
	short.Results = b.Results[:10]
	hs := b
	hs.Method = MethodHellaSwag
	for _, x := range []*ChoiceSummary{&other, &short, &hs} {
		if _, err := CompareChoices(&a, x); !errors.Is(err, ErrDifferentTasks) {
			t.Errorf("paired runs of other tasks: %v", err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
