// Command benchmodel writes synth's random Qwen3-0.6B-shaped model with
// Qwen3's real tokenizer, so that text tokenizes as with the real model:
// the file `make bench-llamacpp` gives both plexbench and llama.cpp.
//
//	go run ./cmd/benchmodel -type q8_0 -layers 28 -o /tmp/x.gguf
package main

import (
	"flag"
	"fmt"
	"os"

	"plexbench/engine/synth"
)

func main() {
	typ := flag.String("type", "q8_0", "matrix types: f16 | q8_0 | q4_k_m (llama.cpp's mix)")
	layers := flag.Int("layers", synth.Layers, "transformer blocks")
	vocab := flag.String("vocab", "../shared/data/vocab/qwen3-vocab.gguf", "GGUF file whose tokenizer.* metadata the model gets")
	out := flag.String("o", "", "output GGUF file (required)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: benchmodel [-type f16|q8_0|q4_k_m] [-layers N] [-vocab V.gguf] -o OUT.gguf")
		os.Exit(2)
	}
	if err := run(*typ, *layers, *vocab, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchmodel:", err)
		os.Exit(1)
	}
}

func run(typ string, layers int, vocabPath, out string) error {
	types, err := synth.Mix(typ, layers)
	if err != nil {
		return err
	}
	v, err := synth.LoadVocab(vocabPath)
	if err != nil {
		return err
	}
	return synth.Write(out, synth.Config{Layers: layers, Types: types, Vocab: v})
}
