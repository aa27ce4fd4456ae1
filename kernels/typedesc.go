package kernels

// This file owns the type descriptors: one typeDesc value per tensor type
// the package computes with, defined in that type's format file (floats.go,
// legacy.go, iq4nl.go, mxfp4.go, kquants.go) and collected in typeDescs.
// A descriptor holds the type's scalar kernels (traits) and what its SIMD
// matmul variants bind: the panel format, the decoder the Go repacks read,
// and the panel kernels per ISA. The variant registry (variants.go), the
// type-dispatching entry points (convert.go) and the repacks (panel.go)
// read the descriptors; none of them lists types to find a kernel.
//
// Adding a weight type is its descriptor in its family's table, the code
// the descriptor names, and for SIMD kernels their assembly.

import "slices"

// typeDesc describes one tensor type.
type typeDesc struct {
	t Type
	traits
	goDesc string   // the "go" matmul variant's line where it is not the shared one
	simd   simdDesc // the zero value: no SIMD matmul variants
}

// traits are a type's scalar kernels.
type traits struct {
	// dequant expands whole blocks of src into dst (len(dst) is a multiple of the block size).
	dequant func(src []byte, dst []float32)
	// quantize packs dst from src (len(src) a multiple of the block size); nil if unsupported.
	quantize func(src []float32, dst []byte)
	// vecDotType is the type activations are converted to before vecDot (ggml's vec_dot_type).
	vecDotType Type
	// vecDot returns Σ w·a over n elements, w in this type, a already in vecDotType.
	vecDot func(n int, w, a []byte) float32
}

// simdDesc is what a weight type's SIMD matmul variants bind (simdKernel
// assembles them). Every type with a family gets the "gotile" variant, the
// family's Go twins; "avx2" and "avx512" exist where their kernels are set.
type simdDesc struct {
	fam matFamily // 0: no SIMD matmul
	// famQ8: the panels' level format (the bias β that makes the levels
	// unsigned, or min for Q4_1/Q5_1) and the decoder of one block to its
	// signed levels and scale (none for min types: repackQ8Min reads them).
	q8     q8Format
	levels func(blk []byte, q *[qk]int8) float32
	// avx2Signed: the avx2 panels keep the levels signed (the sign trick),
	// since biased levels reach 255 and VPMADDUBSW's pair sums would
	// saturate.
	avx2Signed bool
	// famK: the panel layout and the decoder of one super-block to its
	// panel levels (biased for correction layouts, int8 bytes for signed
	// ones), per-sub-block scales, pair entries (none for signed layouts),
	// d and dmin.
	layout  kLayout
	kLevels func(blk []byte, u *[qkK]uint8, sc *[16]int32, pr *[16]int16) (d, dmin float32)
	// The panel kernels of the two assembly levels.
	avx2, avx512 panelKernels
}

// panelKernels are one ISA's matmul kernels of a weight type.
type panelKernels struct {
	q    func(*qTile)     // famQ8, famK: the panel kernel
	fp   [3]func(*fpTile) // famFloat: the outer-product kernels for 12, 4 and 1 tokens
	vnni bool             // q uses AVX-512 VNNI (an avx512 kernel without it needs F/BW/VL/DQ)
}

// typeDescs lists every descriptor, one family per format file.
var typeDescs = slices.Concat(floatDescs, legacyDescs, iq4nlDescs, mxfp4Descs, kquantDescs)

// descByType indexes typeDescs by type id.
var descByType = func() (m [64]*typeDesc) {
	for i := range typeDescs {
		d := &typeDescs[i]
		if int(d.t) >= len(m) || m[d.t] != nil {
			panic("kernels: " + d.t.String() + " is described twice or has too large an id")
		}
		m[d.t] = d
	}
	return m
}()

// descOf returns t's descriptor, nil for a type the package does not
// compute with.
func descOf(t Type) *typeDesc {
	if int(t) < len(descByType) {
		return descByType[t]
	}
	return nil
}

