package engine

// This file owns FlashPrefill V2 on the device stack (the dense blocks'
// and the hybrids' attention layers alike): per layer of a prefill pass,
// the cached keys pooled per block (fp_pool_<kv>), every query block's
// selection (fp_select) and the attention over the kept blocks
// (attn_fp_<kv>), with kernels/gpu/flashprefill.cu's guarantee that the
// selection is the CPU's to the bit for the same queries and cached keys.
// The kept blocks are counted on the device and come back once per pass,
// into the window's count (PrefillBlocks) as the CPU's attention adds
// them.

import (
	"math/bits"
	"slices"

	"plexbench/hip"
	"plexbench/kernels"
)

// fpKernels are the entries FlashPrefill adds to a device stack.
var fpKernels = map[string][]string{
	"flashprefill.cu": {"fp_pool_f32", "fp_pool_f16", "fp_pool_bf16", "fp_pool_q8_0", "fp_select"},
	"attention.cu":    {"attn_fp_f32", "attn_fp_f16", "attn_fp_bf16", "attn_fp_q8_0"},
}

// devFlashPrefill is FlashPrefill's device scratch, sized for the largest
// pass: pooled (nkv, M, hd) f32, A (nh, nqb, M) f64 and sel (nh, nqb, M)
// u8 for M = blocks of kv-len and nqb = blocks of a pass; kept the pass's
// count (u32).
type devFlashPrefill struct {
	f                   kernels.FlashPrefill
	pooled, a, sel, cnt hip.Buffer
	kept                [1]uint32
}

// initFlashPrefill compiles FlashPrefill's kernels and allocates its
// scratch when the model runs it.
func (st *deviceStack) initFlashPrefill() error {
	if st.m.opt.FlashPrefill == nil {
		return nil
	}
	fp := &st.fp
	fp.f = *st.m.opt.FlashPrefill
	if err := st.compile(fpKernels); err != nil {
		return err
	}
	hp := st.m.hp
	m, nqb := fp.f.Blocks(st.m.opt.KVLen), fp.f.Blocks(st.m.ub)
	nh, nkv := slices.Max(hp.nHead), slices.Max(hp.nHeadKV)
	var err error
	for _, b := range []struct {
		b *hip.Buffer
		n int
	}{{&fp.pooled, 4 * nkv * m * hp.headDim}, {&fp.a, 8 * nh * nqb * m}, {&fp.sel, nh * nqb * m}, {&fp.cnt, 4}} {
		if *b.b, err = st.alloc(b.n); err != nil {
			return err
		}
	}
	return nil
}

// flashPrefillOn says whether p runs FlashPrefill (a pass of a Prefill
// window, as the CPU's attention decides).
func (st *deviceStack) flashPrefillOn(p *pass) bool {
	return st.m.opt.FlashPrefill != nil && p.attn.fp.window > 0
}

// startKept zeroes the pass's kept count.
func (st *deviceStack) startKept(p *pass) {
	if !st.flashPrefillOn(p) || st.err != nil {
		return
	}
	if err := st.s.Memset(st.fp.cnt, 0, 4, 0); err != nil {
		st.err = errDevice("reset of the FlashPrefill count", err)
	}
}

// addKept brings the pass's kept count back into the window's.
func (st *deviceStack) addKept(p *pass) {
	if !st.flashPrefillOn(p) || st.err != nil {
		return
	}
	if err := st.s.Download(kernels.BytesOf(st.fp.kept[:]), st.fp.cnt, 0); err != nil {
		st.err = errDevice("download of the FlashPrefill count", err)
		return
	}
	p.attn.fp.kept.Add(int64(st.fp.kept[0]))
}

// sparseAttention is attention for a FlashPrefill pass: the cached keys
// of k pooled, the pass's query blocks selected from the f32 queries
// st.q, then attn_fp_<kv> over the kept blocks with the queries q (st.q,
// or their Q8_0 blocks for a q8_0 cache).
func (st *deviceStack) sparseAttention(p *pass, q, k, v hip.Buffer, n, heads, kv int) {
	fp, hd, pos0 := &st.fp, st.m.hp.headDim, p.pos0
	b, window := fp.f.BlockSize, p.attn.fp.window
	m, qb0 := fp.f.Blocks(window), pos0/b
	nqb := fp.f.Blocks(pos0+n) - qb0
	if pos0%b != 0 || (pos0+n < window && n%b != 0) {
		panic("engine: FlashPrefill pass not on block boundaries") // Load checks the pass size
	}
	a := &st.args
	a.Reset()
	a.Ptr(k, 0).Ptr(fp.pooled, 0).I32(int32(hd)).I32(int32(st.m.kv.cap)).I32(int32(pos0 + n)).I32(int32(b)).I32(int32(m))
	st.launch("fp_pool_"+st.kv, hip.Dim3{X: fp.f.Blocks(pos0 + n), Y: kv}, hip.Dim3{X: 64}, 0)
	a.Reset()
	a.Ptr(st.q, 0).Ptr(fp.pooled, 0).Ptr(fp.sel, 0).Ptr(fp.a, 0).Ptr(fp.cnt, 0).I32(int32(heads)).I32(int32(kv)).
		I32(int32(hd)).I32(int32(pos0)).I32(int32(window)).I32(int32(qb0)).I32(int32(nqb)).I32(int32(m)).I32(int32(b)).
		F64(kernels.FlashPrefillScale(hd)).F64(fp.f.Alpha).I32(int32(fp.f.SinkBlocks)).I32(int32(fp.f.Window)).
		I32(int32(fp.f.LastNFull)).I32(int32(fp.f.MinBudget))
	st.launch("fp_select", hip.Dim3{X: nqb, Y: heads}, hip.Dim3{X: 64}, 0)
	g, ok := st.attnLaunch(n, heads)
	if !ok {
		return
	}
	a.Reset()
	a.Ptr(q, 0).Ptr(k, 0).Ptr(v, 0).Ptr(st.att, 0).I32(int32(n)).I32(int32(heads)).I32(int32(kv)).I32(int32(hd)).
		I32(int32(st.m.kv.cap)).I32(int32(pos0)).F32(attnScale(hd)).Ptr(fp.sel, 0).I32(int32(nqb)).I32(int32(m)).
		I32(int32(bits.TrailingZeros(uint(b)))).I32(int32(g.KeyTile)).I32(int32(g.KeyStride))
	st.launchGeom("attn_fp_"+st.kv, g.Launch)
}
