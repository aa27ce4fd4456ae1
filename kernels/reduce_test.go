package kernels

// Tests of the logit-row reductions: the reference Pick and TopK against
// their definitions (float64 sums, a stable sort), and every head variant
// against the reference: the avx512 Pick bit for bit against its Go twin
// and within 1e-6 relative of the float64 Σ exp, its TopK identical, on
// odd lengths, unaligned starts, ties and non-finite logits.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func randomRow(r *rand.Rand, n int, distinct int) []float32 {
	row := make([]float32, n)
	for i := range row {
		if distinct > 0 { // few distinct values: many ties
			row[i] = float32(r.IntN(distinct)) * 0.5
		} else {
			row[i] = float32(r.NormFloat64() * 4)
		}
	}
	return row
}

func TestPickMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 33, 1000, 32001} {
		for _, distinct := range []int{0, 3} {
			row := randomRow(r, n, distinct)
			ids := []int32{int32(r.IntN(n)), 0, int32(n - 1), int32(r.IntN(n))}
			picked := make([]float32, len(ids)+1)
			picked[len(ids)] = 12345 // guard
			mx, am, s := Pick(row, ids, picked)
			if picked[len(ids)] != 12345 {
				t.Fatalf("n=%d: Pick wrote past len(ids)", n)
			}
			for i, id := range ids {
				if picked[i] != row[id] {
					t.Fatalf("n=%d: picked[%d]=%v want row[%d]=%v", n, i, picked[i], id, row[id])
				}
			}
			// max and first argmax by a naive scan over a float64 copy.
			wantArg := 0
			for j := range row {
				if float64(row[j]) > float64(row[wantArg]) {
					wantArg = j
				}
			}
			if int(am) != wantArg || mx != row[wantArg] {
				t.Fatalf("n=%d: max/argmax %v/%d want %v/%d", n, mx, am, row[wantArg], wantArg)
			}
			// Σ exp in plain float64 (no f32 rounding of exp) agrees within
			// the f32 rounding of each term.
			var ref float64
			for _, v := range row {
				ref += math.Exp(float64(v) - float64(mx))
			}
			if d := math.Abs(s - ref); d > 1e-7*ref {
				t.Fatalf("n=%d: sumExp %v want %v (diff %g)", n, s, ref, d)
			}
			if s < 1 {
				t.Fatalf("n=%d: sumExp %v < 1 (the max term is 1)", n, s)
			}
		}
	}
}

func TestPickEmptyRow(t *testing.T) {
	mx, am, s := Pick(nil, nil, nil)
	if !math.IsInf(float64(mx), -1) || am != -1 || s != 0 {
		t.Fatalf("empty row: got %v %d %v", mx, am, s)
	}
}

// naiveTopK sorts (id, logit) pairs by descending logit, lower id first.
func naiveTopK(row []float32, k int) ([]int32, []float32) {
	idx := make([]int32, len(row))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
	if k > len(row) {
		k = len(row)
	}
	out := make([]float32, k)
	for i := range out {
		out[i] = row[idx[i]]
	}
	return idx[:k], out
}

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 5, 31, 32, 33, 257, 5000} {
		for _, distinct := range []int{0, 2, 7} {
			row := randomRow(r, n, distinct)
			for _, k := range []int{1, 2, 5, 32, 256, 1024, n - 1, n, n + 3} {
				if k <= 0 {
					continue
				}
				ids := make([]int32, k+1)
				logits := make([]float32, k+1)
				ids[k], logits[k] = -7, -7 // guard
				TopK(row, k, ids[:k], logits[:k])
				if ids[k] != -7 || logits[k] != -7 {
					t.Fatalf("n=%d k=%d: wrote past k", n, k)
				}
				wantIDs, wantL := naiveTopK(row, k)
				for i := range wantIDs {
					if ids[i] != wantIDs[i] || logits[i] != wantL[i] {
						t.Fatalf("n=%d k=%d distinct=%d: pos %d got (%d,%v) want (%d,%v)",
							n, k, distinct, i, ids[i], logits[i], wantIDs[i], wantL[i])
					}
				}
			}
		}
	}
}

func TestTopKAscendingAndDescendingRows(t *testing.T) {
	for _, asc := range []bool{true, false} {
		row := make([]float32, 1000)
		for i := range row {
			if asc {
				row[i] = float32(i)
			} else {
				row[i] = float32(-i)
			}
		}
		ids := make([]int32, 10)
		logits := make([]float32, 10)
		TopK(row, 10, ids, logits)
		wantIDs, _ := naiveTopK(row, 10)
		for i := range ids {
			if ids[i] != wantIDs[i] {
				t.Fatalf("asc=%v: ids %v want %v", asc, ids, wantIDs)
			}
		}
	}
}

