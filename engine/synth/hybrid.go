package synth

// This file writes random Gated DeltaNet hybrids (qwen35, qwen35moe,
// qwen3next) of any shape, as the HF→GGUF converter lays them out
// (../shared/spec/architectures.md §5): for the engine's tests, which
// compare them with a float64 forward pass and with llama.cpp, and for
// benchmarks.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"plexbench/engine/gguf"
	"plexbench/kernels"
)

// Hybrid is the shape of a hybrid model. Zero fields take the defaults
// noted; Types nil stores every matrix as F32.
type Hybrid struct {
	Arch                    string // "qwen35", "qwen35moe" or "qwen3next"
	Embd, Layers            int
	Heads, KVHeads, HeadDim int    // the full-attention layers
	Rot                     int    // rope.dimension_count (default HeadDim/4)
	FF                      int    // dense FFN width (qwen35)
	ConvKernel              int    // ssm.conv_kernel (default 4)
	StateSize               int    // d_k = d_v
	KeyHeads, ValueHeads    int    // H_k, H_v
	Interval                int    // full_attention_interval (default 4; written only when not 4)
	Recurrent               []bool // attention.recurrent_layers, overriding Interval when set
	NextN                   int    // MTP blocks appended to block_count (written as junk, never run)
	Experts, ExpertsUsed    int    // the MoE archs
	ExpertFF, SharedFF      int    // expert and shared-expert widths (SharedFF 0: no shared expert)
	FusedGateUp             bool   // ffn_gate_up_exps instead of ffn_gate_exps + ffn_up_exps
	Sections                [4]int // rope.dimension_sections (qwen35*; default [11,11,10,0] scaled to Rot/2)
	Types                   func(layer int, name string) kernels.Type
	Vocab                   Vocab
	Seed                    uint64
}

// IsRecurrent reports whether trunk layer l of h is a GDN layer.
func (h *Hybrid) IsRecurrent(l int) bool {
	if h.Recurrent != nil {
		return h.Recurrent[l]
	}
	iv := h.Interval
	if iv == 0 {
		iv = 4
	}
	return (l+1)%iv != 0
}

