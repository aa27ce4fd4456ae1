package scoring

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestShardsMergeToTheUnshardedRun: shards 0/3, 1/3, 2/3 of a comparison
// merge into the unsharded report in every field but timings: PPL, ±
// and KLD statistics to 1e-12 relative, percentiles exactly.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	for _, llama := range []bool{false, true} {
		a := newFake(48, 6, 5, 0)
		b := a.withNoise(0.15, 6)
		tokens := randomTokens(4, 2100, 48)
		req := Request{Tokens: tokens, Ctx: 200, KLDTopK: 10}
		if llama {
			req.KLDBaseFormat = BaseFormatLlama
		}
		path, _ := recordBase(t, a, req)
		full, err := Run(context.Background(), b, Request{KLDBase: path})
		if err != nil {
			t.Fatal(err)
		}
		var shards []Report
		for _, i := range []int{2, 0, 1} { // any order
			r, err := Run(context.Background(), b, Request{KLDBase: path, Shard: ShardSpec{I: i, N: 3}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Sums == nil || r.WindowsScored != (len(full.Windows)+2-i)/3 {
				t.Fatalf("shard %d/3: %d windows, sums %v", i, r.WindowsScored, r.Sums != nil)
			}
			shards = append(shards, r)
		}
		m, err := MergeShards(shards)
		if err != nil {
			t.Fatal(err)
		}
		zeroTimes := func(r *Report) {
			r.ElapsedSeconds, r.PrefillTokensPerSecond, r.ProgressHeldSeconds = 0, 0, 0
			for i := range r.Windows {
				r.Windows[i].Seconds = 0
			}
		}
		zeroTimes(&full)
		zeroTimes(&m)
		near := func(what string, x, y float64) {
			if x != y && math.Abs(x-y) > 1e-12*math.Max(math.Abs(x), math.Abs(y)) {
				t.Errorf("llama %v: %s: merged %v, unsharded %v", llama, what, x, y)
			}
		}
		near("perplexity", m.Perplexity, full.Perplexity)
		near("± of perplexity", m.PerplexityUncertainty, full.PerplexityUncertainty)
		near("mean NLL", m.MeanNLL, full.MeanNLL)
		near("bits per byte", m.BitsPerByte, full.BitsPerByte)
		near("± of bits per byte", m.BitsPerByteUncertainty, full.BitsPerByteUncertainty)
		if m.TextBytes != full.TextBytes || full.TextBytes <= 0 {
			t.Errorf("llama %v: text_bytes %d merged, %d unsharded", llama, m.TextBytes, full.TextBytes)
		}
		fk, mk := reflect.ValueOf(*full.KLD), reflect.ValueOf(*m.KLD)
		for i := range fk.NumField() {
			if f := fk.Field(i); f.Kind() == reflect.Float64 {
				near(fk.Type().Field(i).Name, mk.Field(i).Float(), f.Float())
			}
		}
		if m.KLD.KLDPercentiles != full.KLD.KLDPercentiles || m.KLD.DeltaPPercentiles != full.KLD.DeltaPPercentiles {
			t.Errorf("llama %v: percentiles differ:\n%+v\n%+v", llama, m.KLD.KLDPercentiles, full.KLD.KLDPercentiles)
		}
		if mh, fh := m.KLD.Histogram, full.KLD.Histogram; fh == nil || !reflect.DeepEqual(mh, fh) || fh.Total() != full.KLD.Tokens-full.KLD.NonFiniteTokens {
			t.Errorf("llama %v: histograms differ or miscount:\n%+v\n%+v", llama, mh, fh)
		}
		for i := range full.Windows {
			if w, f := m.Windows[i], full.Windows[i]; w.NLLSumSq != f.NLLSumSq || f.NLLSumSq <= 0 {
				t.Errorf("llama %v: window %d: nll_sum_sq %v merged, %v unsharded", llama, f.Index, w.NLLSumSq, f.NLLSumSq)
			}
		}
		// Everything else is equal outright once the floats above match.
		m.Perplexity, m.PerplexityUncertainty, m.MeanNLL = full.Perplexity, full.PerplexityUncertainty, full.MeanNLL
		m.BitsPerByte, m.BitsPerByteUncertainty = full.BitsPerByte, full.BitsPerByteUncertainty
		mk2 := *m.KLD
		for i := range fk.NumField() {
			if fk.Field(i).Kind() == reflect.Float64 {
				reflect.ValueOf(&mk2).Elem().Field(i).SetFloat(fk.Field(i).Float())
			}
		}
		m.KLD = &mk2
		if full.Trace == nil || full.Trace.Scored() != full.ScoredTokens {
			t.Errorf("llama %v: the unsharded run's token trace is missing or short", llama)
		}
		if !reflect.DeepEqual(m, full) {
			t.Errorf("llama %v: merged report differs:\n%+v\n%+v", llama, m, full)
		}
	}
}

func TestShardBadInput(t *testing.T) {
	for _, s := range []string{"3/2", "2/2", "-1/3", "1", "a/b", "0/0"} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q) accepted", s)
		}
	}
	if s, err := ParseShard("1/3"); err != nil || s != (ShardSpec{1, 3}) {
		t.Errorf("ParseShard(1/3) = %v, %v", s, err)
	}
	f := newFake(40, 6, 1, 0)
	tokens := randomTokens(1, 900, 40)
	if _, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Shard: ShardSpec{0, 2}, KLDBaseOut: t.TempDir() + "/b.kld"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("a shard recording a base: %v", err)
	}
	var shards []Report
	for i := range 3 {
		r, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Shard: ShardSpec{i, 3}})
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
	}
	other, _ := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 50, Shard: ShardSpec{2, 3}})
	plain, _ := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100})
	for _, c := range []struct {
		reps []Report
		want string
	}{
		{shards[:2], "shard 2/3 is missing"},
		{[]Report{shards[0], shards[1], shards[1]}, "shard 1/3 given twice"},
		{[]Report{shards[0], shards[1], other}, "its windows differ"},
		{[]Report{plain}, "not a shard"},
	} {
		if _, err := MergeShards(c.reps); !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	m, err := MergeShards(shards)
	if err != nil || m.Perplexity != plain.Perplexity && math.Abs(m.Perplexity-plain.Perplexity) > 1e-12*plain.Perplexity {
		t.Fatalf("merge without a base: %v, PPL %v vs %v", err, m.Perplexity, plain.Perplexity)
	}
}
