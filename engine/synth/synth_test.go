package synth_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"plexbench/engine"
	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/engine/tokenizer"
	"plexbench/kernels"
)

const qwen3Vocab = "../../../shared/data/vocab/qwen3-vocab.gguf"

// TestWriteLoads writes a 2-layer model in each mix with a small
// placeholder vocabulary, checks the tensor types the mix asked for, and
// runs a prefill through engine.Load's model.
func TestWriteLoads(t *testing.T) {
	const layers, vocab = 2, 64
	for _, name := range []string{"f16", "q8_0", "q4_k_m"} {
		t.Run(name, func(t *testing.T) {
			types, err := synth.Mix(name, layers)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), name+".gguf")
			if err := synth.Write(path, synth.Config{Layers: layers, Types: types, Vocab: synth.PlaceholderVocab(vocab)}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if got, want := len(f.Tensors), 2+layers*11; got != want {
				t.Errorf("%d tensors, want %d", got, want)
			}
			for _, c := range []struct {
				tensor string
				layer  int
				name   string
			}{{"token_embd.weight", -1, "token_embd.weight"}, {"blk.1.attn_v.weight", 1, "attn_v.weight"}, {"blk.0.ffn_up.weight", 0, "ffn_up.weight"}} {
				ti, ok := f.Tensor(c.tensor)
				if !ok {
					t.Fatalf("no %s", c.tensor)
				}
				if want := types(c.layer, c.name); ti.Type != want {
					t.Errorf("%s is %v, want %v", c.tensor, ti.Type, want)
				}
			}
			if ti, _ := f.Tensor("token_embd.weight"); !slices.Equal(ti.Dims, []int64{synth.Embd, vocab}) {
				t.Errorf("token_embd dims %v", ti.Dims)
			}
			// Rows are reused rotated, never repeated back to back.
			ti, _ := f.Tensor("blk.0.attn_q.weight")
			data, rb := f.TensorData(ti), ti.Type.RowBytes(synth.Embd)
			if bytes.Equal(data[:rb], data[rb:2*rb]) {
				t.Error("attn_q rows 0 and 1 are equal")
			}

			m, err := engine.Load(path, engine.Options{KVType: kernels.F16, KVLen: 16, Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.Info().VocabSize; got != vocab {
				t.Errorf("vocab %d, want %d", got, vocab)
			}
			tokens := []int32{1, 5, 9, 3, 60, 7, 2, 11}
			rows := 0
			err = m.Prefill(t.Context(), tokens, 0, func(_ int, _ []float32, n int) error { rows += n; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if rows != len(tokens) {
				t.Errorf("prefill emitted %d rows, want %d", rows, len(tokens))
			}
		})
	}
}

// TestRealVocab checks that a model written with Qwen3's vocabulary file
// tokenizes text as that file does.
func TestRealVocab(t *testing.T) {
	if _, err := os.Stat(qwen3Vocab); err != nil {
		t.Skipf("no Qwen3 vocabulary (%v)", err)
	}
	v, err := synth.LoadVocab(qwen3Vocab)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size != 151936 {
		t.Errorf("vocab size %d, want 151936", v.Size)
	}
	path := filepath.Join(t.TempDir(), "q8.gguf")
	if err := synth.Write(path, synth.Config{Layers: 1, Types: synth.AllOf(kernels.Q8_0), Vocab: v}); err != nil {
		t.Fatal(err)
	}
	m, err := engine.Load(path, engine.Options{KVType: kernels.F16, KVLen: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	vf, err := gguf.Open(qwen3Vocab)
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	want, err := tokenizer.FromGGUF(vf)
	if err != nil {
		t.Fatal(err)
	}
	const text = " = Valkyria Chronicles III = \n\n Senjō no Valkyria 3 : Unrecorded Chronicles ( Japanese : 戦場のヴァルキュリア3 )"
	got, err := m.Tokenize(text)
	if err != nil {
		t.Fatal(err)
	}
	if w := want.Encode(text, true, false); len(w) < 10 || !slices.Equal(got, w) {
		t.Errorf("tokens %v, want %v", got, w)
	}
}

// TestShape8B writes one Qwen3-8B-shaped layer in the untied Q4_K_M mix
// (a 64-token vocabulary keeps the file ~100 MB; a whole 8B model is the
// device check's to write) and checks its header: the keys and every
// matrix's dims and type.
func TestShape8B(t *testing.T) {
	if testing.Short() {
		t.Skip("writes ~100 MB")
	}
	s, err := synth.ShapeOf("qwen3-8b")
	if err != nil {
		t.Fatal(err)
	}
	const vocab = 64
	path := filepath.Join(t.TempDir(), "8b.gguf")
	types := synth.Q4KMOf(s.Layers, true)
	if err := synth.Write(path, synth.Config{Shape: s, Layers: 1, Types: types, Vocab: synth.PlaceholderVocab(vocab)}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for key, want := range map[string]uint64{"qwen3.embedding_length": 4096, "qwen3.block_count": 1, "qwen3.feed_forward_length": 12288,
		"qwen3.attention.head_count": 32, "qwen3.attention.head_count_kv": 8, "qwen3.attention.key_length": 128,
		"qwen3.attention.value_length": 128} {
		if got, ok := f.Uint(key); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", key, got, ok, want)
		}
	}
	for _, c := range []struct {
		name string
		dims []int64
		typ  kernels.Type
	}{
		{"token_embd.weight", []int64{4096, vocab}, kernels.Q4_K},
		{"output.weight", []int64{4096, vocab}, kernels.Q6_K},
		{"blk.0.attn_q.weight", []int64{4096, 4096}, kernels.Q4_K},
		{"blk.0.attn_k.weight", []int64{4096, 1024}, kernels.Q4_K},
		{"blk.0.attn_v.weight", []int64{4096, 1024}, kernels.Q6_K}, // use_more_bits(0, 36)
		{"blk.0.attn_output.weight", []int64{4096, 4096}, kernels.Q4_K},
		{"blk.0.attn_q_norm.weight", []int64{128}, kernels.F32},
		{"blk.0.ffn_gate.weight", []int64{4096, 12288}, kernels.Q4_K},
		{"blk.0.ffn_up.weight", []int64{4096, 12288}, kernels.Q4_K},
		{"blk.0.ffn_down.weight", []int64{12288, 4096}, kernels.Q6_K},
	} {
		ti, ok := f.Tensor(c.name)
		if !ok {
			t.Errorf("no %s", c.name)
			continue
		}
		if !slices.Equal(ti.Dims, c.dims) || ti.Type != c.typ {
			t.Errorf("%s: %v %v, want %v %v", c.name, ti.Type, ti.Dims, c.typ, c.dims)
		}
	}
	if got, want := len(f.Tensors), 3+11; got != want {
		t.Errorf("%d tensors, want %d", got, want)
	}
}

// TestTinyShapes writes each tiny dense shape in F32 and Q8_0, checks the
// tensors its architecture has (qwen2's biases, qwen3's q/k norms) and
// runs a prefill through engine.Load's model.
func TestTinyShapes(t *testing.T) {
	for _, name := range []string{"llama-tiny", "qwen2-tiny", "qwen3-tiny"} {
		s, err := synth.ShapeOf(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []kernels.Type{kernels.F32, kernels.Q8_0} {
			path := filepath.Join(t.TempDir(), name+".gguf")
			if err := synth.Write(path, synth.Config{Shape: s, Layers: s.Layers, Types: synth.AllOf(typ), Vocab: synth.PlaceholderVocab(64)}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			_, bias := f.Tensor("blk.1.attn_k.bias")
			_, qnorm := f.Tensor("blk.1.attn_q_norm.weight")
			ti, _ := f.Tensor("blk.0.ffn_down.weight")
			if f.Architecture() != s.Arch || bias != (s.Arch == "qwen2") || qnorm != (s.Arch == "qwen3") ||
				ti == nil || ti.Type != typ || !slices.Equal(ti.Dims, []int64{160, 64}) {
				t.Errorf("%s %v: arch %q, bias %v, q norm %v, ffn_down %+v", name, typ, f.Architecture(), bias, qnorm, ti)
			}
			f.Close()
			m, err := engine.Load(path, engine.Options{KVType: kernels.F32, KVLen: 16, Threads: 1})
			if err != nil {
				t.Fatalf("%s %v: %v", name, typ, err)
			}
			rows := 0
			err = m.Prefill(t.Context(), []int32{1, 5, 9, 3, 60, 7}, 0, func(_ int, _ []float32, n int) error { rows += n; return nil })
			m.Close()
			if err != nil || rows != 6 {
				t.Errorf("%s %v: prefill: %v, %d rows", name, typ, err, rows)
			}
		}
	}
}
