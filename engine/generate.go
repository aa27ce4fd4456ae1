package engine

// This file owns tokenization for scoring and greedy decoding: the prompt
// prefilled through the pass plan, then one token per pass.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
	"plexbench/kernels"
)

// Tokenize tokenizes a whole text as llama-perplexity does: BOS when the
// vocab asks for it, special tokens never parsed out of the text. Vocabs
// that append EOS are refused, as llama-perplexity refuses them.
func (m *Model) Tokenize(text string) ([]int32, error) { return TokenizeText(m.tok, m.path, text) }

// TokenizeText tokenizes text with tok as Model.Tokenize does; path names
// the model in errors.
func TokenizeText(tok *tokenizer.Tokenizer, path, text string) ([]int32, error) {
	if tok.AddEOS() {
		return nil, fmt.Errorf("%w: %s: the vocabulary appends EOS (tokenizer.ggml.add_eos_token), which llama-perplexity does not support",
			ErrUnsupported, path)
	}
	return tok.Encode(text, true, false), nil
}

// LoadTokenizer reads the tokenizer of the GGUF model at path, without
// loading its weights.
func LoadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return tokenizer.FromGGUF(f)
}

// TokenBytes is, per token, the bytes it adds to the detokenized text
// (tokenizer.PieceBytes): what a run's bits per byte divides by.
func (m *Model) TokenBytes(tokens []int32) []int32 { return m.tok.PieceBytes(tokens) }

// Decode renders ids as text (tokenizer.Decode).
func (m *Model) Decode(ids []int32) string { return m.tok.Decode(ids) }

// Piece is a token's text as it renders mid-text (tokenizer.Piece).
func (m *Model) Piece(id int32) string { return m.tok.Piece(id) }

// Generate decodes greedily: the prompt (BOS added when the vocab asks,
// special tokens parsed, as llama-simple does) is prefilled from an empty
// KV cache, then up to n tokens are appended one pass each, stopping early
// at an end-of-generation token. It returns the text after the prompt and
// the generated ids.
func (m *Model) Generate(ctx context.Context, prompt string, n int) (string, []int32, error) {
	ids := m.tok.Encode(prompt, true, true)
	switch {
	case len(ids) == 0:
		return "", nil, fmt.Errorf("%w: the prompt is empty", ErrInput)
	case n < 0:
		return "", nil, fmt.Errorf("%w: %d tokens to generate", ErrInput, n)
	case len(ids)+n > m.opt.KVLen:
		return "", nil, fmt.Errorf("%w: %d prompt + %d new tokens exceed the KV cache of %d (kv-len)",
			ErrInput, len(ids), n, m.opt.KVLen)
	}
	var gen []int32
	next := int32(-1)
	pick := func(p *pass) error {
		if p.pos0+p.n < len(ids)+len(gen) {
			return nil // not the prompt's last pass yet
		}
		hidden := p.outputNorm(p.n-1, p.n)
		_, next, _ = kernels.Pick(m.logitsOf(hidden, 1), nil, nil)
		return nil
	}
	if err := m.run(ctx, ids, 0, pick); err != nil {
		return "", nil, err
	}
	for len(gen) < n && !slices.Contains(m.eog, next) {
		gen = append(gen, next)
		if len(gen) == n {
			break
		}
		if err := m.run(ctx, gen[len(gen)-1:], len(ids)+len(gen)-1, pick); err != nil {
			return "", nil, err
		}
	}
	// Decode prompt and continuation together so the continuation keeps a
	// leading space that Decode drops at the start of a text.
	all := m.tok.Decode(append(slices.Clone(ids), gen...))
	text, ok := strings.CutPrefix(all, m.tok.Decode(ids))
	if !ok {
		text = m.tok.Decode(gen)
	}
	return text, gen, nil
}