func TestTopKNaN(t *testing.T) {
	nan := float32(math.NaN())
	row := []float32{nan, 1, nan, 3, 2}
	ids := make([]int32, 3)
	logits := make([]float32, 3)
	TopK(row, 3, ids, logits)
	if ids[0] != 3 || ids[1] != 4 || ids[2] != 1 {
		t.Fatalf("NaN row: ids %v, want [3 4 1]", ids)
	}
}

func TestTopKNoAlloc(t *testing.T) {
	row := randomRow(rand.New(rand.NewPCG(5, 6)), 4096, 0)
	ids := make([]int32, 32)
	logits := make([]float32, 32)
	picked := make([]float32, 33)
	pids := make([]int32, 33)
	if a := testing.AllocsPerRun(10, func() {
		TopK(row, 32, ids, logits)
		Pick(row, pids, picked)
	}); a != 0 {
		t.Fatalf("TopK+Pick allocate %v times per row", a)
	}
}

// headSets returns the head variants this CPU runs, by name.
func headSets(t testing.TB) map[string]KernelSet {
	sets := map[string]KernelSet{}
	for _, v := range variantSets(t, OpHead) {
		sets[v.name] = v.ks
	}
	return sets
}

// sumExp64 is Σ exp(row[j] − mx) in float64 throughout.
func sumExp64(row []float32, mx float32) float64 {
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - float64(mx))
	}
	return s
}

// firstMax is the naive max and first argmax over a float64 copy.
func firstMax(row []float32) (float32, int32) {
	am := 0
	for j := range row {
		if float64(row[j]) > float64(row[am]) {
			am = j
		}
	}
	return row[am], int32(am)
}

func TestPickVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	sizes := []int{1000, 4097, 32001, 151936}
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	for name, ks := range headSets(t) {
		var worst float64
		for _, n := range sizes {
			for _, distinct := range []int{0, 1, 3} {
				for _, off := range []int{0, 1, 3} { // unaligned starts
					buf := randomRow(r, n+off+1, distinct)
					row := buf[off : off+n]
					if distinct == 0 && n > 8 && r.IntN(2) == 0 {
						// A -inf logit (a masked token) and a repeated max
						// late in the row.
						row[r.IntN(n)] = float32(math.Inf(-1))
						mx, _ := firstMax(row)
						row[n-1-r.IntN(4)] = mx
					}
					ids := []int32{int32(r.IntN(n)), 0, int32(n - 1)}
					picked := make([]float32, len(ids)+1)
					picked[len(ids)] = 12345 // guard
					mx, am, s := ks.Pick(row, ids, picked)
					if picked[len(ids)] != 12345 {
						t.Fatalf("%s n=%d: Pick wrote past len(ids)", name, n)
					}
					for i, id := range ids {
						if picked[i] != row[id] {
							t.Fatalf("%s n=%d: picked[%d]=%v want %v", name, n, i, picked[i], row[id])
						}
					}
					wantMx, wantAm := firstMax(row)
					if mx != wantMx || am != wantAm {
						t.Fatalf("%s n=%d distinct=%d off=%d: max/argmax %v/%d want %v/%d",
							name, n, distinct, off, mx, am, wantMx, wantAm)
					}
					ref := sumExp64(row, mx)
					d := math.Abs(s - ref)
					if d > 1e-6*ref {
						t.Fatalf("%s n=%d: sumExp %v want %v (rel %g)", name, n, s, ref, d/ref)
					}
					worst = max(worst, d/ref)
					if name != "go" { // the vector kernels and their twin: the same bits
						tm, ta, ts := pickMaxSumTwin(row)
						if tm != mx || ta != am || ts != s {
							t.Fatalf("n=%d off=%d: vector %v/%d/%v, twin %v/%d/%v", n, off, mx, am, s, tm, ta, ts)
						}
					}
				}
			}
		}
		t.Logf("%s: worst Σ exp relative error %.2g", name, worst)
	}
}

// TestPickTwin checks the avx512 kernels' Go twin against the definition
// on every build, so it is a sound reference where no AVX-512 runs.
func TestPickTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{1, 2, 15, 16, 17, 31, 33, 1000, 32001} {
		for _, distinct := range []int{0, 3} {
			row := randomRow(r, n, distinct)
			mx, am, s := pickMaxSumTwin(row)
			wantMx, wantAm := firstMax(row)
			if mx != wantMx || am != wantAm {
				t.Fatalf("n=%d: twin max/argmax %v/%d want %v/%d", n, mx, am, wantMx, wantAm)
			}
			if ref := sumExp64(row, mx); math.Abs(s-ref) > 1e-6*ref {
				t.Fatalf("n=%d: twin sumExp %v want %v", n, s, ref)
			}
		}
	}
}

