package kernels

// This file owns the public, type-dispatching entry points over the type
// descriptors' traits (typedesc.go): dequantization, reference quantization, activation conversion
// (ggml's x86 AVX2 semantics, ../shared/spec/gguf-and-quants.md §4.2) and the one-row dot.

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned (wrapped) for a type this package cannot
// dequantize or quantize.
var ErrUnsupported = errors.New("unsupported tensor type")

// Dequantize expands n = len(dst) elements (a multiple of t.BlockSize()) of
// type t from src.
func Dequantize(t Type, src []byte, dst []float32) error {
	tr := descOf(t)
	if tr == nil || tr.dequant == nil {
		return fmt.Errorf("dequantize %v: %w", t, ErrUnsupported)
	}
	bs := t.BlockSize()
	if len(dst)%bs != 0 {
		return fmt.Errorf("dequantize %v: %d elements is not a multiple of the block size %d", t, len(dst), bs)
	}
	if need := t.RowBytes(len(dst)); len(src) < need {
		return fmt.Errorf("dequantize %v: %d elements need %d bytes, have %d", t, len(dst), need, len(src))
	}
	tr.dequant(src, dst)
	return nil
}

// Quantize packs src (a multiple of t.BlockSize() elements) into dst in type
// t with ggml's plain round-to-nearest reference quantizer.
func Quantize(t Type, src []float32, dst []byte) error {
	tr := descOf(t)
	if tr == nil || tr.quantize == nil {
		return fmt.Errorf("quantize %v: %w", t, ErrUnsupported)
	}
	bs := t.BlockSize()
	if len(src)%bs != 0 {
		return fmt.Errorf("quantize %v: %d elements is not a multiple of the block size %d", t, len(src), bs)
	}
	if need := t.RowBytes(len(src)); len(dst) < need {
		return fmt.Errorf("quantize %v: %d elements need %d bytes, have %d", t, len(src), need, len(dst))
	}
	tr.quantize(src, dst)
	return nil
}

// CanQuantize reports whether Quantize supports t.
func CanQuantize(t Type) bool {
	tr := descOf(t)
	return tr != nil && tr.quantize != nil
}

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t Type) bool {
	tr := descOf(t)
	return tr != nil && tr.dequant != nil
}

// CanMatMul reports whether t can be a MatMul weight type (it has a dot
// product and its activation type has a quantizer).
func CanMatMul(t Type) bool {
	tr := descOf(t)
	if tr == nil || tr.vecDot == nil {
		return false
	}
	switch tr.vecDotType {
	case F32, F16, BF16, Q8_0, Q8_1:
		return true
	}
	at := descOf(tr.vecDotType)
	return at != nil && at.quantize != nil
}

// VecDotType is the type activations are converted to for weights of type t
// (ggml's vec_dot_type); t itself for types without a dot product.
func VecDotType(t Type) Type {
	if tr := descOf(t); tr != nil && tr.vecDot != nil {
		return tr.vecDotType
	}
	return t
}

// QuantizeActivation converts one activation row to VecDotType(wt) with
// ggml's x86 AVX2 semantics into dst (len ≥ VecDotType(wt).RowBytes(len(x))).
// It panics if wt has no dot product (see CanMatMul).
func QuantizeActivation(wt Type, x []float32, dst []byte) {
	vt := VecDotType(wt)
	switch vt {
	case F32:
		quantizeF32(x, dst)
	case F16:
		quantizeF16(x, dst)
	case BF16:
		quantizeBF16(x, dst)
	case Q8_0:
		quantizeActQ8_0(x, dst)
	case Q8_1:
		quantizeActQ8_1(x, dst)
	default:
		// Types whose x86 activation quantizer equals the reference one
		// (Q8_K) use the one in their descriptor.
		at := descOf(vt)
		if descOf(wt) == nil || descOf(wt).vecDot == nil || at == nil || at.quantize == nil {
			panic(fmt.Sprintf("kernels: QuantizeActivation: no activation quantizer for weight type %v", wt))
		}
		at.quantize(x, dst)
	}
}

// Dot returns Σ_i w[i]·x[i] over n elements for one weight row of type t,
// with the activation already converted by QuantizeActivation. It panics if
// t has no dot product (see CanMatMul).
func Dot(t Type, n int, w, a []byte) float32 {
	tr := descOf(t)
	if tr == nil || tr.vecDot == nil {
		panic(fmt.Sprintf("kernels: Dot: no dot product for type %v", t))
	}
	return tr.vecDot(n, w, a)
}
