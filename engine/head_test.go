package engine

// Tests of the LM head's prepacked panels: the logits with the packed
// output matrix are bit-identical to those of the per-call repack, and
// only Q8_0-sized packs are made.

import (
	"math"
	"testing"

	"plexbench/kernels"
)

func TestHeadPrepackBitIdentical(t *testing.T) {
	// 200 vocabulary rows: 12 whole panels and a partial one; 140 tokens:
	// two head blocks, the second short.
	s := spec{arch: "qwen3", embd: 64, layers: 1, vocab: 200, heads: 4, kvHeads: 2, hd: 16, ff: 64,
		tied: true, wtype: kernels.Q8_0}
	fx := build(t, s, 21)
	tokens := randomTokens(140, s.vocab, 22)
	for _, sel := range []string{"", "matmul=gotile"} {
		ks, err := kernels.ParseKernels(sel)
		if err != nil {
			t.Fatal(err)
		}
		if !ks.CanPrepack(kernels.Q8_0) {
			t.Logf("%q: the Q8_0 variant reads no panels; nothing to compare", sel)
			continue
		}
		m := open(t, fx, Options{KVType: kernels.F16, KVLen: 160, Kernels: ks})
		packed := engineLogits(t, m, tokens)
		if m.head.packed == nil {
			t.Fatalf("%q: Q8_0 head was not prepacked", sel)
		}
		if want := ks.PackedBytes(m.output); m.head.packed.Bytes() != want {
			t.Errorf("%q: packed head %d bytes, PackedBytes says %d", sel, m.head.packed.Bytes(), want)
		}
		m.head.packed = nil // packTried stays set: the per-call repack from here
		plain := engineLogits(t, m, tokens)
		if m.head.packed != nil {
			t.Fatalf("%q: head packed again", sel)
		}
		for i := range plain {
			for j := range plain[i] {
				if math.Float32bits(packed[i][j]) != math.Float32bits(plain[i][j]) {
					t.Fatalf("%q: row %d logit %d: %v packed, %v repacked per call", sel, i, j, packed[i][j], plain[i][j])
				}
			}
		}
	}
}

func TestHeadPrepackOnlyQ8Sized(t *testing.T) {
	// Q4_0 panels are twice the blocks' bytes: the head repacks per call.
	s := spec{arch: "qwen3", embd: 64, layers: 1, vocab: 96, heads: 4, kvHeads: 2, hd: 16, ff: 64,
		tied: true, wtype: kernels.Q4_0}
	fx := build(t, s, 23)
	m := open(t, fx, Options{KVType: kernels.F16, KVLen: 16})
	if !m.opt.Kernels.CanPrepack(kernels.Q4_0) {
		t.Skip("the Q4_0 variant reads no panels on this CPU")
	}
	engineLogits(t, m, randomTokens(8, s.vocab, 24))
	if !m.head.packTried || m.head.packed != nil {
		t.Errorf("Q4_0 head: packTried %v, packed %v; want a refused pack", m.head.packTried, m.head.packed != nil)
	}
}
