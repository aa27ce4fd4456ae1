package scoring

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// windows makes n windows with the given per-window mean NLLs and seconds.
func windows(scored []int, mean []float64, secs []float64) []WindowReport {
	ws := make([]WindowReport, len(mean))
	for i := range ws {
		ws[i] = WindowReport{Index: i, Scored: scored[i], NLLSum: mean[i] * float64(scored[i]),
			MeanNLL: mean[i], Seconds: secs[i], Begin: i * 64, End: i*64 + 64}
	}
	return ws
}

func TestCompareEqualWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 37
	scored := make([]int, n)
	ma, mb, sa, sb := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		scored[i] = 255
		ma[i] = 2 + 0.5*r.NormFloat64() // the text's variation, shared by A and B
		mb[i] = ma[i] + 0.003 + 0.001*r.NormFloat64()
		sa[i] = 1 + 0.1*r.Float64()
		sb[i] = sa[i] / (1.8 + 0.05*r.NormFloat64())
	}
	c := ComparePaired(windows(scored, ma, sa), windows(scored, mb, sb))
	if c.Windows != n {
		t.Fatalf("paired %d windows, want %d", c.Windows, n)
	}
	// Reference in plain float64: mean of d and its sd/√n.
	var sum, sum2 float64
	for i := range n {
		d := mb[i] - ma[i]
		sum += d
		sum2 += d * d
	}
	mean := sum / n
	se := math.Sqrt((sum2/n - mean*mean) * n / (n - 1) / n)
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.12g, want %.12g", what, got, want)
		}
	}
	near("ΔmeanNLL", c.DeltaMeanNLL, mean, 1e-12)
	near("its uncertainty", c.DeltaMeanNLLUncertainty, se, 1e-9)
	near("ΔPPL%", c.DeltaPPLPercent, 100*(math.Exp(mean)-1), 1e-10)
	near("ΔPPL% uncertainty", c.DeltaPPLPercentUncertainty, 100*math.Exp(mean)*se, 1e-9)
	// With equal weights the paired mean is exactly ln(PPL_B/PPL_A).
	var na, nb float64
	for i := range n {
		na += ma[i]
		nb += mb[i]
	}
	near("ΔPPL% vs whole-run PPLs", c.DeltaPPLPercent, 100*(math.Exp(nb/n)/math.Exp(na/n)-1), 1e-9)
	var ta, tb float64
	for i := range n {
		ta += sa[i]
		tb += sb[i]
	}
	near("speed ratio", c.SpeedRatio, ta/tb, 1e-12)
	if c.SpeedRatioUncertainty <= 0 || c.SpeedRatioUncertainty > 0.05 {
		t.Errorf("speed ratio uncertainty %v", c.SpeedRatioUncertainty)
	}
	// The paired uncertainty is far below what unpaired PPLs would give:
	// the shared text variation cancels.
	if c.DeltaMeanNLLUncertainty > 0.01 {
		t.Errorf("paired uncertainty %v did not cancel the shared variation", c.DeltaMeanNLLUncertainty)
	}
}

// Sliding windows score different counts; the weighted mean is still
// exactly ln(PPL_B/PPL_A) over the paired windows.
func TestCompareWeighted(t *testing.T) {
	scored := []int{511, 256, 256, 256, 100}
	ma := []float64{2.1, 2.0, 1.9, 2.2, 2.5}
	mb := []float64{2.11, 2.0, 1.95, 2.19, 2.51}
	secs := []float64{1, 1, 1, 1, 1}
	c := ComparePaired(windows(scored, ma, secs), windows(scored, mb, secs))
	var sa, sb, n float64
	for i := range scored {
		sa += ma[i] * float64(scored[i])
		sb += mb[i] * float64(scored[i])
		n += float64(scored[i])
	}
	want := 100 * (math.Exp(sb/n)/math.Exp(sa/n) - 1)
	if math.Abs(c.DeltaPPLPercent-want) > 1e-9 {
		t.Errorf("ΔPPL%% %v, want %v", c.DeltaPPLPercent, want)
	}
	if c.SpeedRatio != 1 {
		t.Errorf("speed ratio %v, want 1", c.SpeedRatio)
	}
}

