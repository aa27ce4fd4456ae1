package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/kernels"
)

// sharedData returns ../shared/data beside the module root, skipping the
// test when it is absent (failing under CI, where it must be present).
func sharedData(t testing.TB) string { return shareddata.Dir(t) }

// TestGenerateStories260K checks greedy decoding of the real stories260K
// files against llama.cpp's llama-simple continuations in golden.json.
func TestGenerateStories260K(t *testing.T) {
	dir := sharedData(t)
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Generate struct {
			Runs map[string]struct {
				Prompt       string `json:"prompt"`
				NewTokens    int    `json:"new_tokens"`
				Continuation string `json:"continuation"`
			} `json:"runs"`
		} `json:"generate"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Generate.Runs) == 0 {
		t.Fatal("golden.json has no generate runs")
	}
	for name, run := range g.Generate.Runs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "models", name+".gguf")
			for _, kv := range []kernels.Type{kernels.F32, kernels.F16} {
				m, err := Load(path, Options{Threads: 2, KVLen: 128, KVType: kv})
				if err != nil {
					t.Fatal(err)
				}
				text, ids, err := m.Generate(context.Background(), run.Prompt, run.NewTokens)
				m.Close()
				if err != nil {
					t.Fatal(err)
				}
				if len(ids) != run.NewTokens || text != run.Continuation {
					t.Errorf("kv %v: %d tokens %q\nwant %d tokens %q", kv, len(ids), text, run.NewTokens, run.Continuation)
				}
			}
		})
	}
}
