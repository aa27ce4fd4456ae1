//go:build !purego

package kernels

// This file owns the Go side of flashprefill_avx2_amd64.s: FlashPrefill
// V2's block scores with AVX2 and FMA, bit for bit blockScoresGo (the
// twin, flashprefill.go). BlockScores calls it when CPU().HasAVX2().

import "math"

// fpDotAVX2 is FlashPrefillDot of the n floats at x and y.
//
//go:noescape
func fpDotAVX2(x, y *float32, n int) float64

// fpDotTileAVX2 sets s[kb·ns + i] = float64(FlashPrefillDot(q_i, k_kb)·tau)
// for i < nq, kb < nk, with q (nq, dp) and k (nk, dp) the float32 rows
// widened and zero-padded to dp, a multiple of 8 (fpWiden); nq and nk
// even and at least 2.
//
//go:noescape
func fpDotTileAVX2(s, q, k *float64, dp, nq, nk, ns int, tau float64)

// fpWidenAVX2 sets dst[i] = float64(src[i]) for i < n, a multiple of 8.
//
//go:noescape
func fpWidenAVX2(dst *float64, src *float32, n int)

// fpMaxKeyAVX2 is the largest of the n values at s (n a multiple of 4, at
// least 4) as an int64 key ordered like the builtin max, −0 below +0
// (the bits, the magnitude flipped where the sign is set: its own
// inverse), and whether any is NaN.
//
//go:noescape
func fpMaxKeyAVX2(s *float64, n int) (key int64, nan bool)

// fpExpSumAVX2 is sum := 0; sum += FlashPrefillExp(s[i] − mx) for i < n,
// a multiple of 4.
//
//go:noescape
func fpExpSumAVX2(s *float64, n int, mx float64) float64

// fpDot is FlashPrefillDot.
func fpDot(x, y []float32) float64 {
	if len(x) == 0 {
		return 0
	}
	_ = y[len(x)-1]
	return fpDotAVX2(&x[0], &y[0], len(x))
}

// fpExpSum is Σ FlashPrefillExp(x − mx) over s in order, one float64 add
// each.
func fpExpSum(s []float64, mx float64) float64 {
	n := len(s) &^ 3
	sum := 0.0
	if n > 0 {
		sum = fpExpSumAVX2(&s[0], n, mx)
	}
	for _, x := range s[n:] {
		sum += FlashPrefillExp(x - mx)
	}
	return sum
}

// fpMaxRun is fpMax, four lanes at a time.
func fpMaxRun(mx float64, s []float64) float64 {
	n := len(s) &^ 3
	if n > 0 {
		key, nan := fpMaxKeyAVX2(&s[0], n)
		if nan {
			return math.NaN()
		}
		// The key map is its own inverse.
		mx = max(mx, math.Float64frombits(uint64(key^(key>>63&math.MaxInt64))))
	}
	return fpMax(mx, s[n:])
}

// fpMax is mx = max(mx, x) for each x of s, the builtin's result (NaN if
// any is NaN, +0 above −0) without its chain of dependent selections:
// the largest value seldom changes, so the branches predict.
func fpMax(mx float64, s []float64) float64 {
	for _, x := range s {
		switch {
		case x > mx:
			mx = x
		case x == mx: // +0 if either zero is +0; equal nonzero values have equal bits
			mx = math.Float64frombits(math.Float64bits(mx) & math.Float64bits(x))
		case x != x:
			return x
		}
	}
	return mx
}

// fpWiden writes the n rows of d float32s in src to dst as float64 rows of
// dp ≥ d (a multiple of 8), zero-padded, plus zero rows up to n rounded up
// to even: the layout fpDotTileAVX2 reads. A zero pad adds +0 products to
// lanes that are never −0, so it changes no sum.
func fpWiden(dst []float64, src []float32, n, d, dp int) []float64 {
	rows := (n + 1) &^ 1
	dst = Grow(dst, rows*dp)
	if d == dp {
		if n > 0 {
			_ = src[n*d-1]
			fpWidenAVX2(&dst[0], &src[0], n*d)
		}
	} else {
		for r := range n {
			out := dst[r*dp : (r+1)*dp]
			for j, x := range src[r*d : (r+1)*d] {
				out[j] = float64(x)
			}
			clear(out[d:])
		}
	}
	clear(dst[n*dp:])
	return dst
}

// blockScoresAVX2 is blockScoresGo. The off-diagonal key blocks count
// against every query (validFrom is 0 for kb < qb): they run as one
// two-queries-by-two-keys tiled call over float64 copies of the queries
// and keys; the diagonal block's few valid queries run one dot each.
func (f FlashPrefill) blockScoresAVX2(a []float64, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) {
	b := f.BlockSize
	nq := min(b, L-qb*b)
	tau := FlashPrefillScale(d)
	dp := (d + 7) &^ 7
	ns, nkp := (nq+1)&^1, (qb+1)&^1
	sc.s = Grow(sc.s, nkp*ns+nq)
	mx := math.Inf(-1)
	if qb > 0 && nq > 0 {
		sc.q64 = fpWiden(sc.q64, q, nq, d, dp)
		sc.k64 = fpWiden(sc.k64, pooled, qb, d, dp)
		fpDotTileAVX2(&sc.s[0], &sc.q64[0], &sc.k64[0], dp, ns, nkp, ns, tau)
		if ns == nq { // no padding entries: the rows are one run
			mx = fpMaxRun(mx, sc.s[:qb*ns])
		} else {
			for kb := range qb {
				mx = fpMaxRun(mx, sc.s[kb*ns:kb*ns+nq])
			}
		}
	}
	diag := sc.s[nkp*ns : nkp*ns+nq]
	i0 := validFrom(b, qb, qb, nq)
	k := pooled[qb*d : (qb+1)*d]
	for i := i0; i < nq; i++ {
		diag[i] = float64(fpDot(q[i*d:(i+1)*d], k) * tau)
		mx = max(mx, diag[i])
	}
	for kb := range qb {
		a[kb] = fpExpSum(sc.s[kb*ns:kb*ns+nq], mx)
	}
	a[qb] = fpExpSum(diag[i0:], mx)
}
