// Package synth writes random models with the shapes of real ones, for
// benchmarks that need a model's cost but not its weights: Qwen3-0.6B
// (hidden 1024, 16/8 heads of 128, FFN 3072, tied embedding), Qwen3-8B
// (hidden 4096, 32/8 heads of 128, FFN 12288, its own output matrix) and
// tiny llama, qwen2 and qwen3 shapes for device checks (see Shapes), with
// any depth, any matrix types, and either a real tokenizer or a
// placeholder vocabulary of any size.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"plexbench/engine/gguf"
	"plexbench/kernels"
)

// Qwen3-0.6B's shapes.
const (
	Embd    = 1024
	Heads   = 16
	KVHeads = 8
	HeadDim = 128
	FFN     = 3072
	Layers  = 28 // the real model's depth
)

// Shape is a dense model's architecture and sizes; the zero value is
// Qwen3-0.6B's. The fields after Sigma are for the engine's tests, which
// need the variants real files have; their zero values write none.
type Shape struct {
	Name                    string // general.name's stem, e.g. "qwen3-8b"
	Arch                    string // "llama", "qwen2" (q/k/v biases) or "qwen3" (q/k norms)
	Embd                    int
	Heads, KVHeads, HeadDim int
	FFN                     int
	Layers                  int     // the real model's depth
	Untied                  bool    // an output.weight of its own, not the tied embedding
	Sigma                   float64 // the matrices' σ (0: 0.03)

	Rot        int     // rope.dimension_count (0: not written, that is HeadDim)
	KVPerLayer []int   // head_count_kv per layer, written as an array (overrides KVHeads)
	Biases     bool    // llama's q/k/v, attn_output and FFN biases; qwen2's output.bias
	RopeFreqs  bool    // llama's rope_freqs.weight, divisors in [1, ∞)
	FusedQKV   bool    // one attn_qkv tensor (and bias) instead of attn_q/k/v
	RopeBase   float32 // rope.freq_base (0: 1e6, llama's 1e4)
	Eps        float32 // attention.layer_norm_rms_epsilon (0: 1e-6)
}

// kv is layer l's KV head count.
func (s *Shape) kv(l int) int {
	if s.KVPerLayer != nil {
		return s.KVPerLayer[l]
	}
	return s.KVHeads
}

// Shapes names the dense shapes ShapeOf knows.
var Shapes = []string{"qwen3-0.6b", "qwen3-8b", "llama-tiny", "qwen2-tiny", "qwen3-tiny"}

// ShapeOf returns a named dense shape:
//
//   - "qwen3-0.6b": Qwen3-0.6B, 28 layers (the zero Shape).
//   - "qwen3-8b": Qwen3-8B, 36 layers of 4096, 32 heads of 128 (8 KV),
//     FFN 12288, an output matrix of its own.
//   - "llama-tiny", "qwen2-tiny", "qwen3-tiny": 2 layers of 64, 4 heads
//     of 16 (2 KV), FFN 160 (5 Q8_0 blocks: an odd count), σ 0.12 so that
//     at this width the logits spread as the 0.6B's do; for the device
//     checks, which score each architecture's pass.
func ShapeOf(name string) (Shape, error) {
	switch name {
	case "qwen3-0.6b":
		return qwen3_06B, nil
	case "qwen3-8b":
		return Shape{Name: name, Arch: "qwen3", Embd: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 12288, Layers: 36, Untied: true}, nil
	case "llama-tiny", "qwen2-tiny", "qwen3-tiny":
		return Shape{Name: name, Arch: strings.TrimSuffix(name, "-tiny"), Embd: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 160,
			Layers: 2, Sigma: 0.12}, nil
	}
	return Shape{}, fmt.Errorf("synth: unknown shape %q (have %v)", name, Shapes)
}

var qwen3_06B = Shape{Name: "qwen3-0.6b", Arch: "qwen3", Embd: Embd, Heads: Heads, KVHeads: KVHeads, HeadDim: HeadDim, FFN: FFN, Layers: Layers}

// Config says what Write builds.
type Config struct {
	Shape  Shape // the zero value: Qwen3-0.6B
	Layers int   // transformer blocks
	// Types gives each matrix's type by layer (−1 for token_embd.weight
	// and output.weight) and name within the layer ("attn_q.weight");
	// norms and biases are always F32. Nil stores every matrix as F16.
	Types func(layer int, name string) kernels.Type
	// Vocab is the tokenizer; its size is the tied embedding's row count.
	Vocab Vocab
	// Seed varies the weights; 0 gives the files Write has always written.
	Seed uint64
}

