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

// FlashPrefillScratch is one worker's scratch for FlashPrefillSelect, grown on use.
type FlashPrefillScratch struct {
	qm    Matrix    // the block's queries as a matrix (MatMul keeps a pointer during the call)
	s     []float32 // (qb+1, nq) scores, then exp(score − Mx)
	m     []float32 // (qb+1) m(qb, kb)
	a     []float64 // (qb+1) A(qb, kb)
	order []int32
	ms    MatScratch
}

// FlashPrefillSelect runs steps 2 and 3 for query block qb of one query head of an
// L-token sequence: q holds the block's nq = min(B, L − qb·B) queries
// (nq, d), pooled the pooled keys of blocks 0..qb ((qb+1, d), Pool). It
// sets sel[kb] for kb ≤ qb and returns how many are active. The scores
// run through the set's MatMul and the streaming softmax's ScaleMax and
// ExpSum: Σ over the valid queries of exp(s − Mx), s in float32.
func (ks KernelSet) FlashPrefillSelect(f FlashPrefill, sel []bool, q []float32, pooled []float32, d, L, qb int, sc *FlashPrefillScratch) int {
	b := f.BlockSize
	nq := min(b, L-qb*b)
	nk := qb + 1
	sc.s = Grow(sc.s, nk*nq)
	sc.m = Grow(sc.m, nk)
	sc.a = Grow(sc.a, nk)
	if cap(sc.order) < nk {
		sc.order = make([]int32, nk)
	}
	// (nk, nq): row kb holds s(q, kb) for the block's queries in order.
	sc.qm = Matrix{Type: F32, Rows: nq, Cols: d, Data: BytesOf(q[:nq*d])}
	s := sc.s[:nk*nq]
	ks.MatMul(nil, s, &sc.qm, pooled[:nk*d], nk, &sc.ms)
	tau := float32(FlashPrefillScale(d))
	mx := float32(math.Inf(-1))
	for kb := range nk {
		v := validFrom(b, qb, kb, nq)
		sc.m[kb] = ks.ScaleMax(s[kb*nq+v:(kb+1)*nq], tau)
		mx = max(mx, sc.m[kb])
	}
	for kb := range nk {
		v := validFrom(b, qb, kb, nq)
		sc.a[kb] = 0
		if v < nq {
			sc.a[kb] = ks.ExpSum(s[kb*nq+v:(kb+1)*nq], mx)
		}
	}
	return selectRow(f, sc.a, qb, f.Blocks(L), sel, sc.order)
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
