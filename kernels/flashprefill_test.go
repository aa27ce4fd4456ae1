package kernels

// Tests of FlashPrefill V2's selection: the fast kernel (pooling from
// every KV cache type, the fixed-order float64 scores) against the float64
// reference on random inputs of odd lengths, the fixed exp against math.Exp, constructed Q/K whose mass
// sits in known blocks, the structural rules, and the parameter checks.

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// fastSelect runs the fast kernel over a whole L-token sequence (q (L, nh,
// d), k (L, nkv, d) rounded into typ as the KV cache holds them) and
// returns the selection in FlashPrefillRef's layout, the block scores
// A[(h·M + qb)·M + kb] and the kept count.
func fastSelect(t *testing.T, ks KernelSet, f FlashPrefill, typ Type, q, k []float32, L, nh, nkv, d int) ([]bool, []float64, int) {
	t.Helper()
	m, b, grp := f.Blocks(L), f.BlockSize, nh/nkv
	rb := typ.RowBytes(d)
	sel := make([]bool, nh*m*m)
	a := make([]float64, nh*m*m)
	pooled := make([]float32, m*d)
	row, sum := make([]float32, d), make([]float64, d)
	qs := make([]float32, b*d)
	var sc FlashPrefillScratch
	kept := 0
	for h := range nh {
		g := h / grp
		keys := make([]byte, L*rb)
		for j := range L {
			ks.QuantizeActivation(typ, k[(j*nkv+g)*d:][:d], keys[j*rb:(j+1)*rb])
		}
		f.Pool(typ, keys, rb, L, d, pooled, row, sum)
		for qb := range m {
			nq := min(b, L-qb*b)
			for i := range nq {
				copy(qs[i*d:(i+1)*d], q[((qb*b+i)*nh+h)*d:][:d])
			}
			// Guard entries past qb must stay untouched.
			r := sel[(h*m+qb)*m:][:m]
			for kb := qb + 1; kb < m; kb++ {
				r[kb] = true
			}
			kept += f.Select(r, qs, pooled, d, L, qb, &sc)
			for kb := qb + 1; kb < m; kb++ {
				if !r[kb] {
					t.Fatalf("h %d qb %d: entry %d past the diagonal was written", h, qb, kb)
				}
				r[kb] = false
			}
			copy(a[(h*m+qb)*m:], sc.a[:qb+1])
		}
	}
	return sel, a, kept
}

// refScores is A(qb, kb) in float64 from the reference's definition, for
// judging borderline selections.
func refScores(f FlashPrefill, q, k []float32, L, nh, nkv, d int) []float64 {
	m, b, grp := f.Blocks(L), f.BlockSize, nh/nkv
	tau := FlashPrefillScale(d)
	a := make([]float64, nh*m*m)
	for h := range nh {
		g := h / grp
		pooled := make([]float64, m*d)
		for kb := range m {
			k0, k1 := kb*b, min(kb*b+b, L)
			for j := k0; j < k1; j++ {
				for i := range d {
					pooled[kb*d+i] += float64(k[(j*nkv+g)*d+i]) / float64(k1-k0)
				}
			}
		}
		for qb := range m {
			s := func(t, kb int) float64 {
				x := 0.0
				for i := range d {
					x += float64(q[(t*nh+h)*d+i]) * pooled[kb*d+i]
				}
				return tau * x
			}
			mx := math.Inf(-1)
			for kb := 0; kb <= qb; kb++ {
				for t := max(kb*b+b-1, qb*b); t < min(qb*b+b, L); t++ {
					mx = max(mx, s(t, kb))
				}
			}
			for kb := 0; kb <= qb; kb++ {
				for t := max(kb*b+b-1, qb*b); t < min(qb*b+b, L); t++ {
					a[(h*m+qb)*m+kb] += math.Exp(s(t, kb) - mx)
				}
			}
		}
	}
	return a
}

