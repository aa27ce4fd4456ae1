package engine

// This file owns the model's hyper-parameters: reading them from GGUF
// metadata (../shared/spec/architectures.md §1.1) and checking them before
// any buffer is sized from them.

import (
	"fmt"

	"plexbench/engine/gguf"
)

// ropeMode is how RoPE pairs the dimensions of a head
// (../shared/spec/architectures.md §1.4).
type ropeMode int

const (
	ropeNorm ropeMode = iota // adjacent pairs (x[2i], x[2i+1]): llama
	ropeNeox                 // split halves (x[i], x[i+n_rot/2]): qwen2, qwen3, qwen3next, qwen35*
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

	// The hybrid archs (qwen35, qwen35moe, qwen3next;
	// ../shared/spec/architectures.md §5).
	nLayerAll int      // block_count: the trunk's nLayer plus the MTP blocks, which never run
	recurrent []bool   // (n_layer) Gated DeltaNet layer; nil for the other archs
	ropeStill []bool   // (n_rot/2) IMROPE pairs fed stream e (position 0): not rotated; nil if none
	ssm       ssmShape // the GDN layers' shape
	moe       moeShape // the MoE FFN's shape (qwen35moe, qwen3next)
	vGrouped  bool     // qwen3next: v-head j belongs to key head j/r (else tiled: j mod H_k)
}

// ssmShape is the shape of a Gated DeltaNet layer
// (../shared/spec/architectures.md §5.1).
type ssmShape struct {
	dConv  int // ssm.conv_kernel: causal conv taps
	dk, dv int // ssm.state_size = key head dim; ssm.inner_size / H_v = value head dim
	hk, hv int // ssm.group_count key heads, ssm.time_step_rank value heads
}

func (s ssmShape) keyDim() int   { return s.hk * s.dk }
func (s ssmShape) valueDim() int { return s.hv * s.dv }
func (s ssmShape) convDim() int  { return 2*s.keyDim() + s.valueDim() }

// moeShape is the shape of a mixture-of-experts FFN
// (../shared/spec/architectures.md §1.8).
type moeShape struct {
	nExpert, nUsed int // expert_count, expert_used_count
	ffExp          int // expert_feed_forward_length: each routed expert's FFN width
	ffShared       int // expert_shared_feed_forward_length: the shared expert's
}

// hybrid reports whether the arch is one of the Gated DeltaNet hybrids.
func hybrid(arch string) bool {
	return arch == "qwen35" || arch == "qwen35moe" || arch == "qwen3next"
}

// attnLayer reports whether trunk layer l runs attention (every layer of
// the plain archs, the full-attention layers of the hybrids).
func (hp *hparams) attnLayer(l int) bool { return hp.recurrent == nil || !hp.recurrent[l] }

// Limits that keep a corrupt header from sizing huge buffers: far above
// any model this engine targets, far below an allocation that would fail.
const (
	maxLayers = 1024
	maxDim    = 1 << 20
	maxVocab  = 1 << 24
)

// readHParams reads and checks the hyper-parameters of f's architecture.
// The steps run in this order so that each check sees the keys it needs
// and the first failure is the one reported.
func readHParams(f *gguf.File) (*hparams, error) {
	arch := f.Architecture()
	rope, err := archRope(arch)
	if err != nil {
		return nil, err
	}
	hp := &hparams{arch: arch, rope: rope}
	r := keyReader{f: f, prefix: arch + "."}
	moe := arch == "qwen35moe" || arch == "qwen3next"
	if err := readDepth(hp, &r); err != nil {
		return nil, err
	}
	if err := readLayerWidths(hp, &r, moe); err != nil {
		return nil, err
	}
	if hybrid(arch) {
		if err := readHybrid(hp, &r, moe); err != nil {
			return nil, err
		}
	}
	if err := checkLayerWidths(hp, moe); err != nil {
		return nil, err
	}
	if err := readHeadDim(hp, &r); err != nil {
		return nil, err
	}
	if arch == "qwen35" || arch == "qwen35moe" {
		if hp.ropeStill, err = imropeStill(&r, hp.nRot); err != nil {
			return nil, err
		}
	}
	if err := checkAttnWidth(hp); err != nil {
		return nil, err
	}
	if err := readRopeScaling(hp, &r); err != nil {
		return nil, err
	}
	hp.eps = float32(r.float("attention.layer_norm_rms_epsilon", true, 0))
	if n := r.int("expert_count", false, 0); n > 0 && !moe {
		return nil, fmt.Errorf("%w: mixture-of-experts %s (expert_count %d)", ErrUnsupported, arch, n)
	}
	if r.err != nil {
		return nil, r.err
	}
	if hp.nVocab, err = vocabSize(f); err != nil {
		return nil, err
	}
	return hp, nil
}

