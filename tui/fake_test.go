package tui

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"plexbench/scoring"
	"plexbench/workbench"
)

// fakeEngine is a small deterministic scoring.Engine: the hidden row at a
// position is a seeded function of the token prefix, and the LM head is a
// fixed random matrix, perturbed by noise for a "lower precision" variant.
// When step is set, each window's prefill first waits for a value on it,
// so a test decides when windows finish; when waiting is set too, the
// prefill says on it that it is waiting, so a test knows a window is in
// flight.
type fakeEngine struct {
	v, h    int
	w       []float32 // (v, h)
	kv      string
	step    chan struct{}
	waiting chan struct{}
}

func newFakeEngine(noise float64, kv string) *fakeEngine {
	f := &fakeEngine{v: 48, h: 8, kv: kv}
	r := rand.New(rand.NewPCG(7, 11))
	n := rand.New(rand.NewPCG(13, 17))
	f.w = make([]float32, f.v*f.h)
	for i := range f.w {
		f.w[i] = float32(0.5*r.NormFloat64() + noise*n.NormFloat64())
	}
	return f
}

func (f *fakeEngine) Info() scoring.ModelInfo {
	return scoring.ModelInfo{Path: "/models/fake.gguf", Size: 4096, Architecture: "fake",
		VocabSize: f.v, HiddenSize: f.h}
}

// PrefillBlocks reports dense attention: every block kept.
func (f *fakeEngine) PrefillBlocks() scoring.AttentionBlocks {
	return scoring.AttentionBlocks{Kept: 1, Total: 1}
}

func (f *fakeEngine) Config() scoring.EngineConfig {
	return scoring.EngineConfig{DeviceArch: "cpu", PrefillAttention: "dense", KVCacheDType: f.kv,
		KVCapacity: 4096, BatchSize: 64, UBatchSize: 64, HeadRows: scoring.HeadRows, Threads: 1, Backend: "cpu"}
}

func (f *fakeEngine) Tokenize(text string) ([]int32, error) {
	t := make([]int32, 0, len(text))
	for _, b := range []byte(text) {
		t = append(t, int32(b)%int32(f.v))
	}
	return t, nil
}

func (f *fakeEngine) TokenBytes(tokens []int32) []int32 {
	n := make([]int32, len(tokens))
	for i := range n {
		n[i] = 1
	}
	return n
}

// Piece inverts Tokenize on fakeText's bytes (lower-case letters, space
// and '.', distinct mod 48): one byte, as TokenBytes says; other ids '?'.
func (f *fakeEngine) Piece(id int32) string {
	for _, b := range []byte("abcdefghijklmnopqrstuvwxyz .") {
		if int32(b)%int32(f.v) == id {
			return string(b)
		}
	}
	return "?"
}

func (f *fakeEngine) Prefill(ctx context.Context, tokens []int32, from int, emit func(int, []float32, int) error) error {
	if f.step != nil {
		if f.waiting != nil {
			f.waiting <- struct{}{}
		}
		<-f.step
	}
	rows := make([]float32, len(tokens)*f.h)
	var hsh uint64 = 1469598103934665603
	for p, t := range tokens {
		hsh = (hsh ^ uint64(uint32(t))) * 1099511628211
		r := rand.New(rand.NewPCG(hsh, uint64(p)))
		for j := range f.h {
			rows[p*f.h+j] = float32(r.NormFloat64())
		}
	}
	for p := from; p < len(tokens); p += 16 {
		e := min(p+16, len(tokens))
		if err := emit(p, rows[p*f.h:e*f.h], e-p); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeEngine) HeadReduce(hidden []float32, n int, reqs []scoring.RowRequest, out []scoring.RowResult) error {
	for i := range n {
		row := make([]float32, f.v)
		for k := range row {
			var s float64
			for j := range f.h {
				s += float64(f.w[k*f.h+j]) * float64(hidden[i*f.h+j])
			}
			row[k] = float32(s)
		}
		o := &out[i]
		o.Max, o.ArgMax = row[0], 0
		for k, l := range row {
			if l > o.Max {
				o.Max, o.ArgMax = l, int32(k)
			}
		}
		o.SumExp = 0
		for _, l := range row {
			o.SumExp += math.Exp(float64(l - o.Max))
		}
		o.Picked = o.Picked[:0]
		for _, id := range reqs[i].IDs {
			o.Picked = append(o.Picked, row[id])
		}
		if k := reqs[i].TopK; k > 0 {
			ids := make([]int32, f.v)
			for j := range ids {
				ids[j] = int32(j)
			}
			slices.SortStableFunc(ids, func(a, b int32) int {
				switch {
				case row[a] > row[b]:
					return -1
				case row[a] < row[b]:
					return 1
				}
				return 0
			})
			o.TopIDs, o.TopLogits = o.TopIDs[:0], o.TopLogits[:0]
			for _, id := range ids[:k] {
				o.TopIDs = append(o.TopIDs, id)
				o.TopLogits = append(o.TopLogits, row[id])
			}
		}
	}
	return nil
}

// fakeText is a deterministic text long enough for a few dozen windows.
func fakeText(n int) string {
	r := rand.New(rand.NewPCG(3, 5))
	words := []string{"the", "cat", "sat", "on", "a", "mat", "and", "saw", "dog", "run", "far", "away", "."}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// fakeRunner builds a fake engine per profile: kv_cache_dtype f32 is the
// exact head, anything else perturbs it a little, like a lower-precision
// KV cache would.
type fakeRunner struct {
	text    string
	step    chan struct{}
	waiting chan struct{}
	// otherTokenizers: an A/B's two models have different tokenizers, so
	// A's run is refused before it scores, as workbench.Run refuses one.
	otherTokenizers bool
}

// Run scores j on the fake engine and keeps it as workbench.Run would
// (workbench.Kept).
func (r fakeRunner) Run(ctx context.Context, j workbench.Job) (workbench.Outcome, error) {
	return workbench.Kept(j, func(j workbench.Job) (workbench.Outcome, error) { return r.run(ctx, j) })
}

func (r fakeRunner) run(ctx context.Context, j workbench.Job) (workbench.Outcome, error) {
	p := j.Profile
	if r.otherTokenizers && j.Partner != nil && !j.AllowTokenizerMismatch {
		return workbench.Outcome{}, fmt.Errorf("%w: %s and %s tokenize the text differently at token 0", scoring.ErrTokenizerMismatch, p.Name, j.Partner.Name)
	}
	req := scoring.Request{KLDBase: j.Compare, KLDBaseOut: j.BaseOut, KLDTopK: p.KLDTopK, Progress: j.Progress, KeepGoing: j.KeepGoing}
	stop, err := workbench.StopRule(p)
	if err != nil {
		return workbench.Outcome{}, err
	}
	req.Stop = stop
	noise := 0.0
	if p.KVCacheDType != "f32" {
		noise = 0.02
	}
	eng := newFakeEngine(noise, p.KVCacheDType)
	eng.step, eng.waiting = r.step, r.waiting
	req.Text, req.TextPath = r.text, "fake.txt"
	req.Method, req.Ctx, req.Stride, req.Chunks = p.Method, p.Ctx, p.Stride, p.Chunks
	rep, err := scoring.Run(ctx, eng, req)
	if err != nil && !stopped(err) && rep.Object == "" {
		return workbench.Outcome{Report: rep}, fmt.Errorf("fake run: %w", err)
	}
	return workbench.Outcome{Report: rep}, err
}
