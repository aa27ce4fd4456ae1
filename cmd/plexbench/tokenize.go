package main

import (
	"encoding/json"
	"fmt"
	"os"

	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
	"plexbench/scoring/workbench"
)

func runTokenize(args []string) int {
	fs := newFlags("tokenize", "--model MODEL.gguf --file TEXT [--ids] [--json]")
	model := fs.String("model", "", "GGUF model or vocab-only GGUF file")
	file := fs.String("file", "", "text file, tokenized as a perplexity run does")
	withIDs := fs.Bool("ids", false, "print the token ids too")
	asJSON := fs.Bool("json", false, "print JSON")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *model == "" || *file == "" {
		fs.Usage()
		return 2
	}
	text, err := workbench.ReadText(*file)
	if err != nil {
		return fail(err)
	}
	f, err := gguf.Open(*model)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *model, err))
	}
	if tok.AddEOS() {
		return fail(fmt.Errorf("%s: the vocabulary appends EOS, which perplexity scoring does not support", *model))
	}
	ids := tok.Encode(text, true, false)
	sum := tokenHash(ids)
	if *asJSON {
		out := struct {
			Tokens int     `json:"tokens"`
			SHA256 string  `json:"token_ids_sha256"`
			IDs    []int32 `json:"ids,omitempty"`
		}{Tokens: len(ids), SHA256: sum}
		if *withIDs {
			out.IDs = ids
		}
		data, _ := json.Marshal(out)
		if err := writeJSON(os.Stdout, data); err != nil {
			return fail(err)
		}
		return 0
	}
	fmt.Printf("tokens            %d\ntoken_ids_sha256  %s\n", len(ids), sum)
	if *withIDs {
		for i, id := range ids {
			if i > 0 {
				fmt.Print(" ")
			}
			fmt.Print(id)
		}
		fmt.Println()
	}
	return 0
}
