package engine

// This file owns the model's hyper-parameters: reading them from GGUF
// metadata (architectures.md §1.1) and checking them before any buffer is
// sized from them.

import (
	"fmt"

	"plexbench/engine/gguf"
)

// ropeMode is how RoPE pairs the dimensions of a head (architectures.md §1.4).
type ropeMode int

const (
	ropeNorm ropeMode = iota // adjacent pairs (x[2i], x[2i+1]): llama
	ropeNeox                 // split halves (x[i], x[i+n_rot/2]): qwen2, qwen3
)

// hparams are the shape and numerics of one model, read from "{arch}.*" keys.
type hparams struct {
	arch      string
	nCtxTrain int // context_length
	nEmbd     int // embedding_length
	nLayer    int // block_count
	nVocab    int // entries of tokenizer.ggml.tokens
	nFF       []int
	nHead     []int
	nHeadKV   []int
	headDim   int // key_length == value_length
	nRot      int // rotated dims per head
	ropeBase  float32
	ropeScale float32 // freq_scale = 1/scaling.factor
	rope      ropeMode
	eps       float32 // RMSNorm epsilon
}

// Limits that keep a corrupt header from sizing huge buffers: far above
// any model this engine targets, far below an allocation that would fail.
const (
	maxLayers = 1024
	maxDim    = 1 << 20
	maxVocab  = 1 << 24
)

// readHParams reads and checks the hyper-parameters of f's architecture.
func readHParams(f *gguf.File) (*hparams, error) {
	arch := f.Architecture()
	hp := &hparams{arch: arch}
	switch arch {
	case "llama":
		hp.rope = ropeNorm
	case "qwen2", "qwen3":
		hp.rope = ropeNeox
	case "":
		return nil, fmt.Errorf("%w: general.architecture is missing", ErrModel)
	default:
		return nil, fmt.Errorf("%w: architecture %q (supported: llama, qwen2, qwen3)", ErrUnsupported, arch)
	}
	r := keyReader{f: f, prefix: arch + "."}
	hp.nCtxTrain = r.int("context_length", true, 0)
	hp.nEmbd = r.int("embedding_length", true, 0)
	hp.nLayer = r.int("block_count", true, 0)
	if r.err != nil {
		return nil, r.err
	}
	if hp.nLayer < 1 || hp.nLayer > maxLayers {
		return nil, fmt.Errorf("%w: %sblock_count %d out of range [1,%d]", ErrModel, r.prefix, hp.nLayer, maxLayers)
	}
	if hp.nEmbd < 1 || hp.nEmbd > maxDim {
		return nil, fmt.Errorf("%w: %sembedding_length %d out of range [1,%d]", ErrModel, r.prefix, hp.nEmbd, maxDim)
	}
	hp.nFF = r.perLayer("feed_forward_length", hp.nLayer, nil)
	hp.nHead = r.perLayer("attention.head_count", hp.nLayer, nil)
	hp.nHeadKV = r.perLayer("attention.head_count_kv", hp.nLayer, hp.nHead)
	if r.err != nil {
		return nil, r.err
	}
	for l := range hp.nLayer {
		switch {
		case hp.nFF[l] < 1 || hp.nFF[l] > maxDim:
			return nil, fmt.Errorf("%w: layer %d: feed_forward_length %d out of range", ErrModel, l, hp.nFF[l])
		case hp.nHead[l] < 1 || hp.nHead[l] > maxDim:
			return nil, fmt.Errorf("%w: layer %d: head_count %d out of range", ErrModel, l, hp.nHead[l])
		case hp.nHeadKV[l] < 1 || hp.nHead[l]%hp.nHeadKV[l] != 0:
			return nil, fmt.Errorf("%w: layer %d: head_count %d is not a multiple of head_count_kv %d",
				ErrModel, l, hp.nHead[l], hp.nHeadKV[l])
		}
	}
	defHD := hp.nEmbd / hp.nHead[0]
	hp.headDim = r.int("attention.key_length", false, defHD)
	if vd := r.int("attention.value_length", false, defHD); r.err == nil && vd != hp.headDim {
		return nil, fmt.Errorf("%w: key_length %d != value_length %d", ErrUnsupported, hp.headDim, vd)
	}
	hp.nRot = r.int("rope.dimension_count", false, hp.headDim)
	if r.err != nil {
		return nil, r.err
	}
	switch {
	case hp.headDim < 1 || hp.headDim > maxDim:
		return nil, fmt.Errorf("%w: head dimension %d out of range", ErrModel, hp.headDim)
	case hp.nRot < 0 || hp.nRot > hp.headDim || hp.nRot%2 != 0:
		return nil, fmt.Errorf("%w: rope.dimension_count %d must be even and at most the head dimension %d",
			ErrModel, hp.nRot, hp.headDim)
	case arch == "llama" && hp.nRot != hp.headDim:
		return nil, fmt.Errorf("%w: llama needs rope.dimension_count (%d) == key_length (%d)", ErrModel, hp.nRot, hp.headDim)
	}
	for l := range hp.nLayer {
		if arch == "qwen2" && hp.nHead[l]*hp.headDim != hp.nEmbd {
			return nil, fmt.Errorf("%w: qwen2 layer %d: head_count·head_dim = %d, embedding_length = %d",
				ErrModel, l, hp.nHead[l]*hp.headDim, hp.nEmbd)
		}
		if hp.nHead[l]*hp.headDim > maxDim {
			return nil, fmt.Errorf("%w: layer %d: %d heads of %d too large", ErrModel, l, hp.nHead[l], hp.headDim)
		}
	}

	hp.ropeBase = float32(r.float("rope.freq_base", false, 10000))
	factor := r.float("rope.scaling.factor", false, 0)
	if factor == 0 {
		factor = r.float("rope.scale_linear", false, 0)
	}
	hp.ropeScale = 1
	if factor != 0 {
		hp.ropeScale = float32(1 / factor)
	}
	if st, ok := f.String(r.prefix + "rope.scaling.type"); ok && st != "none" && st != "linear" {
		return nil, fmt.Errorf("%w: rope scaling type %q (supported: none, linear)", ErrUnsupported, st)
	}
	hp.eps = float32(r.float("attention.layer_norm_rms_epsilon", true, 0))
	if n := r.int("expert_count", false, 0); n > 0 {
		return nil, fmt.Errorf("%w: mixture-of-experts %s (expert_count %d)", ErrUnsupported, arch, n)
	}
	if r.err != nil {
		return nil, r.err
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) == 0 {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens is missing", ErrModel)
	}
	if len(toks) > maxVocab {
		return nil, fmt.Errorf("%w: vocabulary of %d tokens is too large", ErrModel, len(toks))
	}
	hp.nVocab = len(toks)
	return hp, nil
}

