package engine

// Test fixtures: tiny random llama/qwen2/qwen3 GGUFs written by synth,
// and a plain float64 forward pass over their dequantized weights to
// compare the engine with.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/kernels"
)

// spec describes a tiny model.
type spec struct {
	arch                   string
	embd, layers, vocab    int
	heads, kvHeads, hd, ff int
	rot                    int          // rope.dimension_count; 0 = hd
	tied                   bool         // no output.weight
	biases                 bool         // q/k/v (+ llama's o/ffn) biases, qwen2's output.bias
	ropeFreqs              bool         // llama rope_freqs.weight
	wtype                  kernels.Type // matrices; the zero value is F32
	kvPerLayer             []int        // head_count_kv as a per-layer array (overrides kvHeads)
	fusedQKV               bool         // one attn_qkv tensor instead of attn_q/k/v
}

// kv is layer l's KV head count.
func (s spec) kv(l int) int {
	if s.kvPerLayer != nil {
		return s.kvPerLayer[l]
	}
	return s.kvHeads
}

// fixture is a written model and its weights in float32 as stored
// (dequantized), by tensor name; a fused attn_qkv is there as its parts.
type fixture struct {
	spec spec
	path string
	w    map[string][]float32
}

// spmVocab is a minimal SentencePiece vocabulary of n tokens: <unk>, <s>
// (BOS), </s> (EOS), then pieces with and without the ▁ space marker.
func spmVocab(n int) synth.Vocab {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3} // UNKNOWN, CONTROL, CONTROL
	letters := "abcdefghijklmnopqrstuvwxyz"
	for i := 0; len(tokens) < n; i++ {
		piece := string(letters[i%26])
		if i/26%2 == 0 {
			piece = "\u2581" + piece
		}
		if i >= 52 {
			piece += string(letters[(i/52)%26])
		}
		tokens = append(tokens, piece)
		types = append(types, 1)
	}
	scores := make([]float32, n)
	for i := range scores {
		scores[i] = -float32(i)
	}
	v := synth.Vocab{Size: n}
	for _, kv := range []struct {
		key string
		val any
	}{
		{"tokenizer.ggml.model", "llama"}, {"tokenizer.ggml.tokens", tokens}, {"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types}, {"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)}, {"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.add_bos_token", true},
	} {
		val, err := gguf.ValueOf(kv.val)
		if err != nil {
			panic(err)
		}
		v.KVs = append(v.KVs, gguf.KV{Key: kv.key, Value: val})
	}
	return v
}