// archRope is the RoPE mode of arch, or the error for a missing or
// unsupported architecture.
func archRope(arch string) (ropeMode, error) {
	switch arch {
	case "llama":
		return ropeNorm, nil
	case "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3next":
		return ropeNeox, nil // qwen35*'s IMROPE is NEOX for text (§1.4; see imropeStill)
	case "":
		return 0, fmt.Errorf("%w: general.architecture is missing", ErrModel)
	}
	return 0, fmt.Errorf("%w: architecture %q (supported: llama, qwen2, qwen3, qwen35, qwen35moe, qwen3next)", ErrUnsupported, arch)
}

// readDepth reads the training context, the width and the block count,
// and splits the hybrids' MTP blocks off the trunk.
func readDepth(hp *hparams, r *keyReader) error {
	hp.nCtxTrain = r.int("context_length", true, 0)
	hp.nEmbd = r.int("embedding_length", true, 0)
	hp.nLayerAll = r.int("block_count", true, 0)
	if r.err != nil {
		return r.err
	}
	if hp.nLayerAll < 1 || hp.nLayerAll > maxLayers {
		return fmt.Errorf("%w: %sblock_count %d out of range [1,%d]", ErrModel, r.prefix, hp.nLayerAll, maxLayers)
	}
	hp.nLayer = hp.nLayerAll
	if hybrid(hp.arch) {
		// MTP (NextN) blocks sit at the end of block_count; the trunk is the rest.
		nextn := r.int("nextn_predict_layers", false, 0)
		if nextn >= hp.nLayerAll {
			return fmt.Errorf("%w: %snextn_predict_layers %d leaves no trunk of block_count %d", ErrModel, r.prefix, nextn, hp.nLayerAll)
		}
		hp.nLayer -= nextn
	}
	if hp.nEmbd < 1 || hp.nEmbd > maxDim {
		return fmt.Errorf("%w: %sembedding_length %d out of range [1,%d]", ErrModel, r.prefix, hp.nEmbd, maxDim)
	}
	return nil
}

// readLayerWidths reads the per-layer FFN width and head counts of the
// trunk (the MoE archs need no dense FFN width).
func readLayerWidths(hp *hparams, r *keyReader, moe bool) error {
	var ffDef []int
	if moe {
		ffDef = make([]int, hp.nLayerAll)
	}
	hp.nFF = r.perLayer("feed_forward_length", hp.nLayerAll, ffDef)[:hp.nLayer]
	hp.nHead = r.perLayer("attention.head_count", hp.nLayerAll, nil)[:hp.nLayer]
	hp.nHeadKV = r.perLayer("attention.head_count_kv", hp.nLayerAll, hp.nHead)[:hp.nLayer]
	return r.err
}

// checkLayerWidths checks each trunk layer's FFN width and, for attention
// layers, its head counts.
func checkLayerWidths(hp *hparams, moe bool) error {
	for l := range hp.nLayer {
		switch {
		case !hp.attnLayer(l):
			// A GDN layer has no attention heads (files may store 0 for them).
			if !moe && (hp.nFF[l] < 1 || hp.nFF[l] > maxDim) {
				return fmt.Errorf("%w: layer %d: feed_forward_length %d out of range", ErrModel, l, hp.nFF[l])
			}
		case !moe && (hp.nFF[l] < 1 || hp.nFF[l] > maxDim):
			return fmt.Errorf("%w: layer %d: feed_forward_length %d out of range", ErrModel, l, hp.nFF[l])
		case hp.nHead[l] < 1 || hp.nHead[l] > maxDim:
			return fmt.Errorf("%w: layer %d: head_count %d out of range", ErrModel, l, hp.nHead[l])
		case hp.nHeadKV[l] < 1 || hp.nHead[l]%hp.nHeadKV[l] != 0:
			return fmt.Errorf("%w: layer %d: head_count %d is not a multiple of head_count_kv %d",
				ErrModel, l, hp.nHead[l], hp.nHeadKV[l])
		}
	}
	return nil
}

