package kernels

import (
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
			for _, k := range []int{1, 2, 5, 32, n - 1, n, n + 3} {
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

func BenchmarkPick(b *testing.B) {
	row := randomRow(rand.New(rand.NewPCG(7, 8)), 151936, 0)
	ids := make([]int32, 33)
	picked := make([]float32, 33)
	for b.Loop() {
		Pick(row, ids, picked)
	}
	b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
}

func BenchmarkTopK32(b *testing.B) {
	row := randomRow(rand.New(rand.NewPCG(9, 10)), 151936, 0)
	ids := make([]int32, 32)
	logits := make([]float32, 32)
	for b.Loop() {
		TopK(row, 32, ids, logits)
	}
	b.ReportMetric(float64(len(row))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlogit/s")
}
