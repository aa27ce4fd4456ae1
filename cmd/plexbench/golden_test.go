package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/internal/shareddata"
	"plexbench/internal/testtier"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench"
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

// exactKernels are the variants that reproduce ggml's AVX-512 CPU
// arithmetic bit for bit (kernels/avx512.go, kernels/libm.go).
const exactKernels = "matmul=go,attention=go,swiglu=go"

// scoreStories runs the chunks method on text with one stories260K file
// as llama-perplexity -c ctx -b ctx does.
func scoreStories(t *testing.T, model, text string, ctx int, kv, kernelSpec string) scoring.Report {
	t.Helper()
	p := profiles.Default()
	p.Model, p.Text, p.Ctx, p.KVCacheDType, p.BatchSize, p.UBatchSize = model, text, ctx, kv, ctx, ctx
	var err error
	if p.Kernels, err = profiles.ParseKernels(kernelSpec); err != nil {
		t.Fatal(err)
	}
	out, err := workbench.Run(context.Background(), workbench.Job{Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	return out.Report
}

// TestGoldenPerplexity scores tinystories-16k with every stories260K file at
// ctx 128 and 64 with the default (fastest) kernels and compares with
// golden.json's llama.cpp -fa off figures: f32 KV with dense_f32kv, f16 KV
// with dense_f16kv. Token hash, windows and scored tokens must be equal.
// The F32 and F16 models must agree to 4 significant digits. The quantized
// files are held to 0.2%: golden.json's build is not reproducible and, on
// this 64-wide model, 8-bit activation quantization turns last-bit
// differences between llama.cpp builds into shifts of ~1e-3 (see
// testdata/oracle/README.md; TestExactKernelsMatchLlamaCpp pins exactness).
func TestGoldenPerplexity(t *testing.T) {
	t.Parallel()
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
		float := strings.HasSuffix(name, "-f32") || strings.HasSuffix(name, "-f16")
		for _, ctx := range []int{128, 64} {
			// Short mode (the masked CPU levels' rerun): ctx 128 only; the
			// windows of ctx 64 do not depend on the kernels, and the full
			// native run checks them.
			if testing.Short() && ctx != 128 {
				continue
			}
			for _, kv := range []struct{ dtype, config string }{{"f32", "dense_f32kv"}, {"f16", "dense_f16kv"}} {
				key := fmt.Sprintf("%s/tinystories-16k/ctx%d/%s", name, ctx, kv.config)
				want, ok := g.PPL[key]
				if !ok {
					t.Errorf("%s: not in golden.json", key)
					continue
				}
				t.Run(key, func(t *testing.T) {
					t.Parallel()
					rep := scoreStories(t, model, text, ctx, kv.dtype, "")
					if rep.Tokens != tok.Tokens || rep.TokenIDsSHA256 != tok.SHA256 {
						t.Errorf("tokens %d %s, want %d %s", rep.Tokens, rep.TokenIDsSHA256, tok.Tokens, tok.SHA256)
					}
					if rep.WindowsScored != want.Chunks || rep.ScoredTokens != want.Chunks*(ctx-1-ctx/2) {
						t.Errorf("windows %d scored %d, want %d chunks", rep.WindowsScored, rep.ScoredTokens, want.Chunks)
					}
					t.Logf("PPL %.5f ± %.6f (llama.cpp %.4f ± %.5f)", rep.Perplexity, rep.PerplexityUncertainty, want.PPL, want.PPLErr)
					if float {
						if !sameToSignificant(rep.Perplexity, want.PPL, 4) || !sameToSignificant(rep.PerplexityUncertainty, want.PPLErr, 3) {
							t.Errorf("PPL %.5f ± %.6f, llama.cpp %.4f ± %.5f", rep.Perplexity, rep.PerplexityUncertainty, want.PPL, want.PPLErr)
						}
						return
					}
					if d := math.Abs(rep.Perplexity/want.PPL - 1); d > 2e-3 {
						t.Errorf("PPL %.5f is %.2f%% from llama.cpp's %.4f", rep.Perplexity, 100*d, want.PPL)
					}
					if d := math.Abs(rep.PerplexityUncertainty/want.PPLErr - 1); d > 1e-2 {
						t.Errorf("± %.6f is %.2f%% from llama.cpp's %.5f", rep.PerplexityUncertainty, 100*d, want.PPLErr)
					}
				})
			}
		}
	}
}

// TestExactKernelsMatchLlamaCpp: with the exact kernel variants the F32
// stories260K file over an f32 KV cache and the Q4_K_M one over an f16
// cache reproduce at ctx 128 the perplexity llama.cpp's own AVX-512 CPU
// backend computes (testdata/oracle), to 1e-6 relative.
// TestLongExactKernelsMatchLlamaCpp runs every other file, cache and
// context of the oracle.
func TestExactKernelsMatchLlamaCpp(t *testing.T) {
	t.Parallel()
	checkExactKernels(t, func(key string) bool { return exactDefault[key] })
}

// TestLongExactKernelsMatchLlamaCpp is TestExactKernelsMatchLlamaCpp for
// every other stories260K file, KV cache and context.
func TestLongExactKernelsMatchLlamaCpp(t *testing.T) {
	testtier.SkipUnlessLong(t)
	t.Parallel()
	checkExactKernels(t, func(key string) bool { return !exactDefault[key] })
}

// exactDefault are the oracle's cases the default tier runs.
var exactDefault = map[string]bool{"stories260K-f32/ctx128/f32kv": true, "stories260K-q4_k_m/ctx128/f16kv": true}

// checkExactKernels scores the oracle's cases that pick selects with the
// exact kernels and compares with llama.cpp's perplexities.
func checkExactKernels(t *testing.T, pick func(key string) bool) {
	dir := shareddata.Dir(t)
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", "llamacpp-avx512.json"))
	if err != nil {
		t.Fatal(err)
	}
	var oracle struct {
		PPL map[string]float64 `json:"ppl"`
	}
	if err := json.Unmarshal(data, &oracle); err != nil {
		t.Fatal(err)
	}
	for key := range exactDefault {
		if _, ok := oracle.PPL[key]; !ok {
			t.Errorf("%s: not in the oracle", key)
		}
	}
	text := filepath.Join(dir, "tinystories", "tinystories-16k.txt")
	for key, want := range oracle.PPL {
		var name, kv string
		var ctx int
		if _, err := fmt.Sscanf(strings.NewReplacer("/", " ").Replace(key), "%s ctx%d %s", &name, &ctx, &kv); err != nil {
			t.Fatalf("oracle key %q: %v", key, err)
		}
		if !pick(key) {
			continue
		}
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			rep := scoreStories(t, filepath.Join(dir, "models", name+".gguf"), text, ctx, strings.TrimSuffix(kv, "kv"), exactKernels)
			if d := math.Abs(rep.Perplexity/want - 1); d > 1e-6 {
				t.Errorf("PPL %.8f, llama.cpp %.8f (rel %.2g)", rep.Perplexity, want, d)
			}
		})
	}
}

