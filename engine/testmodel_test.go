package engine

// Test fixtures: tiny random llama/qwen2/qwen3 GGUFs written with the
// project's writer, and a plain float64 forward pass over their
// dequantized weights to compare the engine with.

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"plexbench/engine/gguf"
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
	ctxTrain               int
	kvPerLayer             []int // head_count_kv as a per-layer array (overrides kvHeads)
	fusedQKV               bool  // one attn_qkv tensor instead of attn_q/k/v
}

// kv is layer l's KV head count.
func (s spec) kv(l int) int {
	if s.kvPerLayer != nil {
		return s.kvPerLayer[l]
	}
	return s.kvHeads
}

// fixture is a written model and its weights in float32 as stored
// (dequantized), by tensor name.
type fixture struct {
	spec spec
	path string
	w    map[string][]float32
}

// spmVocab is a minimal SentencePiece vocabulary of n tokens: <unk>, <s>,
// </s>, then pieces with and without the ▁ space marker.
func spmVocab(n int) (tokens []string, scores []float32, types []int32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{2, 3, 3} // UNKNOWN, CONTROL, CONTROL
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
	scores = make([]float32, n)
	for i := range scores {
		scores[i] = -float32(i)
	}
	return tokens, scores, types
}

// setSPMTokenizer sets a llama (SentencePiece) tokenizer with spmVocab's
// layout: BOS 1, EOS 2.
func setSPMTokenizer(w *gguf.Writer, tokens []string, scores []float32, types []int32) {
	w.Set("tokenizer.ggml.model", "llama")
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.scores", scores)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.bos_token_id", uint32(1))
	w.Set("tokenizer.ggml.eos_token_id", uint32(2))
}

