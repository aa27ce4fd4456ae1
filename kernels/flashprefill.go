package kernels

// This file owns FlashPrefill V2's block selection (../shared/spec/flashprefill.md §2–4):
// its parameters and their checks, key pooling (the mean key of every
// key block), the block scores A(qb, kb) of one query block of one query
// head against the pooled keys, and the selection rule. The sparse
// attention over the selected blocks runs in the engine beside the dense
// and streaming attention it shares its pieces with; FlashPrefillRef
// (flashprefill_ref.go) is the float64 reference of the whole thing.

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// ErrFlashPrefill is wrapped by FlashPrefill.Validate errors.
var ErrFlashPrefill = errors.New("flashprefill")

// FlashPrefill holds FlashPrefill V2's parameters (../shared/spec/flashprefill.md §6).
type FlashPrefill struct {
	BlockSize  int     `json:"block_size"`  // tokens per query and key block, and the key-pooling window; a power of two
	Alpha      float64 `json:"alpha"`       // keep a block whose score is at least Alpha × the row's best, in [0, 1]
	SinkBlocks int     `json:"sink_blocks"` // leading key blocks always kept
	Window     int     `json:"window"`      // local blocks kept: 0 ≤ qb − kb < Window (≥ 1: the diagonal block)
	LastNFull  int     `json:"last_n_full"` // final query blocks computed densely
	MinBudget  int     `json:"min_budget"`  // the top-MinBudget blocks by score are kept too (0: off)
}

// DefaultFlashPrefill is the official code's configuration with the given
// alpha (which has no universal default; see the engine's per-architecture
// table).
func DefaultFlashPrefill(alpha float64) FlashPrefill {
	return FlashPrefill{BlockSize: 128, Alpha: alpha, SinkBlocks: 2, Window: 4, LastNFull: 2}
}

// Validate checks the parameters for windows of up to ctx tokens.
func (f FlashPrefill) Validate(ctx int) error {
	switch {
	case f.BlockSize < 1 || f.BlockSize&(f.BlockSize-1) != 0:
		return fmt.Errorf("%w: block size %d is not a power of two", ErrFlashPrefill, f.BlockSize)
	case ctx > 0 && f.BlockSize > ctx:
		return fmt.Errorf("%w: block size %d exceeds the ctx %d", ErrFlashPrefill, f.BlockSize, ctx)
	case !(f.Alpha >= 0 && f.Alpha <= 1):
		return fmt.Errorf("%w: alpha %g is outside [0, 1]", ErrFlashPrefill, f.Alpha)
	case f.Window < 1:
		return fmt.Errorf("%w: window %d is below 1 (the diagonal block)", ErrFlashPrefill, f.Window)
	case f.SinkBlocks < 0:
		return fmt.Errorf("%w: sink blocks %d is negative", ErrFlashPrefill, f.SinkBlocks)
	case f.LastNFull < 0:
		return fmt.Errorf("%w: last-n-full %d is negative", ErrFlashPrefill, f.LastNFull)
	case f.MinBudget < 0:
		return fmt.Errorf("%w: min budget %d is negative", ErrFlashPrefill, f.MinBudget)
	}
	return nil
}

// Blocks is M = ceil(n / BlockSize), the blocks of an n-token sequence.
func (f FlashPrefill) Blocks(n int) int { return (n + f.BlockSize - 1) / f.BlockSize }

// CausalBlocks is the number of (qb, kb ≤ qb) pairs of query blocks
// [qb0, qb1): what dense attention computes per head.
func CausalBlocks(qb0, qb1 int) int64 {
	return int64(qb1)*int64(qb1+1)/2 - int64(qb0)*int64(qb0+1)/2
}

// FlashPrefillScale is τ = 1/sqrt(d), the block scores' scale: fixed by
// the algorithm, not taken from the model.
func FlashPrefillScale(d int) float64 { return 1 / math.Sqrt(float64(d)) }

// selectRow applies §4's rule to query block qb of an M-block sequence
// given a[kb] = A(qb, kb) for kb ≤ qb: sel[kb] says whether block kb is
// active. order is scratch of at least qb+1 entries for min_budget. It
// returns the number of active blocks. Shared by the fast kernel and the
// reference: it is the rule, not arithmetic.
func selectRow[T float32 | float64](f FlashPrefill, a []T, qb, m int, sel []bool, order []int32) int {
	a, sel = a[:qb+1], sel[:qb+1]
	if qb >= m-f.LastNFull {
		for kb := range sel {
			sel[kb] = true
		}
		return qb + 1
	}
	amax := T(0)
	for _, x := range a {
		amax = max(amax, x)
	}
	thr := T(f.Alpha) * amax
	n := 0
	for kb, x := range a {
		sel[kb] = x >= thr || kb < f.SinkBlocks || qb-kb < f.Window
		if sel[kb] {
			n++
		}
	}
	if f.MinBudget > 0 && n < qb+1 {
		// The top-MinBudget blocks by score (ties: the earlier block),
		// by selection: MinBudget is a handful.
		order = order[:qb+1]
		for i := range order {
			order[i] = int32(i)
		}
		for i := range min(f.MinBudget, qb+1) {
			b := i
			for j := i + 1; j < len(order); j++ {
				if x, y := a[order[j]], a[order[b]]; x > y || x == y && order[j] < order[b] {
					b = j
				}
			}
			order[i], order[b] = order[b], order[i]
			if kb := order[i]; !sel[kb] {
				sel[kb] = true
				n++
			}
		}
	}
	return n
}