func TestComparePairsByIndex(t *testing.T) {
	sc := []int{10, 10, 10}
	a := windows(sc, []float64{1, 2, 3}, []float64{1, 1, 1})
	b := windows(sc, []float64{1.5, 2.5, 3.5}, []float64{1, 1, 1})
	c := ComparePaired(a[:2], b) // A has two windows; B's third is unpaired
	if c.Windows != 2 || math.Abs(c.DeltaMeanNLL-0.5) > 1e-12 {
		t.Errorf("paired %d, Δ %v", c.Windows, c.DeltaMeanNLL)
	}
	b[1].Scored = 9 // not the same window: left out
	if c := ComparePaired(a, b); c.Windows != 2 {
		t.Errorf("window with a different scored count was paired: %d", c.Windows)
	}
	if c := ComparePaired(nil, b); c.Windows != 0 || c.Verdict() != "no windows to compare yet" {
		t.Errorf("empty comparison: %+v %q", c, c.Verdict())
	}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		c    Comparison
		want []string
	}{
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0002, DeltaMeanNLLUncertainty: 0.0003, DeltaPPLPercent: 0.02, DeltaPPLPercentUncertainty: 0.03,
			SpeedRatio: 1.8, SpeedRatioUncertainty: 0.02, KLD: &KLDSummary{MeanKLD: 0.0003, MeanKLDUncertainty: 0.0001, SameTop: 0.996}},
			[]string{"B is close to A: mean KLD 0.00030 ± 0.00010 (small, below a 6-bit quantization's), same top 99.6%; PPL +0.020 ± 0.030%; 1.8× faster"}},
		// The case: f16→bf16 KV on stories260K q8_0 is as big as the
		// q8_0 weights' own KLD, so it no longer reads "matches".
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0003, KLD: &KLDSummary{MeanKLD: 6.6e-4, MeanKLDUncertainty: 2e-5, SameTop: 0.99}},
			[]string{"B is close to A: mean KLD 0.000660 ± 0.000020 (small, below a 6-bit quantization's)"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0003, KLD: &KLDSummary{MeanKLD: 3e-6, MeanKLDUncertainty: 1e-7, SameTop: 1}},
			[]string{"B matches A: mean KLD (3.00 ± 0.10)e-6 (indistinguishable), same top 100.0%"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.04, DeltaMeanNLLUncertainty: 0.005, DeltaPPLPercent: 4.1, KLD: &KLDSummary{MeanKLD: 0.08}},
			[]string{"B is worse than A", "(beyond a typical 4-bit quantization)"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.005, DeltaMeanNLLUncertainty: 0.001, DeltaPPLPercent: 0.5, DeltaPPLPercentUncertainty: 0.1,
			SpeedRatio: 0.5, KLD: &KLDSummary{MeanKLD: 0.05, MeanKLDUncertainty: 0.001, SameTop: 0.9}},
			[]string{"B is slightly worse than A", "2.0× slower"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.05, DeltaMeanNLLUncertainty: 0.001, DeltaPPLPercent: 5.1, DeltaPPLPercentUncertainty: 0.1},
			[]string{"B is worse than A"}},
		{Comparison{Windows: 30, DeltaMeanNLL: -0.005, DeltaMeanNLLUncertainty: 0.001, DeltaPPLPercent: -0.5, DeltaPPLPercentUncertainty: 0.1, SpeedRatio: 1.01},
			[]string{"B has slightly lower perplexity than A", "same speed"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.001, DeltaMeanNLLUncertainty: 0.001, KLD: &KLDSummary{MeanKLD: 0.005}},
			[]string{"B is close to A"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.001, DeltaMeanNLLUncertainty: 0.001, KLD: &KLDSummary{MeanKLD: 0.2}},
			[]string{"B differs from A"}},
		{Comparison{Windows: 1, DeltaPPLPercent: 0.5, KLD: &KLDSummary{}},
			[]string{"one window: no spread yet"}},
		// Within 2× of a measured noise floor, and just above it.
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0003, KLD: &KLDSummary{MeanKLD: 4e-4}, NoiseFloor: ptr(2e-4)},
			[]string{"B is within the engine's noise (its floor 0.0002): mean KLD"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0003, KLD: &KLDSummary{MeanKLD: 4.1e-4}, NoiseFloor: ptr(2e-4)},
			[]string{"B is close to A"}},
		{Comparison{Windows: 30, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0003, KLD: &KLDSummary{}, NoiseFloor: ptr(0.0)},
			[]string{"B is within the engine's noise (its floor 0)"}},
	}
	for _, c := range cases {
		v := c.c.Verdict()
		for _, w := range c.want {
			if !strings.Contains(v, w) {
				t.Errorf("verdict %q lacks %q", v, w)
			}
		}
	}
}