// keyReader reads "{arch}."-prefixed keys and keeps the first error.
type keyReader struct {
	f      *gguf.File
	prefix string
	err    error
}

func (r *keyReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrModel}, args...)...)
	}
}

// int reads a non-negative integer key that fits an int; def if absent and optional.
func (r *keyReader) int(key string, required bool, def int) int {
	k := r.prefix + key
	if !r.f.Has(k) {
		if required {
			r.fail("metadata key %s is missing", k)
		}
		return def
	}
	v, ok := r.f.Int(k)
	if !ok || v < 0 || v > maxDim*maxLayers {
		r.fail("metadata key %s: want a non-negative integer", k)
		return def
	}
	return int(v)
}

func (r *keyReader) float(key string, required bool, def float64) float64 {
	k := r.prefix + key
	if !r.f.Has(k) {
		if required {
			r.fail("metadata key %s is missing", k)
		}
		return def
	}
	v, ok := r.f.Float(k)
	if !ok {
		r.fail("metadata key %s: want a number", k)
		return def
	}
	return v
}

// perLayer reads a key stored as a scalar or as one value per layer. When
// the key is absent it copies def, or fails if def is nil.
func (r *keyReader) perLayer(key string, nLayer int, def []int) []int {
	k := r.prefix + key
	out := make([]int, nLayer)
	if !r.f.Has(k) {
		if def == nil {
			r.fail("metadata key %s is missing", k)
		} else {
			copy(out, def)
		}
		return out
	}
	vs, ok := r.f.Ints(k)
	if !ok || (len(vs) != 1 && len(vs) != nLayer) {
		r.fail("metadata key %s: want an integer or %d per-layer integers", k, nLayer)
		return out
	}
	for l := range out {
		v := vs[0]
		if len(vs) == nLayer {
			v = vs[l]
		}
		if v < 0 || v > maxDim {
			r.fail("metadata key %s: value %d out of range", k, v)
			return out
		}
		out[l] = int(v)
	}
	return out
}