// Pool writes the mean key of every block of the n keys in
// keys (rows of rb bytes in typ, d values each) to pooled, (ceil(n/B), d):
// a partial last block is averaged over the keys it has. row is scratch
// of d floats; sum of d float64s.
func (f FlashPrefill) Pool(typ Type, keys []byte, rb, n, d int, pooled, row []float32, sum []float64) {
	b := f.BlockSize
	for kb := range f.Blocks(n) {
		k0, k1 := kb*b, min(kb*b+b, n)
		clear(sum[:d])
		for k := k0; k < k1; k++ {
			if err := Dequantize(typ, keys[k*rb:(k+1)*rb], row[:d]); err != nil {
				panic("kernels: FlashPrefill.Pool: " + err.Error())
			}
			for i, x := range row[:d] {
				sum[i] += float64(x)
			}
		}
		inv := 1 / float64(k1-k0)
		for i, s := range sum[:d] {
			pooled[kb*d+i] = float32(s * inv)
		}
	}
}

// FlashPrefillScratch is one worker's scratch for FlashPrefill.Select, grown on use.
type FlashPrefillScratch struct {
	s     []float64 // (qb+1, nq) scores s(q, kb); the AVX2 kernel's rows are nq rounded up to even
	q64   []float64 // the AVX2 kernel's float64 queries (nq rounded up to even, d rounded up to 8)
	k64   []float64 // … and off-diagonal pooled keys (qb rounded up to even, d rounded up to 8)
	a     []float64 // (qb+1) A(qb, kb)
	order []int32
}

// Select runs steps 2 and 3 for query block qb of one query head of an
// L-token sequence: q holds the block's nq = min(B, L − qb·B) queries
// (nq, d), pooled the pooled keys of blocks 0..qb ((qb+1, d), Pool). It
// sets sel[kb] for kb ≤ qb and returns how many are active.
//
// The selection is discrete, so its arithmetic is fixed to the bit
// (BlockScores): every CPU kernel set and the device kernel
// (kernels/gpu/flashprefill.cu) compute the same A from the same queries
// and cached keys, and so make the same selection, ties included.
func (f FlashPrefill) Select(sel []bool, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) int {
	nk := qb + 1
	sc.a = Grow(sc.a, nk)
	if cap(sc.order) < nk {
		sc.order = make([]int32, nk)
	}
	f.BlockScores(sc.a, q, pooled, d, L, qb, sc)
	return selectRow(f, sc.a[:nk], qb, f.Blocks(L), sel, sc.order)
}

// BlockScores writes A(qb, kb) for kb ≤ qb to a, from query block qb's
// queries q and the pooled keys (Select's shapes), in arithmetic that
// every platform rounds alike:
//   - s(q, kb) = f64(FlashPrefillDot(q, K̄[kb]) · τ), τ = FlashPrefillScale(d);
//   - Mx is the largest valid s of the row, m(qb, kb) never leaves it;
//   - A(qb, kb) = Σ FlashPrefillExp(s − Mx) over the valid queries in
//     increasing order, one float64 add each.
//
// Each step is a correctly rounded IEEE float64 operation or an exact one
// (the products of float32s, max, the power-of-two scaling): no fused
// multiply-add can change a result (FlashPrefillDot's products are exact;
// the exp's are explicit FMAs) and there is no library call, so no
// compiler or libm makes another choice.
//
// With AVX2 and FMA (CPU(), so PLEXBENCH_CPU masks it) it runs the
// assembly kernel (flashprefill_avx2_amd64.s), else blockScoresGo: the
// same bits either way.
func (f FlashPrefill) BlockScores(a []float64, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) {
	if CPU().HasAVX2() {
		f.blockScoresAVX2(a, q, pooled, d, L, qb, sc)
		return
	}
	f.blockScoresGo(a, q, pooled, d, L, qb, sc)
}

