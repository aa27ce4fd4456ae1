package main

import (
	"encoding/json"
	"fmt"
	"os"

	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
)

// perplexityText is a text file's content as llama-perplexity scores it:
// the bytes as they are, with exactly one trailing "\n" dropped.
func perplexityText(data []byte) string {
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	return string(data)
}

// readText reads a text file for scoring, refusing empty files.
func readText(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(data) == 0 {
		return "", fmt.Errorf("%s: the file is empty", path)
	}
	return perplexityText(data), nil
}

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
	text, err := readText(*file)
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