// WriteHybrid writes the model h describes to path. Matrices are
// N(0, 1/cols) (one seeded pool, rows reused rotated as in Write), norms
// 1 ± 0.1, and the GDN's gates drawn so that the decay exp(g) spreads
// over (0, 1): the states matter from token to token.
func WriteHybrid(path string, h Hybrid) error {
	h.fillDefaults()
	types := h.Types
	if types == nil {
		types = AllOf(kernels.F32)
	}
	switch {
	case h.Layers < 1 || h.Vocab.Size < 1:
		return fmt.Errorf("synth: %d layers, %d tokens", h.Layers, h.Vocab.Size)
	case h.ValueHeads%h.KeyHeads != 0:
		return fmt.Errorf("synth: %d value heads are not a multiple of %d key heads", h.ValueHeads, h.KeyHeads)
	}
	moe := h.Arch == "qwen35moe" || h.Arch == "qwen3next"
	rng := rand.New(rand.NewPCG(h.Seed, 3))
	pool := make([]float32, 1<<18+4096)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64())
	}

	w := gguf.NewWriter()
	setHybridKeys(w, &h)
	setHybridSSMKeys(w, &h, moe)
	for _, kv := range h.Vocab.KVs {
		w.Set(kv.Key, kv.Value.Interface())
	}

	t := &tensorWriter{w: w, types: types, pool: pool, byWidth: true, rows: map[[2]int]*rowSource{}, rng: rng}
	t.mat(-1, "token_embd.weight", h.Embd, h.Vocab.Size, 1)
	t.vec("output_norm.weight", t.norm, h.Embd)
	for l := range h.Layers + h.NextN {
		t.hybridBlock(&h, l, moe)
	}
	if t.err != nil {
		return t.err
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// fillDefaults sets the zero fields that have defaults: Rot, ConvKernel
// and Sections.
func (h *Hybrid) fillDefaults() {
	if h.Rot == 0 {
		h.Rot = h.HeadDim / 4
	}
	if h.ConvKernel == 0 {
		h.ConvKernel = 4
	}
	if h.Sections == [4]int{} {
		// Every pair on t, h or w, as the converter's [11, 11, 10, 0] for 32.
		half := h.Rot / 2
		h.Sections = [4]int{(half + 2) / 3, (half + 1) / 3, half / 3, 0}
	}
}

// setHybridKeys sets the general keys and the trunk's, attention's and
// RoPE's "{arch}.*" keys.
func setHybridKeys(w *gguf.Writer, h *Hybrid) {
	a := h.Arch + "."
	w.Set("general.architecture", h.Arch)
	w.Set("general.name", fmt.Sprintf("%s-random-%dL-%d", h.Arch, h.Layers, h.Embd))
	w.Set(a+"context_length", uint32(262144))
	w.Set(a+"embedding_length", uint32(h.Embd))
	w.Set(a+"block_count", uint32(h.Layers+h.NextN))
	if h.FF > 0 {
		w.Set(a+"feed_forward_length", uint32(h.FF))
	}
	w.Set(a+"attention.head_count", uint32(h.Heads))
	w.Set(a+"attention.head_count_kv", uint32(h.KVHeads))
	w.Set(a+"attention.key_length", uint32(h.HeadDim))
	w.Set(a+"attention.value_length", uint32(h.HeadDim))
	w.Set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	w.Set(a+"rope.freq_base", float32(1e7))
	w.Set(a+"rope.dimension_count", uint32(h.Rot))
	if h.Arch != "qwen3next" {
		sec := make([]int32, 4)
		for i, s := range h.Sections {
			sec[i] = int32(s)
		}
		w.Set(a+"rope.dimension_sections", sec)
	}
}

// setHybridSSMKeys sets the GDN's keys, which layers are recurrent, the
// MTP block count and the MoE's keys.
func setHybridSSMKeys(w *gguf.Writer, h *Hybrid, moe bool) {
	a := h.Arch + "."
	w.Set(a+"ssm.conv_kernel", uint32(h.ConvKernel))
	w.Set(a+"ssm.state_size", uint32(h.StateSize))
	w.Set(a+"ssm.group_count", uint32(h.KeyHeads))
	w.Set(a+"ssm.time_step_rank", uint32(h.ValueHeads))
	w.Set(a+"ssm.inner_size", uint32(h.StateSize*h.ValueHeads))
	if h.Interval != 0 && h.Interval != 4 {
		w.Set(a+"full_attention_interval", uint32(h.Interval))
	}
	if h.Recurrent != nil {
		marks := make([]int32, h.Layers+h.NextN) // MTP blocks are not recurrent
		for l, r := range h.Recurrent {
			if r {
				marks[l] = 1
			}
		}
		w.Set(a+"attention.recurrent_layers", marks)
	}
	if h.NextN > 0 {
		w.Set(a+"nextn_predict_layers", uint32(h.NextN))
	}
	if moe {
		w.Set(a+"expert_count", uint32(h.Experts))
		w.Set(a+"expert_used_count", uint32(h.ExpertsUsed))
		w.Set(a+"expert_feed_forward_length", uint32(h.ExpertFF))
		if h.SharedFF > 0 {
			w.Set(a+"expert_shared_feed_forward_length", uint32(h.SharedFF))
		}
	}
}

// tensorWriter adds tensors to w drawn from one seeded pool and rng,
// keeping the first error (after which it adds nothing).
type tensorWriter struct {
	w       *gguf.Writer
	types   func(layer int, name string) kernels.Type
	pool    []float32             // the matrices' values: N(0, 1) draws scaled per width (byWidth), else as they are
	byWidth bool                  // scale the pool by 1/√cols
	rows    map[[2]int]*rowSource // by (type, cols)
	rng     *rand.Rand
	err     error
}

// put adds one tensor of the given dims.
func (t *tensorWriter) put(name string, typ kernels.Type, data []byte, dims ...int) {
	if t.err != nil {
		return
	}
	d := make([]int64, len(dims))
	for i, x := range dims {
		d[i] = int64(x)
	}
	t.err = t.w.AddTensor(name, typ, d, data)
}

// mat adds a matrix of n experts (n = 1: a plain matrix) of rows × cols.
func (t *tensorWriter) mat(layer int, name string, cols, nrows, n int) {
	if t.err != nil {
		return
	}
	typ := t.types(layer, name)
	if name == "ffn_gate_inp.weight" || name == "ffn_gate_inp_shexp.weight" {
		typ = kernels.F32 // llama.cpp keeps the routers in F32
	}
	key := [2]int{int(typ), cols}
	src := t.rows[key]
	if src == nil {
		scaled := t.pool
		if t.byWidth {
			scaled = make([]float32, len(t.pool))
			for i, v := range t.pool {
				scaled[i] = v / float32(math.Sqrt(float64(cols)))
			}
		}
		if src, t.err = newRowSource(typ, cols, scaled); t.err != nil {
			t.err = fmt.Errorf("synth: tensor %q: %w", name, t.err)
			return
		}
		t.rows[key] = src
	}
	data := make([]byte, src.rowBytes*nrows*n)
	for r := range nrows * n {
		src.next(data[r*src.rowBytes : (r+1)*src.rowBytes])
	}
	full := name
	if layer >= 0 {
		full = fmt.Sprintf("blk.%d.%s", layer, name)
	}
	dims := []int{cols, nrows}
	switch {
	case n > 1:
		dims = append(dims, n)
	case nrows == 1:
		dims = dims[:1]
	}
	t.put(full, typ, data, dims...)
}

// vec adds an F32 tensor of the given dims drawn from gen.
func (t *tensorWriter) vec(name string, gen func() float64, dims ...int) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(gen())))
	}
	t.put(name, kernels.F32, data, dims...)
}

