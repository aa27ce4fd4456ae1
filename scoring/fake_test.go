package scoring

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"plexbench/kernels"
)

// fakeEngine is a deterministic stand-in for engine.Model: the hidden row
// at a position is a seeded function of the window's token prefix and the
// position, and the LM head is a fixed random V×H matrix (perturbed by
// noise for a "quantized" variant).
type fakeEngine struct {
	v, h   int
	addBOS bool
	bos    int32
	ubatch int // rows per prefill pass
	kv     int
	w      []float32 // (v, h) head weights
	scale  float32

	// observations
	maxHeadRows  int
	headCalls    int
	prefills     int
	prefillFroms []int
	firstTokens  []int32 // each prefill's first input token
	failPrefill  int     // fail the n-th prefill (1-based); 0 never
	sparse       bool    // PrefillBlocks reports dropped blocks
	failHead     int     // fail the n-th head call (1-based); 0 never

	// device, when set, is where the config says the engine runs
	// (backend, device arch, device ops), as a GPU backend's would.
	device *EngineConfig
}

func newFake(v, h int, seed uint64, noise float64) *fakeEngine {
	f := &fakeEngine{v: v, h: h, ubatch: 64, kv: 4096, bos: 1, scale: 1}
	r := rand.New(rand.NewPCG(seed, 99))
	n := rand.New(rand.NewPCG(seed, 1234))
	f.w = make([]float32, v*h)
	for i := range f.w {
		f.w[i] = float32(r.NormFloat64())
		if noise > 0 {
			f.w[i] += float32(noise * n.NormFloat64())
		}
	}
	return f
}

// withNoise is the same model with perturbed head weights.
func (f *fakeEngine) withNoise(noise float64, seed uint64) *fakeEngine {
	g := *f
	g.w = append([]float32(nil), f.w...)
	n := rand.New(rand.NewPCG(seed, 77))
	for i := range g.w {
		g.w[i] += float32(noise * n.NormFloat64())
	}
	return &g
}

func (f *fakeEngine) Info() ModelInfo {
	return ModelInfo{Path: "/models/fake.gguf", Size: 1234, Architecture: "fake", VocabSize: f.v,
		HiddenSize: f.h, AddBOS: f.addBOS, BOS: f.bos}
}

// PrefillBlocks reports the last prefill's attention blocks: every block
// kept (dense), or, with sparse set, a count that varies with the
// window's first token.
func (f *fakeEngine) PrefillBlocks() AttentionBlocks {
	if !f.sparse || len(f.firstTokens) == 0 {
		return AttentionBlocks{Kept: 1, Total: 1}
	}
	return AttentionBlocks{Kept: int64(f.firstTokens[len(f.firstTokens)-1]%4 + 1), Total: 8}
}

func (f *fakeEngine) Config() EngineConfig {
	c := EngineConfig{DeviceArch: "cpu", PrefillAttention: "dense", KVCacheDType: "f32",
		KVCapacity: f.kv, BatchSize: f.ubatch, UBatchSize: f.ubatch, HeadRows: HeadRows, Threads: 1, Backend: "fake"}
	if d := f.device; d != nil {
		c.Backend, c.DeviceArch, c.DeviceOps = d.Backend, d.DeviceArch, d.DeviceOps
		c.CPUFallbackAllowed, c.CPUFallbackOps = d.CPUFallbackAllowed, d.CPUFallbackOps
	}
	return c
}

func (f *fakeEngine) Tokenize(text string) ([]int32, error) {
	var t []int32
	if f.addBOS {
		t = append(t, f.bos)
	}
	for _, b := range []byte(text) {
		t = append(t, int32(b)%int32(f.v))
	}
	return t, nil
}

// TokenBytes gives BOS 0 bytes and other ids 1 + id mod 3, so that bits
// per byte differs from a per-token figure.
func (f *fakeEngine) TokenBytes(tokens []int32) []int32 {
	n := make([]int32, len(tokens))
	for i, t := range tokens {
		if !(f.addBOS && t == f.bos) {
			n[i] = 1 + t%3
		}
	}
	return n
}

