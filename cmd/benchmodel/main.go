// Command benchmodel writes synth's random models with a real tokenizer,
// so that text tokenizes as with the real model: the files `make
// bench-llamacpp` gives both plexbench and llama.cpp, and the hybrid
// models the llama.cpp oracle scores.
//
//	go run ./cmd/benchmodel -type q8_0 -layers 28 -o /tmp/x.gguf
//	go run ./cmd/benchmodel -arch qwen3-8b -type q4_k_m -o /tmp/8b.gguf
//	go run ./cmd/benchmodel -arch qwen35-0.8b -type q8_0 -o /tmp/q35.gguf
//	go run ./cmd/benchmodel -arch llama-tiny -type f32 -vocab stories260K-f32.gguf -o /tmp/l.gguf
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"plexbench/engine/synth"
	"plexbench/kernels"
)

func main() {
	arch := flag.String("arch", "qwen3-0.6b", "shape: a dense one ("+strings.Join(synth.Shapes, ", ")+") or a hybrid preset ("+strings.Join(synth.HybridPresets, ", ")+")")
	typ := flag.String("type", "q8_0", "matrix types: f32 | f16 | q8_0 | q4_k_m (llama.cpp's mix)")
	layers := flag.Int("layers", 0, "transformer blocks (0: the shape's own)")
	vocab := flag.String("vocab", "../shared/data/vocab/qwen3-vocab.gguf", "GGUF file whose tokenizer.* metadata the model gets")
	seed := flag.Uint64("seed", 1, "weights seed (hybrids)")
	out := flag.String("o", "", "output GGUF file (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: benchmodel [-arch SHAPE] [-type f32|f16|q8_0|q4_k_m] [-layers N] [-vocab V.gguf] [-seed S] -o OUT.gguf")
		os.Exit(2)
	}
	if err := run(*arch, *typ, *layers, *vocab, *seed, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchmodel:", err)
		os.Exit(1)
	}
}

func run(arch, typ string, layers int, vocabPath string, seed uint64, out string) error {
	v, err := synth.LoadVocab(vocabPath)
	if err != nil {
		return err
	}
	if s, err := synth.ShapeOf(arch); err == nil {
		if layers == 0 {
			layers = s.Layers
		}
		types, err := mix(typ, layers, s.Untied)
		if err != nil {
			return err
		}
		return synth.Write(out, synth.Config{Shape: s, Layers: layers, Types: types, Vocab: v})
	}
	h, err := synth.HybridPreset(arch)
	if err != nil {
		return err
	}
	if layers > 0 {
		h.Layers = layers
	}
	if h.Types, err = mix(typ, h.Layers, false); err != nil {
		return err
	}
	h.Vocab, h.Seed = v, seed
	return synth.WriteHybrid(out, h)
}

// mix is synth.MixOf plus f32; the GDN's small projections (β, α) keep
// the matrix type as llama.cpp's quantizer does for 2-D weights.
func mix(typ string, layers int, untied bool) (func(int, string) kernels.Type, error) {
	if strings.EqualFold(typ, "f32") {
		return synth.AllOf(kernels.F32), nil
	}
	return synth.MixOf(typ, layers, untied)
}
