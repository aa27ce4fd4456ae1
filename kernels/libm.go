package kernels

// This file owns the C library's single-precision expf, sinf and cosf as
// glibc computes them on x86-64 (the variants it selects on CPUs with FMA,
// the same algorithms since glibc 2.28): ggml calls them for the tails of
// softmax and SwiGLU and for RoPE's cos/sin table, and glibc's results are
// not always the correctly rounded ones. Each works in float64 with a short
// polynomial; the fused multiply-adds are where the C compiler contracts
// `a*b + c`.

import (
	"math"
	"math/big"
)

// expf's 2^(i/32) table: the float64 bits of 2^(i/32), rounded to nearest,
// less i<<47 so that adding k<<47 for k = 32q+i scales by 2^q.
var exp2fTab = func() (t [32]uint64) {
	for i := range t {
		// 2^(i/32) to 80 bits by Newton steps on y^32 = 2^i.
		y := new(big.Float).SetPrec(200).SetFloat64(math.Exp2(float64(i) / 32))
		target := new(big.Float).SetPrec(200).SetMantExp(big.NewFloat(1), i)
		for range 4 {
			p := new(big.Float).SetPrec(200).Set(y)
			for range 5 { // y^32
				p.Mul(p, p)
			}
			// y -= (y^32 − 2^i) / (32·y^31) = y·(1 − 2^i/y^32)/32
			q := new(big.Float).SetPrec(200).Quo(target, p)
			q.Sub(big.NewFloat(1).SetPrec(200), q)
			q.Mul(q, y)
			q.Quo(q, big.NewFloat(32))
			y.Sub(y, q)
		}
		f, _ := y.Float64()
		t[i] = math.Float64bits(f) - uint64(i)<<47
	}
	return t
}()

// ExpfC is glibc's expf.
func ExpfC(x float32) float32 {
	const (
		invLn2N = 0x1.71547652b82fep+0 * 32
		shift   = 0x1.8p+52
		c0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
		c1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
		c2      = 0x1.62e42ff0c52d6p-1 / 32
	)
	if abs := math.Float32bits(x) >> 20 & 0x7ff; abs >= math.Float32bits(88)>>20 {
		switch {
		case x == float32(math.Inf(-1)):
			return 0
		case abs >= 0x7f8:
			return x + x
		case x > 0x1.62e42ep6:
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6:
			return 0
		}
	}
	z := invLn2N * float64(x)
	kd := z + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := z - kd
	s := math.Float64frombits(exp2fTab[ki%32] + ki<<47)
	zz := math.FMA(c0, r, c1)
	r2 := r * r
	y := math.FMA(c2, r, 1)
	y = math.FMA(zz, r2, y)
	return float32(y * s)
}

// sincosfPoly holds one of glibc's two sin/cos polynomial sets (the second
// negates the cosine).
type sincosfPoly struct {
	c0, c1, c2, c3, c4 float64
	s1, s2, s3         float64
}

var sincosfP = [2]sincosfPoly{
	{1, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-1, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

var sincosfSign = [4]float64{1, -1, -1, 1}

// sinfPoly is sin(x) (n even) or cos(x) (n odd) from x and x2 = x·x.
func sinfPoly(x, x2 float64, p *sincosfPoly, n int) float32 {
	if n&1 == 0 {
		x3 := x * x2
		s1 := math.FMA(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := math.FMA(x3, p.s1, x)
		return float32(math.FMA(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := math.FMA(x2, p.c4, p.c3)
	c1 := math.FMA(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := math.FMA(x4, p.c2, c1)
	return float32(math.FMA(x6, c2, c))
}

// invPio4 is 4/π to 192 bits, big-endian.
var invPio4 = [24]byte{0xa2, 0xf9, 0x83, 0x6e, 0x4e, 0x44, 0x15, 0x29, 0xfc, 0x27, 0x57, 0xd1,
	0xf5, 0x34, 0xdd, 0xc0, 0xdb, 0x62, 0x95, 0x99, 0x3c, 0x43, 0x90, 0x41}

// invPio4Word is glibc's __inv_pio4[i]: the 32 bits of 4/π ending at byte i.
func invPio4Word(i int) uint32 {
	var w uint32
	for b := max(0, i-3); b <= i; b++ {
		w = w<<8 | uint32(invPio4[b])
	}
	return w
}

// sincosfReduce returns y reduced modulo π/2 into [−π/4, π/4] and the
// quadrant, glibc's reduce_fast below 120 and reduce_large above.
func sincosfReduce(y float32) (float64, int) {
	if math.Float32bits(y)>>20&0x7ff < 0x42f { // |y| < 120
		x := float64(y)
		r := x * 0x1.45F306DC9C883p+23
		n := (int32(r) + 0x800000) >> 24
		return math.FMA(-float64(n), 0x1.921FB54442D18p0, x), int(n)
	}
	xi := math.Float32bits(y)
	base := int((xi >> 26) & 15)
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * invPio4Word(base))
	res1 := uint64(xi) * uint64(invPio4Word(base+4))
	res2 := uint64(xi) * uint64(invPio4Word(base+8))
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921FB54442D18p-62, int(n)
}

// sincosfC returns glibc's sinf(y) (cos false) or cosf(y) (cos true) for
// finite y.
func sincosfC(y float32, cos bool) float32 {
	if math.IsInf(float64(y), 0) || math.IsNaN(float64(y)) {
		return float32(math.NaN())
	}
	top := math.Float32bits(y) >> 20 & 0x7ff
	if top < 0x3f4 { // |y| < π/4
		x := float64(y)
		if top < 0x398 { // |y| < 2^-12
			if cos {
				return 1
			}
			return y
		}
		if cos {
			return sinfPoly(x, x*x, &sincosfP[0], 1)
		}
		return sinfPoly(x, x*x, &sincosfP[0], 0)
	}
	x, n := sincosfReduce(y)
	q := n
	if top >= 0x42f { // the large reduction drops the sign: put it back
		q += int(math.Float32bits(y) >> 31)
	}
	p := &sincosfP[0]
	if q&2 != 0 {
		p = &sincosfP[1]
	}
	if cos {
		n ^= 1
	}
	return sinfPoly(x*sincosfSign[q&3], x*x, p, n)
}

// SinfC is glibc's sinf.
func SinfC(y float32) float32 { return sincosfC(y, false) }

// CosfC is glibc's cosf.
func CosfC(y float32) float32 { return sincosfC(y, true) }