// readHeadDim reads the head dimension and the rotated dimensions per
// head (both default from the first attention layer) and checks them.
func readHeadDim(hp *hparams, r *keyReader) error {
	defHD := hp.nEmbd / max(hp.nHead[hp.firstAttn()], 1)
	hp.headDim = r.int("attention.key_length", false, defHD)
	if vd := r.int("attention.value_length", false, defHD); r.err == nil && vd != hp.headDim {
		return fmt.Errorf("%w: key_length %d != value_length %d", ErrUnsupported, hp.headDim, vd)
	}
	hp.nRot = r.int("rope.dimension_count", false, hp.headDim)
	if r.err != nil {
		return r.err
	}
	switch {
	case hp.headDim < 1 || hp.headDim > maxDim:
		return fmt.Errorf("%w: head dimension %d out of range", ErrModel, hp.headDim)
	case hp.nRot < 0 || hp.nRot > hp.headDim || hp.nRot%2 != 0:
		return fmt.Errorf("%w: rope.dimension_count %d must be even and at most the head dimension %d",
			ErrModel, hp.nRot, hp.headDim)
	case hp.arch == "llama" && hp.nRot != hp.headDim:
		return fmt.Errorf("%w: llama needs rope.dimension_count (%d) == key_length (%d)", ErrModel, hp.nRot, hp.headDim)
	}
	return nil
}

// checkAttnWidth checks each attention layer's heads × head dimension:
// qwen2's must equal the width, every arch's must stay in range.
func checkAttnWidth(hp *hparams) error {
	for l := range hp.nLayer {
		if !hp.attnLayer(l) {
			continue
		}
		if hp.arch == "qwen2" && hp.nHead[l]*hp.headDim != hp.nEmbd {
			return fmt.Errorf("%w: qwen2 layer %d: head_count·head_dim = %d, embedding_length = %d",
				ErrModel, l, hp.nHead[l]*hp.headDim, hp.nEmbd)
		}
		if hp.nHead[l]*hp.headDim > maxDim {
			return fmt.Errorf("%w: layer %d: %d heads of %d too large", ErrModel, l, hp.nHead[l], hp.headDim)
		}
	}
	return nil
}

// readRopeScaling reads the RoPE base and linear scaling factor and
// rejects the scaling types other than none and linear.
func readRopeScaling(hp *hparams, r *keyReader) error {
	hp.ropeBase = float32(r.float("rope.freq_base", false, 10000))
	factor := r.float("rope.scaling.factor", false, 0)
	if factor == 0 {
		factor = r.float("rope.scale_linear", false, 0)
	}
	hp.ropeScale = 1
	if factor != 0 {
		hp.ropeScale = float32(1 / factor)
	}
	if st, ok := r.f.String(r.prefix + "rope.scaling.type"); ok && st != "none" && st != "linear" {
		return fmt.Errorf("%w: rope scaling type %q (supported: none, linear)", ErrUnsupported, st)
	}
	return nil
}

// vocabSize is the number of entries of tokenizer.ggml.tokens.
func vocabSize(f *gguf.File) (int, error) {
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) == 0 {
		return 0, fmt.Errorf("%w: tokenizer.ggml.tokens is missing", ErrModel)
	}
	if len(toks) > maxVocab {
		return 0, fmt.Errorf("%w: vocabulary of %d tokens is too large", ErrModel, len(toks))
	}
	return len(toks), nil
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

// firstAttn is the first attention layer (0 when there is none).
func (hp *hparams) firstAttn() int {
	for l := range hp.nLayer {
		if hp.attnLayer(l) {
			return l
		}
	}
	return 0
}