// norm draws a norm weight, 1 ± 0.1.
func (t *tensorWriter) norm() float64 { return 1 + 0.1*(2*t.rng.Float64()-1) }

// uniform draws from [lo, hi).
func (t *tensorWriter) uniform(lo, hi float64) func() float64 {
	return func() float64 { return lo + (hi-lo)*t.rng.Float64() }
}

// hybridBlock adds block l's tensors: its norms, its mixer (GDN or
// attention; the MTP blocks take attention), its FFN, and an MTP block's
// extras.
func (t *tensorWriter) hybridBlock(h *Hybrid, l int, moe bool) {
	e := h.Embd
	p := fmt.Sprintf("blk.%d.", l)
	t.vec(p+"attn_norm.weight", t.norm, e)
	t.vec(p+"post_attention_norm.weight", t.norm, e)
	if l < h.Layers && h.IsRecurrent(l) {
		t.gdnMixer(h, l)
	} else {
		t.attnMixer(h, l)
	}
	if !moe {
		t.mat(l, "ffn_gate.weight", e, h.FF, 1)
		t.mat(l, "ffn_up.weight", e, h.FF, 1)
		t.mat(l, "ffn_down.weight", h.FF, e, 1)
	} else {
		t.moeFFN(h, l)
	}
	if l >= h.Layers {
		t.mat(l, "nextn.eh_proj.weight", 2*e, e, 1)
		t.vec(p+"nextn.enorm.weight", t.norm, e)
		t.vec(p+"nextn.hnorm.weight", t.norm, e)
	}
}

// gdnMixer adds layer l's Gated DeltaNet tensors.
func (t *tensorWriter) gdnMixer(h *Hybrid, l int) {
	e := h.Embd
	kd, vd := h.KeyHeads*h.StateSize, h.ValueHeads*h.StateSize
	p := fmt.Sprintf("blk.%d.", l)
	t.mat(l, "attn_qkv.weight", e, 2*kd+vd, 1)
	t.mat(l, "attn_gate.weight", e, vd, 1)
	if h.Arch == "qwen3next" {
		t.mat(l, "ssm_ba.weight", e, 2*h.ValueHeads, 1)
	} else {
		t.mat(l, "ssm_beta.weight", e, h.ValueHeads, 1)
		t.mat(l, "ssm_alpha.weight", e, h.ValueHeads, 1)
	}
	t.vec(p+"ssm_conv1d.weight", t.uniform(-0.5, 0.5), h.ConvKernel, 2*kd+vd)
	t.vec(p+"ssm_dt.bias", t.uniform(-4, 0), h.ValueHeads)
	t.vec(p+"ssm_a", func() float64 { return -math.Exp(t.uniform(0, math.Log(16))()) }, h.ValueHeads)
	t.vec(p+"ssm_norm.weight", t.norm, h.StateSize)
	t.mat(l, "ssm_out.weight", vd, e, 1)
}

