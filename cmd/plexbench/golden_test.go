package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/kernels/shareddata"
	"plexbench/profiles"
)

type goldenPPL struct {
	PPL    float64 `json:"ppl"`
	PPLErr float64 `json:"ppl_pm"`
	Chunks int     `json:"chunks"`
}

type golden struct {
	Tokenize map[string]struct {
		Tokens int    `json:"tokens"`
		SHA256 string `json:"token_ids_sha256"`
	} `json:"tokenize"`
	PPL map[string]goldenPPL `json:"ppl"`
}

func loadGolden(t testing.TB, dir string) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// sameToSignificant reports whether a and b agree to n significant digits:
// |a−b| is at most half a unit in the n-th digit of b.
func sameToSignificant(a, b float64, n int) bool {
	unit := math.Pow(10, math.Floor(math.Log10(math.Abs(b)))-float64(n-1))
	return math.Abs(a-b) <= unit/2+1e-12
}

// TestGoldenPerplexity scores tinystories-16k with every stories260K file at
// ctx 128 and 64 and compares with llama.cpp's -fa off figures: f32 KV with
// dense_f32kv, f16 KV with dense_f16kv.
func TestGoldenPerplexity(t *testing.T) {
	dir := shareddata.Dir(t)
	g := loadGolden(t, dir)
	tok := g.Tokenize["stories260K/tinystories/tinystories-16k.txt"]
	text := filepath.Join(dir, "tinystories", "tinystories-16k.txt")
	models, _ := filepath.Glob(filepath.Join(dir, "models", "stories260K-*.gguf"))
	if len(models) == 0 {
		t.Fatal("no stories260K models")
	}
	for _, model := range models {
		name := strings.TrimSuffix(filepath.Base(model), ".gguf")
		for _, ctx := range []int{128, 64} {
			for _, kv := range []struct{ dtype, config string }{{"f32", "dense_f32kv"}, {"f16", "dense_f16kv"}} {
				key := fmt.Sprintf("%s/tinystories-16k/ctx%d/%s", name, ctx, kv.config)
				want, ok := g.PPL[key]
				if !ok {
					t.Errorf("%s: not in golden.json", key)
					continue
				}
				t.Run(key, func(t *testing.T) {
					p := profiles.Default()
					p.Model, p.Text, p.Ctx, p.KVCacheDType, p.BatchSize = model, text, ctx, kv.dtype, ctx
					req, err := buildRequest(p, scoreExtras{})
					if err != nil {
						t.Fatal(err)
					}
					rep, err := scoreProfile(context.Background(), p, req)
					if err != nil {
						t.Fatal(err)
					}
					if rep.Tokens != tok.Tokens || rep.TokenIDsSHA256 != tok.SHA256 {
						t.Errorf("tokens %d %s, want %d %s", rep.Tokens, rep.TokenIDsSHA256, tok.Tokens, tok.SHA256)
					}
					if rep.WindowsScored != want.Chunks || rep.ScoredTokens != want.Chunks*(ctx-1-ctx/2) {
						t.Errorf("windows %d scored %d, want %d chunks", rep.WindowsScored, rep.ScoredTokens, want.Chunks)
					}
					if !sameToSignificant(rep.Perplexity, want.PPL, 4) {
						t.Errorf("PPL %.5f, llama.cpp %.4f", rep.Perplexity, want.PPL)
					}
					if !sameToSignificant(rep.PerplexityUncertainty, want.PPLErr, 3) {
						t.Errorf("PPL ± %.6f, llama.cpp %.5f", rep.PerplexityUncertainty, want.PPLErr)
					}
					t.Logf("PPL %.5f ± %.6f (llama.cpp %.4f ± %.5f)", rep.Perplexity, rep.PerplexityUncertainty, want.PPL, want.PPLErr)
				})
			}
		}
	}
}