// TestPickNonFinite: rows with NaN or infinite logits give the reference's
// max, argmax and picks under every variant, and its sum: exactly when that
// is NaN, within 1e-6 relative otherwise (a -inf logit among finite ones).
func TestPickNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	r := rand.New(rand.NewPCG(13, 14))
	var rows [][]float32
	for _, n := range []int{1, 5, 16, 17, 33, 100} {
		for _, bad := range []float32{nan, inf, -inf} {
			for _, at := range []int{0, n / 2, n - 1} {
				row := randomRow(r, n, 0)
				row[at] = bad
				rows = append(rows, row)
			}
			all := make([]float32, n)
			for i := range all {
				all[i] = bad
			}
			rows = append(rows, all)
		}
	}
	same := func(a, b float64) bool { return a == b || (a != a && b != b) }
	for name, ks := range headSets(t) {
		for _, row := range rows {
			ids := []int32{0}
			p1, p2 := make([]float32, 1), make([]float32, 1)
			m1, a1, s1 := Pick(row, ids, p1)
			m2, a2, s2 := ks.Pick(row, ids, p2)
			sumOK := same(s1, s2) || math.Abs(s1-s2) <= 1e-6*s1
			if !same(float64(m1), float64(m2)) || a1 != a2 || !sumOK || math.Float32bits(p1[0]) != math.Float32bits(p2[0]) {
				t.Fatalf("%s row %v: got %v/%d/%v want %v/%d/%v", name, row, m2, a2, s2, m1, a1, s1)
			}
		}
	}
}

func TestTopKVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	nan := float32(math.NaN())
	for name, ks := range headSets(t) {
		for _, n := range []int{1, 3, 32, 33, 100, 4097, 151936} {
			for _, distinct := range []int{0, 2, 50} {
				row := randomRow(r, n, distinct)
				if n > 40 && distinct == 50 {
					row[0], row[5], row[n-1] = nan, nan, float32(math.Inf(-1))
				}
				for _, k := range []int{1, 2, 32, 256, 1024, n} {
					want := make([]int32, k)
					wantL := make([]float32, k)
					TopK(row, k, want, wantL)
					ids := make([]int32, k+1)
					logits := make([]float32, k+1)
					ids[k] = -7 // guard
					ks.TopK(row, k, ids[:k], logits[:k])
					if ids[k] != -7 {
						t.Fatalf("%s n=%d k=%d: wrote past k", name, n, k)
					}
					for i := range want {
						if ids[i] != want[i] || math.Float32bits(logits[i]) != math.Float32bits(wantL[i]) {
							t.Fatalf("%s n=%d k=%d distinct=%d: pos %d got (%d,%v) want (%d,%v)",
								name, n, k, distinct, i, ids[i], logits[i], want[i], wantL[i])
						}
					}
				}
			}
		}
	}
}

func TestHeadVariantsNoAlloc(t *testing.T) {
	row := randomRow(rand.New(rand.NewPCG(17, 18)), 4096, 0)
	ids := make([]int32, 32)
	logits := make([]float32, 32)
	picked := make([]float32, 33)
	pids := make([]int32, 33)
	for name, ks := range headSets(t) {
		if a := testing.AllocsPerRun(10, func() {
			ks.TopK(row, 32, ids, logits)
			ks.Pick(row, pids, picked)
		}); a != 0 {
			t.Fatalf("%s: TopK+Pick allocate %v times per row", name, a)
		}
	}
}

// BenchmarkPick and BenchmarkTopK32 run one vocabulary-sized row (Qwen3's
// 151936) per op under each head variant.
func BenchmarkPick(b *testing.B) {
	row := randomRow(rand.New(rand.NewPCG(7, 8)), 151936, 0)
	ids := make([]int32, 33)
	picked := make([]float32, 33)
	for _, name := range []string{"go", "avx512"} {
		ks, ok := headSets(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ks.Pick(row, ids, picked)
			}
			b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
		})
	}
}

func BenchmarkTopK32(b *testing.B) {
	row := randomRow(rand.New(rand.NewPCG(9, 10)), 151936, 0)
	ids := make([]int32, 32)
	logits := make([]float32, 32)
	for _, name := range []string{"go", "avx512"} {
		ks, ok := headSets(b)[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ks.TopK(row, 32, ids, logits)
			}
			b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
		})
	}
}

// BenchmarkTopKLarge is BenchmarkTopK32 at the k of larger bases.
func BenchmarkTopKLarge(b *testing.B) {
	row := randomRow(rand.New(rand.NewPCG(9, 10)), 151936, 0)
	for _, k := range []int{256, 1024} {
		ids := make([]int32, k)
		logits := make([]float32, k)
		for _, name := range []string{"go", "avx512"} {
			ks, ok := headSets(b)[name]
			if !ok {
				continue
			}
			b.Run(fmt.Sprintf("k%d/%s", k, name), func(b *testing.B) {
				for b.Loop() {
					ks.TopK(row, k, ids, logits)
				}
				b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
			})
		}
	}
}
