// Package synth writes random models with the shapes of real ones, for
// benchmarks that need a model's cost but not its weights: today
// Qwen3-0.6B (hidden 1024, 16/8 heads of 128, FFN 3072, tied embedding),
// with any depth, any matrix types, and either Qwen3's real tokenizer or a
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

// Config says what Write builds.
type Config struct {
	Layers int // transformer blocks
	// Types gives each matrix's type by layer (−1 for token_embd.weight)
	// and name within the layer ("attn_q.weight"); norms are always F32.
	// Nil stores every matrix as F16.
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

// Q4KM is llama.cpp's Q4_K_M mix for a model of n layers: Q4_K, with Q6_K
// for the tied embedding (it is the output matrix) and for attn_v and
// ffn_down on the layers use_more_bits(i, n) picks (the first and last
// eighth, and every third in between).
func Q4KM(n int) func(int, string) kernels.Type {
	return func(layer int, name string) kernels.Type {
		moreBits := layer < n/8 || layer >= 7*n/8 || (layer-n/8)%3 == 2
		switch {
		case layer < 0:
			return kernels.Q6_K
		case moreBits && (name == "attn_v.weight" || name == "ffn_down.weight"):
			return kernels.Q6_K
		}
		return kernels.Q4_K
	}
}

// Mix returns the Types for a llama.cpp file-type name: "f16", "q8_0" or
// "q4_k_m", for a model of n layers.
func Mix(name string, n int) (func(int, string) kernels.Type, error) {
	switch strings.ToLower(name) {
	case "f16":
		return AllOf(kernels.F16), nil
	case "q8_0":
		return AllOf(kernels.Q8_0), nil
	case "q4_k_m":
		return Q4KM(n), nil
	}
	return nil, fmt.Errorf("synth: unknown type %q (want f16, q8_0 or q4_k_m)", name)
}

// distinctRows is how many rows each (type, width) pair quantizes; the
// rest of a matrix reuses them, rotated by whole blocks.
const distinctRows = 256

// Write writes the model c describes to path. Weights are drawn once from
// a seeded normal pool (σ 0.03), so equal configs give equal files. Norm
// weights are 1 + that noise, as trained models' are near 1, so logits
// spread and a perplexity comparison between engines means something.
func Write(path string, c Config) error {
	if c.Layers < 1 {
		return fmt.Errorf("synth: %d layers", c.Layers)
	}
	if c.Vocab.Size < 1 {
		return fmt.Errorf("synth: empty vocabulary")
	}
	if c.Types == nil {
		c.Types = AllOf(kernels.F16)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]float32, 1<<20+4096)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64() * 0.03)
	}

	w := gguf.NewWriter()
	w.Set("general.architecture", "qwen3")
	w.Set("general.name", fmt.Sprintf("qwen3-0.6b-shaped-random-%dL", c.Layers))
	w.Set("qwen3.context_length", uint32(40960))
	w.Set("qwen3.embedding_length", uint32(Embd))
	w.Set("qwen3.block_count", uint32(c.Layers))
	w.Set("qwen3.feed_forward_length", uint32(FFN))
	w.Set("qwen3.attention.head_count", uint32(Heads))
	w.Set("qwen3.attention.head_count_kv", uint32(KVHeads))
	w.Set("qwen3.attention.key_length", uint32(HeadDim))
	w.Set("qwen3.attention.value_length", uint32(HeadDim))
	w.Set("qwen3.rope.freq_base", float32(1e6))
	w.Set("qwen3.attention.layer_norm_rms_epsilon", float32(1e-6))
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
			if src, err = newRowSource(typ, cols, pool); err != nil {
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
	norm := func(name string, n int) {
		if err != nil {
			return
		}
		data := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1+pool[normOff]))
			normOff = (normOff + 1) % len(pool)
		}
		err = w.AddTensor(name, kernels.F32, []int64{int64(n)}, data)
	}

	add("token_embd.weight", c.Types(-1, "token_embd.weight"), Embd, c.Vocab.Size)
	norm("output_norm.weight", Embd)
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		mat := func(name string, cols, n int) { add(p+name, c.Types(l, name), cols, n) }
		norm(p+"attn_norm.weight", Embd)
		mat("attn_q.weight", Embd, Heads*HeadDim)
		mat("attn_k.weight", Embd, KVHeads*HeadDim)
		mat("attn_v.weight", Embd, KVHeads*HeadDim)
		norm(p+"attn_q_norm.weight", HeadDim)
		norm(p+"attn_k_norm.weight", HeadDim)
		mat("attn_output.weight", Heads*HeadDim, Embd)
		norm(p+"ffn_norm.weight", Embd)
		mat("ffn_gate.weight", Embd, FFN)
		mat("ffn_up.weight", Embd, FFN)
		mat("ffn_down.weight", FFN, Embd)
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