func TestKLDBand(t *testing.T) {
	for kld, want := range map[float64]string{
		0: "indistinguishable", 9.9e-5: "indistinguishable", 7.2e-4: "small, below a 6-bit quantization's",
		1e-3: "like a 6-bit quantization", 4.9e-3: "like a 6-bit quantization",
		7e-3: "between a 6-bit and a 4-bit quantization", 0.03: "like a 4-bit quantization",
		0.08: "beyond a typical 4-bit quantization", 0.1: "substantial", 2: "substantial",
	} {
		if got := KLDBand(kld); got != want {
			t.Errorf("KLDBand(%v) = %q, want %q", kld, got, want)
		}
	}
	if Factor(1.04) != "1.04" || Factor(12.34) != "12.3" {
		t.Errorf("Factor: %q %q", Factor(1.04), Factor(12.34))
	}
}

// TestPairedMerge: pairs added in two halves and merged give the result
// of adding them all, to rounding.
func TestPairedMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 40
	scored, ma, mb, sa, sb := make([]int, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		scored[i] = 100 + r.IntN(300)
		ma[i], sa[i], sb[i] = 2+r.NormFloat64(), 1+r.Float64(), 1+r.Float64()
		mb[i] = ma[i] + 0.01*r.NormFloat64()
	}
	a, b := windows(scored, ma, sa), windows(scored, mb, sb)
	var all, h1, h2 PairedStats
	for i := range n {
		all.Add(a[i], b[i])
		if i%2 == 0 {
			h1.Add(a[i], b[i])
		} else {
			h2.Add(a[i], b[i])
		}
	}
	h1.Merge(h2)
	x, y := all.Result(), h1.Result()
	if x.Windows != y.Windows || !close(x.DeltaMeanNLL, y.DeltaMeanNLL, 1e-12, 0) ||
		!close(x.DeltaMeanNLLUncertainty, y.DeltaMeanNLLUncertainty, 1e-9, 0) ||
		!close(x.SpeedRatio, y.SpeedRatio, 1e-12, 0) || !close(x.SpeedRatioUncertainty, y.SpeedRatioUncertainty, 1e-9, 0) {
		t.Fatalf("merged %+v, all at once %+v", y, x)
	}
	if all.Add(a[0], b[1]) || all.N != n {
		t.Fatal("a pair of different windows was added")
	}
}

func TestClear(t *testing.T) {
	for _, c := range []struct {
		c    Comparison
		want bool
	}{
		{Comparison{Windows: 5, DeltaMeanNLL: 1, DeltaMeanNLLUncertainty: 0.01}, false}, // too few windows
		{Comparison{Windows: 50, DeltaMeanNLL: 0.01, DeltaMeanNLLUncertainty: 0.001, DeltaPPLPercentUncertainty: 0.1}, true},
		{Comparison{Windows: 50, DeltaMeanNLL: 0.001, DeltaMeanNLLUncertainty: 0.001, DeltaPPLPercentUncertainty: 0.1}, false},
		{Comparison{Windows: 50, DeltaMeanNLL: 0.0001, DeltaMeanNLLUncertainty: 0.0002, DeltaPPLPercentUncertainty: 0.02}, true},
	} {
		if got := c.c.Clear(); got != c.want {
			t.Errorf("%+v: Clear = %v", c.c, got)
		}
	}
}

// TestCompareAttentionKept checks each side's mean kept fraction over the
// paired windows.
func TestCompareAttentionKept(t *testing.T) {
	w := func(i int, kept float64) WindowReport {
		return WindowReport{Index: i, Scored: 10, NLLSum: 10, Seconds: 1, AttentionKept: kept}
	}
	a := []WindowReport{w(0, 1), w(1, 1), w(2, 1)}
	b := []WindowReport{w(0, 0.5), w(1, 0.25)} // window 2 not yet scored
	c := ComparePaired(a, b)
	if c.AttentionKeptA != 1 || c.AttentionKeptB != 0.375 {
		t.Errorf("kept A %v B %v, want 1 and 0.375", c.AttentionKeptA, c.AttentionKeptB)
	}
}

func ptr[T any](v T) *T { return &v }