// readHybrid reads the keys of the Gated DeltaNet hybrids (§5.1): which
// trunk layers are recurrent, the GDN shape, and the MoE shape.
func readHybrid(hp *hparams, r *keyReader, moe bool) error {
	hp.vGrouped = hp.arch == "qwen3next"
	hp.recurrent = make([]bool, hp.nLayer)
	if key := r.prefix + "attention.recurrent_layers"; r.f.Has(key) {
		// An explicit per-layer marking overrides the interval rule.
		vs, ok := r.f.Ints(key)
		if !ok || len(vs) != hp.nLayerAll {
			return fmt.Errorf("%w: metadata key %s: want %d per-layer values", ErrModel, key, hp.nLayerAll)
		}
		for l := range hp.nLayer {
			hp.recurrent[l] = vs[l] != 0
		}
	} else {
		interval := r.int("full_attention_interval", false, 4)
		if r.err == nil && interval < 1 {
			return fmt.Errorf("%w: metadata key %sfull_attention_interval %d must be at least 1", ErrModel, r.prefix, interval)
		}
		for l := range hp.nLayer {
			hp.recurrent[l] = (l+1)%interval != 0
		}
	}
	s := &hp.ssm
	s.dConv = r.int("ssm.conv_kernel", true, 0)
	s.dk = r.int("ssm.state_size", true, 0)
	s.hk = r.int("ssm.group_count", true, 0)
	s.hv = r.int("ssm.time_step_rank", true, 0)
	inner := r.int("ssm.inner_size", true, 0)
	if r.err != nil {
		return r.err
	}
	switch {
	case s.dConv < 1 || s.dConv > 64:
		return fmt.Errorf("%w: %sssm.conv_kernel %d out of range [1,64]", ErrModel, r.prefix, s.dConv)
	case s.dk < 1 || s.dk > 4096 || s.hk < 1 || s.hk > maxDim || s.hv < 1 || s.hv > maxDim:
		return fmt.Errorf("%w: %sssm: state_size %d, group_count %d, time_step_rank %d out of range",
			ErrModel, r.prefix, s.dk, s.hk, s.hv)
	case s.hv%s.hk != 0:
		return fmt.Errorf("%w: %sssm.time_step_rank (value heads) %d is not a multiple of ssm.group_count (key heads) %d",
			ErrModel, r.prefix, s.hv, s.hk)
	case inner%s.hv != 0 || inner/s.hv != s.dk:
		// llama.cpp sizes the value heads by state_size and its recurrence
		// asserts d_k == d_v; a file that disagrees cannot run there either.
		return fmt.Errorf("%w: %sssm.inner_size %d is not time_step_rank %d × state_size %d",
			ErrUnsupported, r.prefix, inner, s.hv, s.dk)
	case s.convDim() > maxDim:
		return fmt.Errorf("%w: %sssm: conv width %d too large", ErrModel, r.prefix, s.convDim())
	}
	s.dv = inner / s.hv
	if !moe {
		return nil
	}
	m := &hp.moe
	m.nExpert = r.int("expert_count", true, 0)
	m.nUsed = r.int("expert_used_count", true, 0)
	if r.err != nil {
		return r.err
	}
	if m.nExpert < 1 || m.nExpert > 4096 || m.nUsed < 1 || m.nUsed > m.nExpert {
		return fmt.Errorf("%w: %sexpert_count %d, expert_used_count %d out of range", ErrModel, r.prefix, m.nExpert, m.nUsed)
	}
	// The fallbacks are llama.cpp's: n_ff / n_expert_used and n_ff.
	m.ffExp = r.int("expert_feed_forward_length", false, hp.nFF[0]/m.nUsed)
	m.ffShared = r.int("expert_shared_feed_forward_length", false, hp.nFF[0])
	if r.err != nil {
		return r.err
	}
	if m.ffExp < 1 || m.ffExp > maxDim || m.ffShared > maxDim {
		return fmt.Errorf("%w: %sexpert_feed_forward_length %d / expert_shared_feed_forward_length %d out of range",
			ErrModel, r.prefix, m.ffExp, m.ffShared)
	}
	return nil
}

// imropeStill reads qwen35's rope.dimension_sections [t, h, w, e] and
// returns which of the n_rot/2 rotated pairs take their position from
// stream e, which llama.cpp sets to 0 for text: those pairs do not turn.
// Every other pair takes t = h = w = the token's position, so IMROPE is
// NEOX RoPE (../shared/spec/architectures.md §1.4). Nil when no pair is still.
func imropeStill(r *keyReader, nRot int) ([]bool, error) {
	key := r.prefix + "rope.dimension_sections"
	if !r.f.Has(key) {
		return nil, fmt.Errorf("%w: metadata key %s is missing", ErrModel, key)
	}
	sec, ok := r.f.Ints(key)
	if !ok || len(sec) < 4 {
		return nil, fmt.Errorf("%w: metadata key %s: want 4 integers", ErrModel, key)
	}
	total := int64(0)
	for _, v := range sec[:4] {
		if v < 0 || v > maxDim {
			return nil, fmt.Errorf("%w: metadata key %s: section %d out of range", ErrModel, key, v)
		}
		total += v
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: metadata key %s: all sections are 0", ErrModel, key)
	}
	var still []bool
	for i := range nRot / 2 {
		sector := int64(i) % total
		t := sector%3 == 0 && sector < 3*sec[0]
		h := sector%3 == 1 && sector < 3*sec[1]
		w := sector%3 == 2 && sector < 3*sec[2]
		if !t && !h && !w {
			if still == nil {
				still = make([]bool, nRot/2)
			}
			still[i] = true
		}
	}
	return still, nil
}