// TestFlashPrefillSelectMatchesReference compares the fast selection and
// its block scores with the float64 reference on random Q/K (KV heads
// shared by two query heads), lengths with a partial last block, every
// KV cache type and every attention variant's kernel set. A block may
// differ from the reference only where its score lies within rounding of
// the threshold; every set's scores and selection are the same to the bit.
func TestFlashPrefillSelectMatchesReference(t *testing.T) {
	const nh, nkv, d = 4, 2, 64
	lengths := []int{1, 31, 150, 333}
	if testing.Short() {
		// 333 tokens cost most of the test under qemu; 150 (ten blocks,
		// the last partial) already selects among many blocks per row.
		lengths = lengths[:3]
	}
	type result struct {
		sel []bool
		a   []float64
	}
	first := map[[2]int]result{}
	for _, v := range variantSets(t, OpAttention) {
		for _, typ := range []Type{F32, F16, BF16, Q8_0} {
			for _, L := range lengths {
				rng := rand.New(rand.NewPCG(uint64(L), 11))
				// Queries with a shared direction give uneven block scores.
				q := randFloats(rng, L*nh*d, 1)
				k := randFloats(rng, L*nkv*d, 1)
				for i := range k {
					k[i] += float32(0.5 * math.Sin(float64(i%d)+float64(i/(nkv*d*16))))
				}
				f := FlashPrefill{BlockSize: 16, Alpha: 0.6, SinkBlocks: 1, Window: 2, LastNFull: 1, MinBudget: 1}
				sel, a, kept := fastSelect(t, v.ks, f, typ, q, k, L, nh, nkv, d)
				if r, ok := first[[2]int{int(typ), L}]; !ok {
					first[[2]int{int(typ), L}] = result{sel, a}
				} else {
					for i := range a {
						if math.Float64bits(a[i]) != math.Float64bits(r.a[i]) || sel[i] != r.sel[i] {
							t.Fatalf("%s %v L %d: A[%d] %v (selected %v), another set %v (%v)", v.name, typ, L, i, a[i], sel[i], r.a[i], r.sel[i])
						}
					}
				}
				// The reference sees the keys as the cache holds them.
				kr := roundTo(v.ks, typ, k, d)
				_, want, _ := FlashPrefillRef(f, q, kr, kr, L, nh, nkv, d, 0.125)
				aRef := refScores(f, q, kr, L, nh, nkv, d)
				m := f.Blocks(L)
				for i := range a {
					if math.Abs(a[i]-aRef[i]) > 1e-5*max(1, aRef[i]) {
						t.Fatalf("%s %v L %d: A[%d] = %.9g, reference %.9g", v.name, typ, L, i, a[i], aRef[i])
					}
				}
				for i := range sel {
					if sel[i] == want[i] {
						continue
					}
					row := aRef[i/m*m:][:m]
					thr := f.Alpha * maxOf(row)
					if math.Abs(aRef[i]-thr) > 1e-5*max(1, thr) {
						t.Fatalf("%s %v L %d: block %d selected %v, reference %v (A %.6g, threshold %.6g)",
							v.name, typ, L, i, sel[i], want[i], aRef[i], thr)
					}
					t.Logf("%s %v L %d: block %d on the threshold (A %.9g, threshold %.9g)", v.name, typ, L, i, aRef[i], thr)
				}
				if kept < 1 || (L > 64 && kept == nh*m*(m+1)/2) {
					t.Errorf("%s %v L %d: kept %d of %d blocks: the test wants some sparsity", v.name, typ, L, kept, nh*m*(m+1)/2)
				}
			}
		}
	}
}

