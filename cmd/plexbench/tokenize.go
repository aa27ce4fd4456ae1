package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
	"plexbench/workbench"
)

func (c *cli) tokenizeCmd() *cobra.Command {
	cmd, fs := c.command("tokenize", "--model MODEL.gguf --file TEXT [--ids] [--json]", "tokenize a text with a model's tokenizer")
	model := fs.String("model", "", "a GGUF model or vocab-only GGUF file")
	file := fs.String("file", "", "text file, tokenized as a perplexity run does")
	withIDs := fs.Bool("ids", false, "print the token ids too")
	asJSON := fs.Bool("json", false, "print JSON")
	return c.action(cmd, func(_ []string) int {
		if *model == "" || *file == "" {
			cmd.Usage()
			return 2
		}
		text, err := workbench.ReadText(*file)
		if err != nil {
			return c.fail(err)
		}
		f, err := gguf.Open(*model)
		if err != nil {
			return c.fail(err)
		}
		defer f.Close()
		tok, err := tokenizer.FromGGUF(f)
		if err != nil {
			return c.fail(fmt.Errorf("%s: %w", *model, err))
		}
		if tok.AddEOS() {
			return c.fail(fmt.Errorf("%s: the vocabulary appends EOS, which perplexity scoring does not support", *model))
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
			if err := writeJSON(c.stdout, data); err != nil {
				return c.fail(err)
			}
			return 0
		}
		fmt.Fprintf(c.stdout, "tokens            %d\ntoken_ids_sha256  %s\n", len(ids), sum)
		if *withIDs {
			for i, id := range ids {
				if i > 0 {
					fmt.Fprint(c.stdout, " ")
				}
				fmt.Fprint(c.stdout, id)
			}
			fmt.Fprintln(c.stdout)
		}
		return 0
	})
}