// build writes a random model of spec s into t.TempDir().
func build(t testing.TB, s spec, seed uint64) *fixture {
	t.Helper()
	if s.rot == 0 {
		s.rot = s.hd
	}
	if s.ctxTrain == 0 {
		s.ctxTrain = 256
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	fx := &fixture{spec: s, w: map[string][]float32{}}
	w := gguf.NewWriter()
	a := s.arch + "."
	w.Set("general.architecture", s.arch)
	w.Set(a+"context_length", uint32(s.ctxTrain))
	w.Set(a+"embedding_length", uint32(s.embd))
	w.Set(a+"block_count", uint32(s.layers))
	w.Set(a+"feed_forward_length", uint32(s.ff))
	w.Set(a+"attention.head_count", uint32(s.heads))
	if s.kvPerLayer != nil {
		arr := make([]int32, len(s.kvPerLayer))
		for i, v := range s.kvPerLayer {
			arr[i] = int32(v)
		}
		w.Set(a+"attention.head_count_kv", arr)
	} else {
		w.Set(a+"attention.head_count_kv", uint32(s.kvHeads))
	}
	w.Set(a+"attention.key_length", uint32(s.hd))
	w.Set(a+"attention.value_length", uint32(s.hd))
	w.Set(a+"rope.dimension_count", uint32(s.rot))
	w.Set(a+"rope.freq_base", float32(10000))
	w.Set(a+"attention.layer_norm_rms_epsilon", float32(1e-5))
	toks, scores, types := spmVocab(s.vocab)
	setSPMTokenizer(w, toks, scores, types)
	w.Set("tokenizer.ggml.unknown_token_id", uint32(0))
	w.Set("tokenizer.ggml.add_bos_token", true)

	// draw makes a tensor of ggml shape {cols, rows} with values from gen
	// in type typ and records the stored (dequantized) values under name.
	draw := func(name string, typ kernels.Type, cols, rows int, gen func() float32) []byte {
		vals := make([]float32, cols*rows)
		for i := range vals {
			vals[i] = gen()
		}
		data := make([]byte, typ.RowBytes(cols)*rows)
		if err := kernels.Quantize(typ, vals, data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := kernels.Dequantize(typ, data, vals); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fx.w[name] = vals
		return data
	}
	put := func(name string, typ kernels.Type, cols, rows int, data []byte) {
		dims := []int64{int64(cols), int64(rows)}
		if rows == 1 {
			dims = dims[:1]
		}
		if err := w.AddTensor(name, typ, dims, data); err != nil {
			t.Fatal(err)
		}
	}
	add := func(name string, typ kernels.Type, cols, rows int, gen func() float32) {
		put(name, typ, cols, rows, draw(name, typ, cols, rows, gen))
	}
	uniform := func(scale float64) func() float32 {
		return func() float32 { return float32((2*rng.Float64() - 1) * scale) }
	}
	norm := func() float32 { return float32(0.8 + 0.4*rng.Float64()) }
	mat := func(name string, cols, rows int) { add(name, s.wtype, cols, rows, uniform(1/math.Sqrt(float64(cols)))) }
	matData := func(name string, cols, rows int) []byte {
		return draw(name, s.wtype, cols, rows, uniform(1/math.Sqrt(float64(cols))))
	}
	vec := func(name string, n int, gen func() float32) { add(name, kernels.F32, n, 1, gen) }

	nq := s.heads * s.hd
	mat("token_embd.weight", s.embd, s.vocab)
	vec("output_norm.weight", s.embd, norm)
	if !s.tied {
		mat("output.weight", s.embd, s.vocab)
	}
	if s.arch == "qwen2" && s.biases {
		vec("output.bias", s.vocab, uniform(0.5))
	}
	if s.arch == "llama" && s.ropeFreqs {
		vec("rope_freqs.weight", s.rot/2, func() float32 { return float32(1 + 3*rng.Float64()) })
	}
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		nkv := s.kv(l) * s.hd
		vec(p+"attn_norm.weight", s.embd, norm)
		if s.fusedQKV {
			// Draw the three projections, then store them as one matrix
			// whose rows are [Q | K | V]; the reference reads the parts.
			data := matData(p+"attn_q.weight", s.embd, nq)
			data = append(data, matData(p+"attn_k.weight", s.embd, nkv)...)
			data = append(data, matData(p+"attn_v.weight", s.embd, nkv)...)
			put(p+"attn_qkv.weight", s.wtype, s.embd, nq+2*nkv, data)
		} else {
			mat(p+"attn_q.weight", s.embd, nq)
			mat(p+"attn_k.weight", s.embd, nkv)
			mat(p+"attn_v.weight", s.embd, nkv)
		}
		switch {
		case s.biases && s.fusedQKV:
			data := draw(p+"attn_q.bias", kernels.F32, nq, 1, uniform(0.3))
			data = append(data, draw(p+"attn_k.bias", kernels.F32, nkv, 1, uniform(0.3))...)
			data = append(data, draw(p+"attn_v.bias", kernels.F32, nkv, 1, uniform(0.3))...)
			put(p+"attn_qkv.bias", kernels.F32, nq+2*nkv, 1, data)
		case s.biases:
			vec(p+"attn_q.bias", nq, uniform(0.3))
			vec(p+"attn_k.bias", nkv, uniform(0.3))
			vec(p+"attn_v.bias", nkv, uniform(0.3))
		}
		if s.arch == "qwen3" {
			vec(p+"attn_q_norm.weight", s.hd, norm)
			vec(p+"attn_k_norm.weight", s.hd, norm)
		}
		mat(p+"attn_output.weight", nq, s.embd)
		vec(p+"ffn_norm.weight", s.embd, norm)
		mat(p+"ffn_gate.weight", s.embd, s.ff)
		mat(p+"ffn_up.weight", s.embd, s.ff)
		mat(p+"ffn_down.weight", s.ff, s.embd)
		if s.arch == "llama" && s.biases {
			vec(p+"attn_output.bias", s.embd, uniform(0.1))
			vec(p+"ffn_gate.bias", s.ff, uniform(0.1))
			vec(p+"ffn_up.bias", s.ff, uniform(0.1))
			vec(p+"ffn_down.bias", s.embd, uniform(0.1))
		}
	}
	fx.path = filepath.Join(t.TempDir(), s.arch+".gguf")
	if err := w.WriteFile(fx.path); err != nil {
		t.Fatal(err)
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