// TestFlashPrefillExp checks the selection's fixed exp against math.Exp
// (within 2 ulp: the last Horner steps round twice) over its range, and
// its edges.
func TestFlashPrefillExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	for i := range 200000 {
		x := -708 * rng.Float64()
		if i%4 == 0 {
			x = -rng.Float64() // most scores lie near the row's best
		}
		got, want := FlashPrefillExp(x), math.Exp(x)
		worst = max(worst, math.Abs(got-want)/(want*0x1p-52))
	}
	if worst > 2 {
		t.Errorf("FlashPrefillExp: %.3g ulp from math.Exp", worst)
	}
	for _, c := range []struct{ x, want float64 }{
		{0, 1}, {-708.5, 0}, {math.NaN(), 0}, {math.Inf(-1), 0}, {710, math.Inf(1)}, {1, math.E},
	} {
		if got := FlashPrefillExp(c.x); got != c.want && math.Abs(got-c.want) > 0x1p-52*c.want {
			t.Errorf("FlashPrefillExp(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	t.Logf("FlashPrefillExp within %.3g ulp of math.Exp on [-708, 0]", worst)
}

// roundTo rounds the (n, d) rows of x into typ and back, as the KV cache
// stores them.
func roundTo(ks KernelSet, typ Type, x []float32, d int) []float32 {
	rb := typ.RowBytes(d)
	buf := make([]byte, rb)
	out := make([]float32, len(x))
	for r := 0; r < len(x)/d; r++ {
		ks.QuantizeActivation(typ, x[r*d:(r+1)*d], buf)
		if err := Dequantize(typ, buf, out[r*d:(r+1)*d]); err != nil {
			panic(err)
		}
	}
	return out
}

func maxOf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// patternQK builds one head's Q and K (L, 1, d) from per-block directions:
// every key of block j is c·e[kdir(j)], every query of block i is
// c·e[qdir(i)] (a zero vector for −1). d must exceed the directions used.
func patternQK(L, b, d int, c float32, qdir, kdir func(blk int) int) (q, k []float32) {
	q, k = make([]float32, L*d), make([]float32, L*d)
	for t := range L {
		if i := qdir(t / b); i >= 0 {
			q[t*d+i] = c
		}
		if i := kdir(t / b); i >= 0 {
			k[t*d+i] = c
		}
	}
	return q, k
}

// TestFlashPrefillPatterns builds attention whose mass sits in known
// blocks and checks that the fast kernel and the reference select exactly
// those blocks (plus what the structural rules add), with a partial last
// block: a vertical column, a slash diagonal, sinks with α = 1, the last
// query blocks computed densely, and min_budget.
func TestFlashPrefillPatterns(t *testing.T) {
	const b, d = 16, 32
	const c = 5 // τ·c² ≈ 4.4 nats between the aligned block and the rest
	type pattern struct {
		name       string
		f          FlashPrefill
		qdir, kdir func(int) int
		want       func(qb, kb, m int) bool
	}
	vertical := func(int) int { return 3 }
	own := func(j int) int { return j % d }
	base := FlashPrefill{BlockSize: b, Alpha: 0.5, Window: 1}
	withSinks := base
	withSinks.SinkBlocks, withSinks.Alpha = 2, 1
	withLast := base
	withLast.LastNFull = 2
	withBudget := base
	withBudget.MinBudget = 2
	patterns := []pattern{
		{"vertical", base, vertical, own,
			// Before block 3 every key block scores alike and all pass.
			func(qb, kb, _ int) bool { return kb == qb || qb < 3 || kb == 3 }},
		{"slash", base, func(i int) int {
			if i < 2 {
				return -1
			}
			return (i - 2) % d
		}, own,
			func(qb, kb, _ int) bool { return kb == qb || qb < 2 || kb == qb-2 }},
		{"sinks", withSinks, func(int) int { return 5 }, own,
			func(qb, kb, _ int) bool { return kb == qb || qb < 5 || kb < 2 || kb == 5 }},
		{"last-n-full", withLast, vertical, own,
			func(qb, kb, m int) bool { return kb == qb || qb < 3 || kb == 3 || qb >= m-2 }},
		// The next best after block 3 is a tie among the rest: the earliest.
		{"min-budget", withBudget, vertical, own,
			func(qb, kb, _ int) bool { return kb == qb || qb < 3 || kb == 3 || kb == 0 }},
	}
	for _, L := range []int{160, 150} {
		for _, p := range patterns {
			q, k := patternQK(L, b, d, c, p.qdir, p.kdir)
			m := p.f.Blocks(L)
			_, refSel, _ := FlashPrefillRef(p.f, q, k, k, L, 1, 1, d, 1)
			fastSel, _, _ := fastSelect(t, KernelSet{}, p.f, F32, q, k, L, 1, 1, d)
			for qb := range m {
				for kb := 0; kb <= qb; kb++ {
					want := p.want(qb, kb, m)
					if got := refSel[qb*m+kb]; got != want {
						t.Errorf("%s L %d: reference: block (%d, %d) active %v, want %v", p.name, L, qb, kb, got, want)
					}
					if got := fastSel[qb*m+kb]; got != want {
						t.Errorf("%s L %d: fast: block (%d, %d) active %v, want %v", p.name, L, qb, kb, got, want)
					}
				}
			}
		}
	}
}

// TestFlashPrefillGQAHeadsDiffer checks that query heads sharing a KV
// head pick their own blocks.
func TestFlashPrefillGQAHeadsDiffer(t *testing.T) {
	const b, d, L = 16, 32, 128
	f := FlashPrefill{BlockSize: b, Alpha: 0.5, Window: 1}
	_, k := patternQK(L, b, d, 5, func(int) int { return -1 }, func(j int) int { return j % d })
	q := make([]float32, L*2*d)
	for t := range L {
		q[(t*2+0)*d+2] = 5 // head 0 looks at block 2
		q[(t*2+1)*d+4] = 5 // head 1 at block 4
	}
	sel, _, _ := fastSelect(t, KernelSet{}, f, F32, q, k, L, 2, 1, d)
	m := f.Blocks(L)
	for h, col := range []int{2, 4} {
		for qb := col + 1; qb < m; qb++ {
			for kb := 0; kb <= qb; kb++ {
				if want := kb == qb || kb == col; sel[(h*m+qb)*m+kb] != want {
					t.Errorf("head %d: block (%d, %d) active %v, want %v", h, qb, kb, !want, want)
				}
			}
		}
	}
}

// TestFlashPrefillKeepsAllWhenDense checks the cases ../shared/spec/flashprefill.md §6 and §7 call dense:
// the default parameters keep every block up to M = 8 (L ≤ 1024), and
// α = 0 keeps every block at any length.
func TestFlashPrefillKeepsAllWhenDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const d = 32
	for _, tc := range []struct {
		f FlashPrefill
		L int
	}{
		{DefaultFlashPrefill(0.9), 1024},
		{DefaultFlashPrefill(0.9), 1000},
		{FlashPrefill{BlockSize: 8, Alpha: 0, Window: 1}, 333},
	} {
		q, k := randFloats(rng, tc.L*d, 2), randFloats(rng, tc.L*d, 2)
		kept := fastSelectCount(t, tc.f, q, k, tc.L, d)
		m := tc.f.Blocks(tc.L)
		if kept != m*(m+1)/2 {
			t.Errorf("%+v L %d: kept %d of %d blocks, want all", tc.f, tc.L, kept, m*(m+1)/2)
		}
	}
}

// fastSelectCount is the fast kernel's kept count for one head, checked
// against the reference's.
func fastSelectCount(t *testing.T, f FlashPrefill, q, k []float32, L, d int) int {
	t.Helper()
	_, _, kept := fastSelect(t, KernelSet{}, f, F32, q, k, L, 1, 1, d)
	if _, _, refKept := FlashPrefillRef(f, q, k, k, L, 1, 1, d, 1); refKept != kept {
		t.Errorf("L %d: fast kept %d, reference %d", L, kept, refKept)
	}
	return kept
}

// TestFlashPrefillPool checks the mean keys, a partial last block averaged
// over its own keys, from f16 rows.
func TestFlashPrefillPool(t *testing.T) {
	const d, n, b = 4, 10, 4
	f := FlashPrefill{BlockSize: b}
	k := make([]float32, n*d)
	for j := range n {
		for i := range d {
			k[j*d+i] = float32(j + i)
		}
	}
	rb := F16.RowBytes(d)
	keys := make([]byte, n*rb)
	for j := range n {
		KernelSet{}.QuantizeActivation(F16, k[j*d:(j+1)*d], keys[j*rb:(j+1)*rb])
	}
	pooled := make([]float32, 3*d+1)
	pooled[3*d] = 42 // guard
	f.Pool(F16, keys, rb, n, d, pooled, make([]float32, d), make([]float64, d))
	for kb, mean := range []float32{1.5, 5.5, 8.5} { // keys 0–3, 4–7, 8–9
		for i := range d {
			if got := pooled[kb*d+i]; got != mean+float32(i) {
				t.Errorf("block %d dim %d: %g, want %g", kb, i, got, mean+float32(i))
			}
		}
	}
	if pooled[3*d] != 42 {
		t.Errorf("guard overwritten: %g", pooled[3*d])
	}
}

// TestFlashPrefillValidate checks the parameter errors.
func TestFlashPrefillValidate(t *testing.T) {
	ok := DefaultFlashPrefill(0.12)
	if err := ok.Validate(512); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, f := range map[string]FlashPrefill{
		"block 96":      {BlockSize: 96, Alpha: 0.1, Window: 4},
		"block 0":       {BlockSize: 0, Alpha: 0.1, Window: 4},
		"block > ctx":   {BlockSize: 1024, Alpha: 0.1, Window: 4},
		"alpha 1.5":     {BlockSize: 128, Alpha: 1.5, Window: 4},
		"alpha −0.1":    {BlockSize: 128, Alpha: -0.1, Window: 4},
		"alpha NaN":     {BlockSize: 128, Alpha: math.NaN(), Window: 4},
		"window 0":      {BlockSize: 128, Alpha: 0.1, Window: 0},
		"sinks −1":      {BlockSize: 128, Alpha: 0.1, Window: 4, SinkBlocks: -1},
		"last-n −1":     {BlockSize: 128, Alpha: 0.1, Window: 4, LastNFull: -1},
		"min budget −1": {BlockSize: 128, Alpha: 0.1, Window: 4, MinBudget: -1},
	} {
		if err := f.Validate(512); !errors.Is(err, ErrFlashPrefill) {
			t.Errorf("%s: Validate = %v, want ErrFlashPrefill", name, err)
		}
	}
}
