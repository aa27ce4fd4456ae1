package kernels

// This file owns the scale searches behind the K-quant reference quantizers
// (the roles of ggml's make_qkx2_quants and make_qx_quants): given a small
// group of values, choose a scale (and, for asymmetric formats, a min) and the
// integer levels that fit them best in a weighted least-squares sense.

import "math"

func abs32(x float32) float32  { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// makeQKX2 fits x ≈ scale·L − m with levels L in [0, nmax] and m ≥ 0 (the
// returned min). It starts from the full range [min(x,0), max(x)], then tries
// nstep+1 trial inverse scales (nmax + rmin + rdelta·k)/range, solving the
// weighted least-squares scale and offset for each trial's rounding and
// keeping the best. useMAD weighs absolute instead of squared errors.
func makeQKX2(nmax int32, x, weights []float32, levels, aux []uint8, rmin, rdelta float32, nstep int, useMAD bool) (scale, theMin float32) {
	n := len(x)
	lo, hi := x[0], x[0]
	var sumW, sumX float32
	for i, v := range x {
		lo, hi = min(lo, v), max(hi, v)
		sumW += weights[i]
		sumX += float32(weights[i] * v)
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(levels[:n])
		return 0, -lo
	}
	errOf := func(s, m float32, ls []uint8) float32 {
		var e float32
		for i, v := range x {
			diff := float32(s*float32(ls[i])) + m - v
			if useMAD {
				diff = abs32(diff)
			} else {
				diff = float32(diff * diff)
			}
			e += float32(weights[i] * diff)
		}
		return e
	}
	quant := func(iscale float32, ls []uint8) {
		for i, v := range x {
			ls[i] = uint8(max(0, min(nmax, nearestInt(float32(iscale*(v-lo))))))
		}
	}
	iscale := float32(nmax) / (hi - lo)
	scale = 1 / iscale
	quant(iscale, levels)
	best := errOf(scale, lo, levels)
	bestMin := lo
	for k := range nstep + 1 {
		iscale = (rmin + rdelta*float32(k) + float32(nmax)) / (hi - lo)
		quant(iscale, aux)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			w, l := weights[i], float32(aux[i])
			sumL += w * l
			sumL2 += float32(w*l) * l
			sumXL += float32(w*l) * v
		}
		det := sumW*sumL2 - sumL*sumL
		if det <= 0 {
			continue
		}
		s := (sumW*sumXL - sumX*sumL) / det
		m := (sumL2*sumX - sumL*sumXL) / det
		if m > 0 {
			m = 0
			s = sumXL / sumL2
		}
		if e := errOf(s, m, aux); e < best {
			copy(levels[:n], aux[:n])
			best, scale, bestMin = e, s, m
		}
	}
	return scale, -bestMin
}

// makeQX fits x ≈ scale·(L − nmax) with levels L in [0, 2·nmax−1], a signed
// scale anchored on the value of largest magnitude, weights x² (ggml's
// make_qx_quants with rmse_type 1). It tries 18 trial inverse scales around
// −nmax/x_m and keeps the one with the best weighted fit.
func makeQX(nmax int32, x []float32, levels []uint8) float32 {
	var amax, xm float32
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, xm = a, v
		}
	}
	if amax < 1e-15 {
		clear(levels[:len(x)])
		return 0
	}
	fit := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			l := float32(max(-nmax, min(nmax-1, nearestInt(float32(iscale*v)))))
			w := float32(v * v)
			sumLX += float32(w*v) * l
			sumL2 += float32(w*l) * l
		}
		return sumLX, sumL2
	}
	set := func(iscale float32) {
		for i, v := range x {
			levels[i] = uint8(nmax + max(-nmax, min(nmax-1, nearestInt(float32(iscale*v)))))
		}
	}
	iscale := -float32(nmax) / xm
	set(iscale)
	sumLX, sumL2 := fit(iscale)
	var scale float32
	if sumL2 > 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for k := -9; k <= 9; k++ {
		if k == 0 {
			continue
		}
		is := -(float32(nmax) + 0.1*float32(k)) / xm
		lx, l2 := fit(is)
		if l2 > 0 && lx*lx > best*l2 {
			set(is)
			scale = lx / l2
			best = scale * lx
		}
	}
	return scale
}
