// Package synth writes random models with the shapes of real ones, for
// benchmarks that need a model's cost but not its weights: Qwen3-0.6B
// (hidden 1024, 16/8 heads of 128, FFN 3072, tied embedding), Qwen3-8B
// (hidden 4096, 32/8 heads of 128, FFN 12288, its own output matrix) and
// tiny llama, qwen2 and qwen3 shapes for device checks (see Shapes), with
// any depth, any matrix types, and either a real tokenizer or a
// placeholder vocabulary of any size.
package synth

import (
	"encoding/binary"
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
// Qwen3-0.6B's.
type Shape struct {
	Name                    string // general.name's stem, e.g. "qwen3-8b"
	Arch                    string // "llama", "qwen2" (q/k/v biases) or "qwen3" (q/k norms)
	Embd                    int
	Heads, KVHeads, HeadDim int
	FFN                     int
	Layers                  int     // the real model's depth
	Untied                  bool    // an output.weight of its own, not the tied embedding
	Sigma                   float64 // the matrices' σ (0: 0.03)
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
// engines means something; qwen2's biases are that noise × 10.
func Write(path string, c Config) error {
	s := c.Shape
	if s == (Shape{}) {
		s = qwen3_06B
	}
	switch {
	case c.Layers < 1:
		return fmt.Errorf("synth: %d layers", c.Layers)
	case c.Vocab.Size < 1:
		return fmt.Errorf("synth: empty vocabulary")
	case s.Arch != "llama" && s.Arch != "qwen2" && s.Arch != "qwen3":
		return fmt.Errorf("synth: architecture %q (want llama, qwen2 or qwen3)", s.Arch)
	case s.Embd < 1 || s.Heads < 1 || s.KVHeads < 1 || s.HeadDim < 1 || s.FFN < 1 || s.Heads%s.KVHeads != 0:
		return fmt.Errorf("synth: shape %+v", s)
	}
	if c.Types == nil {
		c.Types = AllOf(kernels.F16)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]float32, 1<<20+4096)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64() * 0.03)
	}
	matPool := pool
	if s.Sigma != 0 && s.Sigma != 0.03 {
		matPool = make([]float32, len(pool))
		for i, v := range pool {
			matPool[i] = v * float32(s.Sigma/0.03)
		}
	}

	w := gguf.NewWriter()
	a := s.Arch + "."
	ropeBase := float32(1e6)
	if s.Arch == "llama" {
		ropeBase = 1e4
	}
	w.Set("general.architecture", s.Arch)
	w.Set("general.name", fmt.Sprintf("%s-shaped-random-%dL", s.Name, c.Layers))
	w.Set(a+"context_length", uint32(40960))
	w.Set(a+"embedding_length", uint32(s.Embd))
	w.Set(a+"block_count", uint32(c.Layers))
	w.Set(a+"feed_forward_length", uint32(s.FFN))
	w.Set(a+"attention.head_count", uint32(s.Heads))
	w.Set(a+"attention.head_count_kv", uint32(s.KVHeads))
	w.Set(a+"attention.key_length", uint32(s.HeadDim))
	w.Set(a+"attention.value_length", uint32(s.HeadDim))
	w.Set(a+"rope.freq_base", ropeBase)
	w.Set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	for _, kv := range c.Vocab.KVs {
		w.Set(kv.Key, kv.Value.Interface())
	}

	rows := map[[2]int]*rowSource{}
	var err error
	add := func(name string, typ kernels.Type, cols, n int) {
		if err != nil {
			return
		}
		key := [2]int{int(typ), cols}
		src := rows[key]
		if src == nil {
			if src, err = newRowSource(typ, cols, matPool); err != nil {
				err = fmt.Errorf("synth: tensor %q: %w", name, err)
				return
			}
			rows[key] = src
		}
		data := make([]byte, src.rowBytes*n)
		for r := range n {
			src.next(data[r*src.rowBytes : (r+1)*src.rowBytes])
		}
		dims := []int64{int64(cols), int64(n)}
		if n == 1 {
			dims = dims[:1]
		}
		err = w.AddTensor(name, typ, dims, data)
	}
	normOff := 0
	vec := func(name string, n int, offset, scale float32) {
		if err != nil {
			return
		}
		data := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(offset+scale*pool[normOff]))
			normOff = (normOff + 1) % len(pool)
		}
		err = w.AddTensor(name, kernels.F32, []int64{int64(n)}, data)
	}
	norm := func(name string, n int) { vec(name, n, 1, 1) }

	e, nq, nkv := s.Embd, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	add("token_embd.weight", c.Types(-1, "token_embd.weight"), e, c.Vocab.Size)
	norm("output_norm.weight", e)
	if s.Untied {
		add("output.weight", c.Types(-1, "output.weight"), e, c.Vocab.Size)
	}
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		mat := func(name string, cols, n int) { add(p+name, c.Types(l, name), cols, n) }
		norm(p+"attn_norm.weight", e)
		mat("attn_q.weight", e, nq)
		mat("attn_k.weight", e, nkv)
		mat("attn_v.weight", e, nkv)
		switch s.Arch {
		case "qwen2":
			vec(p+"attn_q.bias", nq, 0, 10)
			vec(p+"attn_k.bias", nkv, 0, 10)
			vec(p+"attn_v.bias", nkv, 0, 10)
		case "qwen3":
			norm(p+"attn_q_norm.weight", s.HeadDim)
			norm(p+"attn_k_norm.weight", s.HeadDim)
		}
		mat("attn_output.weight", nq, e)
		norm(p+"ffn_norm.weight", e)
		mat("ffn_gate.weight", e, s.FFN)
		mat("ffn_up.weight", e, s.FFN)
		mat("ffn_down.weight", s.FFN, e)
	}
	if err != nil {
		return err
	}
	if err := w.WriteFile(path); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
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