// Vocab is a tokenizer as GGUF metadata: the tokenizer.* records to copy
// into the model, and the number of tokens they define.
type Vocab struct {
	Size int
	KVs  []gguf.KV
}

// LoadVocab reads the tokenizer.* records of a GGUF file (a model, or a
// vocabulary-only file such as llama.cpp's ggml-vocab-*.gguf).
func LoadVocab(path string) (Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Vocab{}, fmt.Errorf("synth: %w", err)
	}
	defer f.Close()
	var v Vocab
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			v.KVs = append(v.KVs, kv)
		}
	}
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok || len(toks) == 0 {
		return Vocab{}, fmt.Errorf("synth: %s: no tokenizer.ggml.tokens", path)
	}
	v.Size = len(toks)
	return v, nil
}

// PlaceholderVocab is a SentencePiece vocabulary of n ≥ 3 tokens: <unk>,
// <s> (BOS), </s> (EOS), then "▁t3", "▁t4", …. It tokenizes nothing
// usefully; it is for runs fed token ids.
func PlaceholderVocab(n int) Vocab {
	toks := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3} // UNKNOWN, CONTROL, CONTROL
	for i := len(toks); i < n; i++ {
		toks = append(toks, fmt.Sprintf("\u2581t%d", i))
		types = append(types, 1)
	}
	scores := make([]float32, len(toks))
	for i := range scores {
		scores[i] = -float32(i)
	}
	kv := func(key string, x any) gguf.KV {
		v, err := gguf.ValueOf(x)
		if err != nil {
			panic(err) // the types above are all ones ValueOf takes
		}
		return gguf.KV{Key: key, Value: v}
	}
	return Vocab{Size: len(toks), KVs: []gguf.KV{
		kv("tokenizer.ggml.model", "llama"),
		kv("tokenizer.ggml.tokens", toks),
		kv("tokenizer.ggml.scores", scores),
		kv("tokenizer.ggml.token_type", types),
		kv("tokenizer.ggml.bos_token_id", uint32(1)),
		kv("tokenizer.ggml.eos_token_id", uint32(2)),
	}}
}

// AllOf is a Config.Types that stores every matrix as t.
func AllOf(t kernels.Type) func(int, string) kernels.Type {
	return func(int, string) kernels.Type { return t }
}

// Q4KM is llama.cpp's Q4_K_M mix for a model of n layers with a tied
// embedding: Q4KMOf(n, false).
func Q4KM(n int) func(int, string) kernels.Type { return Q4KMOf(n, false) }

// Q4KMOf is llama.cpp's Q4_K_M mix for a model of n layers: Q4_K, with
// Q6_K for the output matrix (output.weight, or a tied token_embd.weight:
// untied false) and for attn_v and ffn_down on the layers use_more_bits(i,
// n) picks (the first and last eighth, and every third in between).
func Q4KMOf(n int, untied bool) func(int, string) kernels.Type {
	return func(layer int, name string) kernels.Type {
		moreBits := layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2
		switch {
		case layer < 0 && untied && name == "token_embd.weight":
			return kernels.Q4_K
		case layer < 0:
			return kernels.Q6_K
		case moreBits && (name == "attn_v.weight" || name == "ffn_down.weight"):
			return kernels.Q6_K
		}
		return kernels.Q4_K
	}
}

// Mix returns the Types for a llama.cpp file-type name: "f16", "q8_0" or
// "q4_k_m", for a model of n layers with a tied embedding.
func Mix(name string, n int) (func(int, string) kernels.Type, error) { return MixOf(name, n, false) }

// MixOf is Mix for a model whose output matrix is tied (untied false) or
// its own.
func MixOf(name string, n int, untied bool) (func(int, string) kernels.Type, error) {
	switch strings.ToLower(name) {
	case "f16":
		return AllOf(kernels.F16), nil
	case "q8_0":
		return AllOf(kernels.Q8_0), nil
	case "q4_k_m":
		return Q4KMOf(n, untied), nil
	}
	return nil, fmt.Errorf("synth: unknown type %q (want f16, q8_0 or q4_k_m)", name)
}

// distinctRows is how many rows each (type, width) pair quantizes; the
// rest of a matrix reuses them, rotated by whole blocks.
const distinctRows = 256