// build writes a random model of spec s into t.TempDir() with synth and
// reads its weights back.
func build(t testing.TB, s spec, seed uint64) *fixture {
	t.Helper()
	if s.rot == 0 {
		s.rot = s.hd
	}
	// σ 1/√(3·n_embd): the spread of uniform(±1/√n_embd), the usual init.
	shape := synth.Shape{Name: "test", Arch: s.arch, Embd: s.embd, Heads: s.heads, KVHeads: s.kvHeads, HeadDim: s.hd,
		FFN: s.ff, Layers: s.layers, Untied: !s.tied, Sigma: 1 / math.Sqrt(3*float64(s.embd)), Rot: s.rot, KVPerLayer: s.kvPerLayer,
		Biases: s.biases, RopeFreqs: s.ropeFreqs, FusedQKV: s.fusedQKV, RopeBase: 10000, Eps: 1e-5}
	fx := &fixture{spec: s, path: filepath.Join(t.TempDir(), s.arch+".gguf"), w: map[string][]float32{}}
	err := synth.Write(fx.path, synth.Config{Shape: shape, Layers: s.layers, Types: synth.AllOf(s.wtype), Vocab: spmVocab(s.vocab), Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors {
		v := make([]float32, ti.Elements())
		if err := kernels.Dequantize(ti.Type, f.TensorData(&ti), v); err != nil {
			t.Fatalf("%s: %v", ti.Name, err)
		}
		fx.w[ti.Name] = v
	}
	// A fused projection's rows are [Q | K | V]: the reference reads the parts.
	for l := range s.layers {
		p, nq, nkv := fmt.Sprintf("blk.%d.", l), s.heads*s.hd, s.kv(l)*s.hd
		for _, kind := range []string{"weight", "bias"} {
			qkv, ok := fx.w[p+"attn_qkv."+kind]
			if !ok {
				continue
			}
			w := len(qkv) / (nq + 2*nkv) // row width: 1 for the bias
			fx.w[p+"attn_q."+kind] = qkv[:nq*w]
			fx.w[p+"attn_k."+kind] = qkv[nq*w : (nq+nkv)*w]
			fx.w[p+"attn_v."+kind] = qkv[(nq+nkv)*w:]
		}
	}
	return fx
}

// reference computes the logits of every position of tokens (starting at
// position 0) in float64 from the fixture's weights: (len(tokens), vocab).
func (fx *fixture) reference(tokens []int32) [][]float64 {
	s, W := fx.spec, fx.w
	n, e, hd := len(tokens), s.embd, s.hd
	nq := s.heads * hd
	get := func(name string) []float64 {
		v, ok := W[name]
		if !ok {
			return nil
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	matvec := func(w, b []float64, x []float64, rows int) []float64 {
		cols := len(x)
		y := make([]float64, rows)
		for r := range rows {
			var acc float64
			for c, xv := range x {
				acc += w[r*cols+c] * xv
			}
			if b != nil {
				acc += b[r]
			}
			y[r] = acc
		}
		return y
	}
	rms := func(x, w []float64) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		sc := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = v * sc * w[i]
		}
		return y
	}
	// The rotation angles follow the spec's definition: the f32 running
	// product theta *= base^(-2/n_rot), divided by rope_freqs.
	ff := get("rope_freqs.weight")
	angle := func(pos, i int) float64 {
		ts := float32(math.Pow(10000, float64(-2/float32(s.rot))))
		th := float32(pos)
		for range i {
			th *= ts
		}
		a := float64(th)
		if ff != nil {
			a = float64(th / float32(ff[i]))
		}
		return a
	}
	neox := s.arch != "llama"
	rope := func(v []float64, pos int) {
		half := s.rot / 2
		for i := range half {
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			c, sn := math.Cos(angle(pos, i)), math.Sin(angle(pos, i))
			x0, x1 := v[a], v[b]
			v[a], v[b] = x0*c-x1*sn, x0*sn+x1*c
		}
	}

	emb := get("token_embd.weight")
	x := make([][]float64, n)
	for t, id := range tokens {
		x[t] = append([]float64(nil), emb[int(id)*e:(int(id)+1)*e]...)
	}
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		kvHeads := s.kv(l)
		nkv := kvHeads * hd
		K, V := make([][]float64, n), make([][]float64, n)
		Q := make([][]float64, n)
		for t := range n {
			xn := rms(x[t], get(p+"attn_norm.weight"))
			Q[t] = matvec(get(p+"attn_q.weight"), get(p+"attn_q.bias"), xn, nq)
			K[t] = matvec(get(p+"attn_k.weight"), get(p+"attn_k.bias"), xn, nkv)
			V[t] = matvec(get(p+"attn_v.weight"), get(p+"attn_v.bias"), xn, nkv)
			for h := range s.heads {
				q := Q[t][h*hd : (h+1)*hd]
				if qn := get(p + "attn_q_norm.weight"); qn != nil {
					copy(q, rms(q, qn))
				}
				rope(q, t)
			}
			for g := range kvHeads {
				k := K[t][g*hd : (g+1)*hd]
				if kn := get(p + "attn_k_norm.weight"); kn != nil {
					copy(k, rms(k, kn))
				}
				rope(k, t)
			}
		}
		att := causalAttention64(Q, K, V, s.heads, kvHeads, hd, 1/math.Sqrt(float64(hd)))
		for t := range n {
			o := matvec(get(p+"attn_output.weight"), get(p+"attn_output.bias"), att[t], e)
			for i := range x[t] {
				x[t][i] += o[i]
			}
			xn := rms(x[t], get(p+"ffn_norm.weight"))
			gt := matvec(get(p+"ffn_gate.weight"), get(p+"ffn_gate.bias"), xn, s.ff)
			up := matvec(get(p+"ffn_up.weight"), get(p+"ffn_up.bias"), xn, s.ff)
			for i := range gt {
				gt[i] = gt[i] / (1 + math.Exp(-gt[i])) * up[i]
			}
			d := matvec(get(p+"ffn_down.weight"), get(p+"ffn_down.bias"), gt, e)
			for i := range x[t] {
				x[t][i] += d[i]
			}
		}
	}
	out := get("output.weight")
	if out == nil {
		out = emb
	}
	logits := make([][]float64, n)
	for t := range n {
		logits[t] = matvec(out, get("output.bias"), rms(x[t], get("output_norm.weight")), s.vocab)
	}
	return logits
}

// engineLogits prefills tokens and returns the logits of every position.
func engineLogits(t testing.TB, m *Model, tokens []int32) [][]float32 {
	t.Helper()
	v := m.hp.nVocab
	var out [][]float32
	err := m.Prefill(t.Context(), tokens, 0, func(pos int, hidden []float32, n int) error {
		if pos != len(out) {
			return fmt.Errorf("emit at position %d, want %d", pos, len(out))
		}
		for r := 0; r < n; r += HeadRows {
			k := min(HeadRows, n-r)
			lg := m.logitsOf(hidden[r*m.hp.nEmbd:], k)
			for i := range k {
				out = append(out, append([]float32(nil), lg[i*v:(i+1)*v]...))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(tokens) {
		t.Fatalf("got %d rows of logits for %d tokens", len(out), len(tokens))
	}
	return out
}

// relErr is max_i |a_i − b_i| / max_i |b_i| for one row.
func relErr[A, B float32 | float64](a []A, b []B) float64 {
	var diff, scale float64
	for i := range b {
		diff = max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = max(scale, math.Abs(float64(b[i])))
	}
	return diff / max(scale, 1e-30)
}

// randomTokens draws n ids in [0, vocab) with BOS first.
func randomTokens(n, vocab int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 11))
	ids := make([]int32, n)
	ids[0] = 1
	for i := 1; i < n; i++ {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// editor changes a GGUF's metadata and tensor index before it is rewritten.
type editor struct {
	kvs     []gguf.KV
	tensors []gguf.TensorInfo
	from    map[string]string // renamed tensor → its name in the original
}

func (e *editor) renameTensor(old, name string) {
	for i := range e.tensors {
		if e.tensors[i].Name == old {
			e.tensors[i].Name = name
			if e.from == nil {
				e.from = map[string]string{}
			}
			e.from[name] = old
		}
	}
}

func (e *editor) dropKey(key string) {
	for i, kv := range e.kvs {
		if kv.Key == key {
			e.kvs = append(e.kvs[:i], e.kvs[i+1:]...)
			return
		}
	}
}

func (e *editor) setKey(key string, v any) {
	val, err := gguf.ValueOf(v)
	if err != nil {
		panic(err)
	}
	for i := range e.kvs {
		if e.kvs[i].Key == key {
			e.kvs[i].Value = val
			return
		}
	}
	e.kvs = append(e.kvs, gguf.KV{Key: key, Value: val})
}

func (e *editor) dropTensor(name string) {
	for i, ti := range e.tensors {
		if ti.Name == name {
			e.tensors = append(e.tensors[:i], e.tensors[i+1:]...)
			return
		}
	}
}

func (e *editor) reshape(name string, dims ...int64) {
	for i := range e.tensors {
		if e.tensors[i].Name == name {
			e.tensors[i].Dims = dims
		}
	}
}

// rewrite copies the GGUF at path with edit applied to a new temp file.
func rewrite(t testing.TB, path string, edit func(*editor)) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := &editor{kvs: append([]gguf.KV(nil), f.KVs...), tensors: append([]gguf.TensorInfo(nil), f.Tensors...)}
	edit(e)
	w := gguf.NewWriter()
	for _, kv := range e.kvs {
		w.Set(kv.Key, kv.Value)
	}
	for i := range e.tensors {
		ti := &e.tensors[i]
		src := ti.Name
		if old, ok := e.from[src]; ok {
			src = old
		}
		orig, _ := f.Tensor(src)
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(orig)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "edited.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