// TestHybridMatchesLlamaCpp scores synth's tiny random qwen35, qwen35moe
// and qwen3next models (written exactly as testdata/oracle/run-hybrid.sh
// writes them for llama.cpp) with the default kernels and compares with
// llama.cpp's perplexities from each of its CPU builds. F32 weights agree
// to 2e-5 relative. With F16 weights the 16-bit activations turn last-bit
// differences into router flips and rounding-boundary crossings on these
// tiny models, and llama.cpp's own builds spread by up to ~3e-4 among
// themselves; there the figure must lie within the larger of 1e-4 and
// twice that spread of the nearest build.
func TestHybridMatchesLlamaCpp(t *testing.T) {
	t.Parallel()
	dir := shareddata.Dir(t)
	data, err := os.ReadFile(filepath.Join("testdata", "oracle", "llamacpp-hybrid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var oracle struct {
		PPL map[string]map[string]float64 `json:"ppl"`
	}
	if err := json.Unmarshal(data, &oracle); err != nil {
		t.Fatal(err)
	}
	vocab, err := synth.LoadVocab(filepath.Join(dir, "models", "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "tinystories", "tinystories-16k.txt")
	models, tmp := map[string]string{}, t.TempDir()
	for _, key := range slices.Sorted(maps.Keys(oracle.PPL)) {
		builds := oracle.PPL[key]
		name, kv, _ := strings.Cut(key, "/")
		arch, typ, _ := strings.Cut(name, "-")
		t.Run(key, func(t *testing.T) {
			path := models[name]
			if path == "" {
				h, err := synth.HybridPreset(arch + "-tiny")
				if err != nil {
					t.Fatal(err)
				}
				wt, err := kernels.ParseType(typ)
				if err != nil {
					t.Fatal(err)
				}
				h.Types, h.Vocab, h.Seed = synth.AllOf(wt), vocab, 1
				path = filepath.Join(tmp, name+".gguf")
				if err := synth.WriteHybrid(path, h); err != nil {
					t.Fatal(err)
				}
				models[name] = path
			}
			got := scoreStories(t, path, text, 128, strings.TrimSuffix(kv, "kv"), "").Perplexity
			lo, hi, nearest := math.Inf(1), math.Inf(-1), math.Inf(1)
			for _, v := range builds {
				lo, hi = min(lo, v), max(hi, v)
				nearest = min(nearest, math.Abs(got/v-1))
			}
			tol := 2e-5
			if typ != "f32" {
				tol = max(1e-4, 2*(hi-lo)/lo)
			}
			if nearest > tol {
				t.Errorf("PPL %.8f, llama.cpp %v: %.3g from the nearest build (tol %.3g)", got, builds, nearest, tol)
			} else {
				t.Logf("PPL %.8f, llama.cpp %v: %.3g from the nearest build", got, builds, nearest)
			}
		})
	}
}