// Write writes the model c describes to path. Weights are drawn once from
// a seeded normal pool (σ 0.03, or the shape's σ), so equal configs give
// equal files. Norm weights are 1 + N(0, 0.03) noise, as trained models'
// are near 1, so logits spread and a perplexity comparison between
// engines means something; q/k/v and output biases are that noise × 10,
// llama's attn_output and FFN biases × 3.
func Write(path string, c Config) error {
	if c.Shape.Arch == "" {
		c.Shape = qwen3_06B
	}
	if err := c.check(); err != nil {
		return err
	}
	if c.Types == nil {
		c.Types = AllOf(kernels.F16)
	}
	t := newDenseWriter(c)
	setDenseKeys(t.w, &c)
	s := &c.Shape
	t.mat(-1, "token_embd.weight", s.Embd, c.Vocab.Size, 1)
	t.vec("output_norm.weight", t.noise(1, 1), s.Embd)
	if s.Untied {
		t.mat(-1, "output.weight", s.Embd, c.Vocab.Size, 1)
	}
	if s.Arch == "qwen2" && s.Biases {
		t.vec("output.bias", t.noise(0, 10), c.Vocab.Size)
	}
	if s.Arch == "llama" && s.RopeFreqs {
		t.vec("rope_freqs.weight", t.divisor, s.ropeDims()/2)
	}
	for l := range c.Layers {
		t.denseBlock(s, l)
	}
	if t.err != nil {
		return t.err
	}
	if err := t.w.WriteFile(path); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// check refuses configs Write cannot write.
func (c *Config) check() error {
	s := &c.Shape
	switch {
	case c.Layers < 1:
		return fmt.Errorf("synth: %d layers", c.Layers)
	case c.Vocab.Size < 1:
		return fmt.Errorf("synth: empty vocabulary")
	case s.Arch != "llama" && s.Arch != "qwen2" && s.Arch != "qwen3":
		return fmt.Errorf("synth: architecture %q (want llama, qwen2 or qwen3)", s.Arch)
	case s.Embd < 1 || s.Heads < 1 || s.KVHeads < 1 && s.KVPerLayer == nil || s.HeadDim < 1 || s.FFN < 1:
		return fmt.Errorf("synth: shape %+v", *s)
	case s.KVPerLayer != nil && len(s.KVPerLayer) != c.Layers:
		return fmt.Errorf("synth: %d per-layer KV head counts for %d layers", len(s.KVPerLayer), c.Layers)
	}
	for l := range c.Layers {
		if kv := s.kv(l); kv < 1 || s.Heads%kv != 0 {
			return fmt.Errorf("synth: layer %d: %d heads are not a multiple of %d KV heads", l, s.Heads, kv)
		}
	}
	return nil
}

func (s *Shape) ropeDims() int {
	if s.Rot != 0 {
		return s.Rot
	}
	return s.HeadDim
}

// setDenseKeys sets the general and "{arch}.*" keys and the tokenizer's.
func setDenseKeys(w *gguf.Writer, c *Config) {
	s, a := &c.Shape, c.Shape.Arch+"."
	ropeBase, eps := s.RopeBase, s.Eps
	if ropeBase == 0 {
		ropeBase = 1e6
		if s.Arch == "llama" {
			ropeBase = 1e4
		}
	}
	if eps == 0 {
		eps = 1e-6
	}
	w.Set("general.architecture", s.Arch)
	w.Set("general.name", fmt.Sprintf("%s-shaped-random-%dL", s.Name, c.Layers))
	w.Set(a+"context_length", uint32(40960))
	w.Set(a+"embedding_length", uint32(s.Embd))
	w.Set(a+"block_count", uint32(c.Layers))
	w.Set(a+"feed_forward_length", uint32(s.FFN))
	w.Set(a+"attention.head_count", uint32(s.Heads))
	if s.KVPerLayer != nil {
		kv := make([]int32, len(s.KVPerLayer))
		for i, n := range s.KVPerLayer {
			kv[i] = int32(n)
		}
		w.Set(a+"attention.head_count_kv", kv)
	} else {
		w.Set(a+"attention.head_count_kv", uint32(s.KVHeads))
	}
	w.Set(a+"attention.key_length", uint32(s.HeadDim))
	w.Set(a+"attention.value_length", uint32(s.HeadDim))
	if s.Rot != 0 {
		w.Set(a+"rope.dimension_count", uint32(s.Rot))
	}
	w.Set(a+"rope.freq_base", ropeBase)
	w.Set(a+"attention.layer_norm_rms_epsilon", eps)
	for _, kv := range c.Vocab.KVs {
		w.Set(kv.Key, kv.Value.Interface())
	}
}

// denseWriter is a tensorWriter whose matrices share one σ-scaled pool and
// whose vectors walk the unscaled pool in turn.
type denseWriter struct {
	*tensorWriter
	pool []float32 // N(0, 0.03²) draws
	off  int       // the next vector value's index in pool
}

func newDenseWriter(c Config) *denseWriter {
	rng := rand.New(rand.NewPCG(1, 2+c.Seed))
	pool := make([]float32, 1<<20+4096)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64() * 0.03)
	}
	matPool := pool
	if s := c.Shape.Sigma; s != 0 && s != 0.03 {
		matPool = make([]float32, len(pool))
		for i, v := range pool {
			matPool[i] = v * float32(s/0.03)
		}
	}
	return &denseWriter{
		tensorWriter: &tensorWriter{w: gguf.NewWriter(), types: c.Types, pool: matPool, rows: map[[2]int]*rowSource{}, rng: rng},
		pool:         pool,
	}
}