// blockScoresGo is BlockScores in plain Go: the definition, and the twin
// of the assembly.
func (f FlashPrefill) blockScoresGo(a []float64, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) {
	b := f.BlockSize
	nq := min(b, L-qb*b)
	nk := qb + 1
	sc.s = Grow(sc.s, nk*nq)
	tau := FlashPrefillScale(d)
	mx := math.Inf(-1)
	for kb := range nk {
		k := pooled[kb*d : (kb+1)*d]
		s := sc.s[kb*nq : (kb+1)*nq]
		for i := validFrom(b, qb, kb, nq); i < nq; i++ {
			s[i] = float64(FlashPrefillDot(q[i*d:(i+1)*d], k) * tau)
			mx = max(mx, s[i])
		}
	}
	for kb := range nk {
		sum := 0.0
		for _, x := range sc.s[kb*nq+validFrom(b, qb, kb, nq) : (kb+1)*nq] {
			sum += FlashPrefillExp(x - mx)
		}
		a[kb] = sum
	}
}

// FlashPrefillDot is Σ x[i]·y[i] over len(x) in float64 in a fixed order:
// eight partial sums, lane l taking i ≡ l (mod 8) in increasing i, then
// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). A product of two float32s is exact
// in float64, so a fused multiply-add gives the same sum as a product and
// an add: the order is the only choice, and this one vectorizes (two
// 4-lane float64 registers) as well as it runs one lane per thread.
func FlashPrefillDot(x, y []float32) float64 {
	var l [8]float64
	y = y[:len(x)]
	i := 0
	for ; i+8 <= len(x); i += 8 {
		x, y := x[i:i+8], y[i:i+8]
		l[0] += float64(x[0]) * float64(y[0])
		l[1] += float64(x[1]) * float64(y[1])
		l[2] += float64(x[2]) * float64(y[2])
		l[3] += float64(x[3]) * float64(y[3])
		l[4] += float64(x[4]) * float64(y[4])
		l[5] += float64(x[5]) * float64(y[5])
		l[6] += float64(x[6]) * float64(y[6])
		l[7] += float64(x[7]) * float64(y[7])
	}
	for ; i < len(x); i++ {
		l[i%8] += float64(x[i]) * float64(y[i])
	}
	return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

// The exp's constants, as hex literals both languages read exactly:
// ln 2 split in a high part with trailing zero bits and the rest (fdlibm's),
// and log2 e.
const (
	fpLn2Hi = 0x1.62e42feep-1
	fpLn2Lo = 0x1.a39ef35793c76p-33
	fpLog2E = 0x1.71547652b82fep+0
)

// FlashPrefillExp is e^x for the block scores, within 2 ulp, defined by
// its operations so that the device's pb_fp_exp (flashprefill.cu) rounds
// bit for bit alike: k = round-half-even(x·log2 e), r = x − k·ln 2 by two
// FMAs, e^r by the degree-13 Taylor polynomial in Horner form of FMAs
// (coefficients 1/n!, each a correctly rounded quotient), times 2^k built
// from its bits. x below −708 (where 2^k would leave the normal range)
// and NaN give 0; x above 709 gives +Inf.
func FlashPrefillExp(x float64) float64 {
	if !(x >= -708) {
		return 0
	}
	if x > 709 {
		return math.Inf(1)
	}
	k := math.RoundToEven(float64(x * fpLog2E))
	r := math.FMA(-k, fpLn2Hi, x)
	r = math.FMA(-k, fpLn2Lo, r)
	p := 1.0 / 6227020800
	p = math.FMA(p, r, 1.0/479001600)
	p = math.FMA(p, r, 1.0/39916800)
	p = math.FMA(p, r, 1.0/3628800)
	p = math.FMA(p, r, 1.0/362880)
	p = math.FMA(p, r, 1.0/40320)
	p = math.FMA(p, r, 1.0/5040)
	p = math.FMA(p, r, 1.0/720)
	p = math.FMA(p, r, 1.0/120)
	p = math.FMA(p, r, 1.0/24)
	p = math.FMA(p, r, 1.0/6)
	p = math.FMA(p, r, 0.5)
	p = math.FMA(p, r, 1)
	p = math.FMA(p, r, 1)
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}

// SelectRow is §4's rule for query block qb of an M-block sequence given
// a[kb] = A(qb, kb) for kb ≤ qb (selectRow): the device kernel's twin
// takes its scores through it.
func (f FlashPrefill) SelectRow(a []float64, qb, m int, sel []bool) int {
	return selectRow(f, a, qb, m, sel, make([]int32, qb+1))
}

// validFrom is the first of query block qb's nq queries that counts
// against key block kb (§3: q ≥ kb·B + B − 1); nq when none does.
func validFrom(b, qb, kb, nq int) int {
	return min(max(kb*b+b-1-qb*b, 0), nq)
}

// BytesOf views a slice of fixed-size numbers as its little-endian bytes
// (every supported target is little-endian).
func BytesOf[T float32 | int32 | uint32 | uint16](x []T) []byte {
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), int(unsafe.Sizeof(z))*len(x))
}