// simdKernel returns the SIMD implementation of MatMul for weight type t
// on isa ("avx512", "avx2", or "gotile" for the Go twins), or nil.
func simdKernel(isa string, t Type) *matKernel {
	d := descOf(t)
	if d == nil {
		return nil
	}
	var k *matKernel
	switch d.simd.fam {
	case famQ8:
		k = d.simd.q8Kernel(isa)
	case famK:
		k = d.simd.kKernel(isa)
	case famFloat:
		k = d.simd.floatKernel(isa)
	}
	if k == nil || k.q == nil && k.fp[0] == nil {
		return nil
	}
	return k
}

// avx512Repack is the vector repack an avx512 kernel's panels take: the
// AVX-512 gathers for the VNNI kernels (repackAVX512 declines the types
// it has none for, leaving them to the Go repacks), the AVX2 repacks for
// the others.
func (pk panelKernels) avx512Repack() func(w *Matrix, r0 int, f q8Format, dst []byte) bool {
	if pk.vnni {
		return repackAVX512
	}
	return repackAVX2
}

// q8Kernel assembles a 32-element block type's kernel on isa: the panel
// kernel from the descriptor, the activation converter and repack of the
// ISA (min types keep the Go Q8_1 converter everywhere).
func (s *simdDesc) q8Kernel(isa string) *matKernel {
	k := &matKernel{fam: famQ8, fmt: s.q8, actQ8: quantActQ8Go}
	if s.q8.min {
		k.actQ8 = quantActQ8_1Go
	}
	switch isa {
	case "gotile":
		k.tokens, k.q = 8, func(qt *qTile) { q8PanelGo(qt, 8) }
		if s.q8.min {
			k.q = func(qt *qTile) { q8PanelGoMin(qt, 8) }
		}
	case "avx2":
		k.tokens, k.q, k.repack = 4, s.avx2.q, repackAVX2
		if !s.q8.min {
			k.actQ8 = quantActQ8AVX2
		}
		if s.avx2Signed {
			k.fmt = q8Format{signed: true}
		}
	case "avx512":
		k.tokens, k.q, k.vnni, k.repack = 8, s.avx512.q, s.avx512.vnni, s.avx512.avx512Repack()
		if !s.q8.min {
			k.actQ8 = quantActQ8AVX512
		}
	default:
		return nil
	}
	return k
}

// kKernel assembles a super-block type's kernel on isa.
func (s *simdDesc) kKernel(isa string) *matKernel {
	k := &matKernel{fam: famK, layout: s.layout, actQ8K: quantizeQ8K}
	switch isa {
	case "gotile":
		twin := kPanelGo(s.layout)
		k.tokens, k.q = 8, func(qt *qTile) { twin(qt, 8) }
	case "avx2":
		k.tokens, k.q, k.actQ8K, k.repack = 4, s.avx2.q, quantQ8KAVX2, repackAVX2
	case "avx512":
		k.tokens, k.q, k.vnni, k.actQ8K = 8, s.avx512.q, s.avx512.vnni, quantQ8KAVX512
		k.repack = s.avx512.avx512Repack()
	default:
		return nil
	}
	return k
}

// floatKernel assembles a float type's kernel on isa.
func (s *simdDesc) floatKernel(isa string) *matKernel {
	k := &matKernel{fam: famFloat, round: roundActGo}
	switch isa {
	case "gotile":
		k.fp = [3]func(*fpTile){
			func(ft *fpTile) { fPanelGo(ft, 12) },
			func(ft *fpTile) { fPanelGo(ft, 4) },
			func(ft *fpTile) { fPanelGo(ft, 1) }}
	case "avx2":
		k.fp, k.fpRepack, k.round = s.avx2.fp, repackFloatAVX2, roundActAVX2
	case "avx512":
		k.fp, k.fpRepack, k.round = s.avx512.fp, repackFloatAVX512, roundActAVX512
	default:
		return nil
	}
	return k
}