// noise draws offset + scale·(the pool's next value).
func (t *denseWriter) noise(offset, scale float32) func() float64 {
	return func() float64 {
		v := offset + scale*t.pool[t.off]
		t.off = (t.off + 1) % len(t.pool)
		return float64(v)
	}
}

// divisor draws a rope_freqs value: 1 + 50·|noise|, never below 1.
func (t *denseWriter) divisor() float64 {
	return float64(1 + 50*float32(math.Abs(t.noise(0, 1)())))
}

// denseBlock adds block l's tensors in llama.cpp's order.
func (t *denseWriter) denseBlock(s *Shape, l int) {
	p := fmt.Sprintf("blk.%d.", l)
	e, nq, nkv := s.Embd, s.Heads*s.HeadDim, s.kv(l)*s.HeadDim
	norm := t.noise(1, 1)
	t.vec(p+"attn_norm.weight", norm, e)
	if s.FusedQKV {
		t.mat(l, "attn_qkv.weight", e, nq+2*nkv, 1)
	} else {
		t.mat(l, "attn_q.weight", e, nq, 1)
		t.mat(l, "attn_k.weight", e, nkv, 1)
		t.mat(l, "attn_v.weight", e, nkv, 1)
	}
	switch {
	case s.Arch == "qwen2" || s.Arch == "llama" && s.Biases:
		if s.FusedQKV {
			t.vec(p+"attn_qkv.bias", t.noise(0, 10), nq+2*nkv)
		} else {
			t.vec(p+"attn_q.bias", t.noise(0, 10), nq)
			t.vec(p+"attn_k.bias", t.noise(0, 10), nkv)
			t.vec(p+"attn_v.bias", t.noise(0, 10), nkv)
		}
	case s.Arch == "qwen3":
		t.vec(p+"attn_q_norm.weight", norm, s.HeadDim)
		t.vec(p+"attn_k_norm.weight", norm, s.HeadDim)
	}
	t.mat(l, "attn_output.weight", nq, e, 1)
	t.vec(p+"ffn_norm.weight", norm, e)
	t.mat(l, "ffn_gate.weight", e, s.FFN, 1)
	t.mat(l, "ffn_up.weight", e, s.FFN, 1)
	t.mat(l, "ffn_down.weight", s.FFN, e, 1)
	if s.Arch == "llama" && s.Biases {
		t.vec(p+"attn_output.bias", t.noise(0, 3), e)
		t.vec(p+"ffn_gate.bias", t.noise(0, 3), s.FFN)
		t.vec(p+"ffn_up.bias", t.noise(0, 3), s.FFN)
		t.vec(p+"ffn_down.bias", t.noise(0, 3), e)
	}
}

// rowSource hands out rows of one type and width: distinctRows rows cut
// from the pool and quantized once (quantizing every row of a 28-layer
// K-quant model in Go takes minutes), each handed out in turn rotated by a
// further whole block, which permutes its values and keeps it a valid row.
type rowSource struct {
	rows               []byte // (distinctRows, rowBytes)
	rowBytes, blkBytes int
	blocks             int
	i                  int // rows handed out so far
}

func newRowSource(typ kernels.Type, cols int, pool []float32) (*rowSource, error) {
	bs := typ.BlockSize()
	if bs == 0 || cols%bs != 0 {
		return nil, fmt.Errorf("%d columns are not whole %v blocks", cols, typ)
	}
	s := &rowSource{rowBytes: typ.RowBytes(cols), blkBytes: typ.BlockBytes(), blocks: cols / bs}
	s.rows = make([]byte, distinctRows*s.rowBytes)
	off := 0
	for r := range distinctRows {
		off = (off + 4099) % (len(pool) - cols)
		if err := kernels.Quantize(typ, pool[off:off+cols], s.rows[r*s.rowBytes:(r+1)*s.rowBytes]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// next fills dst (rowBytes) with the next row.
func (s *rowSource) next(dst []byte) {
	r, turn := s.i%distinctRows, s.i/distinctRows
	s.i++
	src := s.rows[r*s.rowBytes : (r+1)*s.rowBytes]
	k := turn % s.blocks * s.blkBytes
	n := copy(dst, src[k:])
	copy(dst[n:], src[:k])
}