// attnMixer adds layer l's gated full-attention tensors (attn_q holds
// the queries and their gate).
func (t *tensorWriter) attnMixer(h *Hybrid, l int) {
	e, hd := h.Embd, h.HeadDim
	p := fmt.Sprintf("blk.%d.", l)
	t.mat(l, "attn_q.weight", e, 2*h.Heads*hd, 1)
	t.mat(l, "attn_k.weight", e, h.KVHeads*hd, 1)
	t.mat(l, "attn_v.weight", e, h.KVHeads*hd, 1)
	t.vec(p+"attn_q_norm.weight", t.norm, hd)
	t.vec(p+"attn_k_norm.weight", t.norm, hd)
	t.mat(l, "attn_output.weight", h.Heads*hd, e, 1)
}

// moeFFN adds layer l's router, routed experts and, when SharedFF is set,
// shared expert.
func (t *tensorWriter) moeFFN(h *Hybrid, l int) {
	e := h.Embd
	t.mat(l, "ffn_gate_inp.weight", e, h.Experts, 1)
	if h.FusedGateUp {
		t.mat(l, "ffn_gate_up_exps.weight", e, 2*h.ExpertFF, h.Experts)
	} else {
		t.mat(l, "ffn_gate_exps.weight", e, h.ExpertFF, h.Experts)
		t.mat(l, "ffn_up_exps.weight", e, h.ExpertFF, h.Experts)
	}
	t.mat(l, "ffn_down_exps.weight", h.ExpertFF, e, h.Experts)
	if h.SharedFF > 0 {
		t.mat(l, "ffn_gate_inp_shexp.weight", e, 1, 1)
		t.mat(l, "ffn_gate_shexp.weight", e, h.SharedFF, 1)
		t.mat(l, "ffn_up_shexp.weight", e, h.SharedFF, 1)
		t.mat(l, "ffn_down_shexp.weight", h.SharedFF, e, 1)
	}
}

// HybridPresets names the shapes HybridPreset knows.
var HybridPresets = []string{"qwen35-tiny", "qwen35moe-tiny", "qwen3next-tiny", "qwen35-0.8b", "qwen35moe-small"}

// HybridPreset returns a named hybrid shape (vocabulary, types and seed
// left to the caller):
//
//   - "qwen35-tiny", "qwen35moe-tiny", "qwen3next-tiny": 6 layers of
//     width 64, attention at layers 2 and 5, 4 heads of 32 (2 KV) with 8
//     rotated dims, 2 key and 4 value heads of 16 (so the tiled and
//     grouped head orders differ); the MoE archs 6 experts of 48, 2 used,
//     and a shared expert of 64. The test and llama.cpp-oracle models.
//   - "qwen35-0.8b": Qwen3.5-0.8B's trunk: 24 layers of 1024, attention
//     every 4th (8 heads of 256, 2 KV, 64 rotated dims), FFN 3584, 16 key
//     and 16 value heads of 128, conv 4.
//   - "qwen35moe-small": a small qwen35moe of our own: 8 layers of 1024,
//     attention as qwen35-0.8b, 64 experts of 256 with 8 used and a
//     shared expert of 512.
func HybridPreset(name string) (Hybrid, error) {
	switch name {
	case "qwen35-tiny", "qwen35moe-tiny", "qwen3next-tiny":
		h := Hybrid{Arch: name[:len(name)-len("-tiny")], Embd: 64, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 32, Rot: 8,
			ConvKernel: 4, StateSize: 16, KeyHeads: 2, ValueHeads: 4, Interval: 3}
		if h.Arch == "qwen35" {
			h.FF = 96
		} else {
			h.Experts, h.ExpertsUsed, h.ExpertFF, h.SharedFF = 6, 2, 48, 64
		}
		return h, nil
	case "qwen35-0.8b":
		return Hybrid{Arch: "qwen35", Embd: 1024, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 256, Rot: 64, FF: 3584,
			ConvKernel: 4, StateSize: 128, KeyHeads: 16, ValueHeads: 16, Interval: 4}, nil
	case "qwen35moe-small":
		return Hybrid{Arch: "qwen35moe", Embd: 1024, Layers: 8, Heads: 8, KVHeads: 2, HeadDim: 256, Rot: 64,
			ConvKernel: 4, StateSize: 128, KeyHeads: 16, ValueHeads: 16, Interval: 4,
			Experts: 64, ExpertsUsed: 8, ExpertFF: 256, SharedFF: 512}, nil
	}
	return Hybrid{}, fmt.Errorf("synth: unknown hybrid preset %q (have %v)", name, HybridPresets)
}