// Piece is 1 + id mod 3 copies of a letter, as many bytes as TokenBytes
// gives the id; BOS renders as nothing.
func (f *fakeEngine) Piece(id int32) string {
	if f.addBOS && id == f.bos {
		return ""
	}
	return strings.Repeat(string(rune('a'+id%26)), int(1+id%3))
}

// hiddenRows returns the hidden rows of every position of tokens.
func (f *fakeEngine) hiddenRows(tokens []int32) []float32 {
	out := make([]float32, len(tokens)*f.h)
	var hsh uint64 = 1469598103934665603
	for p, t := range tokens {
		hsh = (hsh ^ uint64(uint32(t))) * 1099511628211
		hsh = (hsh ^ uint64(p)) * 1099511628211
		r := rand.New(rand.NewPCG(hsh, uint64(p)))
		for j := range f.h {
			out[p*f.h+j] = float32(r.NormFloat64())
		}
	}
	return out
}

func (f *fakeEngine) logits(hidden []float32) []float32 {
	row := make([]float32, f.v)
	for i := range row {
		var s float32
		for j := range f.h {
			s += f.w[i*f.h+j] * hidden[j]
		}
		row[i] = s * f.scale
	}
	return row
}

func (f *fakeEngine) Prefill(ctx context.Context, tokens []int32, from int, emit func(pos int, hidden []float32, n int) error) error {
	f.prefills++
	f.prefillFroms = append(f.prefillFroms, from)
	f.firstTokens = append(f.firstTokens, tokens[0])
	if f.failPrefill > 0 && f.prefills == f.failPrefill {
		return fmt.Errorf("fake engine: induced failure")
	}
	if len(tokens) > f.kv {
		return fmt.Errorf("fake engine: %d tokens exceed kv %d", len(tokens), f.kv)
	}
	all := f.hiddenRows(tokens)
	for p := 0; p < len(tokens); p += f.ubatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := min(p+f.ubatch, len(tokens))
		b := max(p, from)
		if b >= e {
			continue
		}
		// Hand out a copy so Run cannot rely on the buffer outliving emit.
		buf := append([]float32(nil), all[b*f.h:e*f.h]...)
		if err := emit(b, buf, e-b); err != nil {
			return err
		}
		for i := range buf {
			buf[i] = float32(math.NaN())
		}
	}
	return nil
}

func (f *fakeEngine) HeadReduce(hidden []float32, n int, reqs []RowRequest, out []RowResult) error {
	f.headCalls++
	f.maxHeadRows = max(f.maxHeadRows, n)
	if f.failHead > 0 && f.headCalls == f.failHead {
		return fmt.Errorf("fake engine: induced head failure")
	}
	if n > HeadRows {
		return fmt.Errorf("fake engine: %d rows > %d", n, HeadRows)
	}
	for i := range n {
		row := f.logits(hidden[i*f.h : (i+1)*f.h])
		o := &out[i]
		if len(o.Picked) != len(reqs[i].IDs) {
			o.Picked = make([]float32, len(reqs[i].IDs))
		}
		o.Max, o.ArgMax, o.SumExp = kernels.Pick(row, reqs[i].IDs, o.Picked)
		if k := reqs[i].TopK; k > 0 {
			if len(o.TopIDs) != k {
				o.TopIDs, o.TopLogits = make([]int32, k), make([]float32, k)
			}
			kernels.TopK(row, k, o.TopIDs, o.TopLogits)
		}
	}
	return nil
}

// fullLogits is the brute-force logit row predicting text token target
// (window position target-w.Begin), from the window's input.
func (f *fakeEngine) fullLogits(input []int32, pos int) []float32 {
	hid := f.hiddenRows(input[:pos+1])
	return f.logits(hid[pos*f.h:])
}

func randomTokens(seed uint64, n, v int) []int32 {
	r := rand.New(rand.NewPCG(seed, 5))
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(r.IntN(v))
	}
	return t
}
