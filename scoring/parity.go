package scoring

// parity.go owns tokenizer parity: before two runs' tokens are compared
// token by token (a run against a base, B against A's base), their
// tokenizers must be the same (their hashes, where both are known) and
// their token streams over the text equal. Otherwise the comparison is
// refused with the first differing position, both tokenizations around
// it, decoded, and the two hashes; a caller that allows the mismatch
// compares by bits per byte only.

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ErrTokenizerMismatch marks two sides whose tokenizers or token streams
// differ, so that nothing token by token (KLD, paired statistics) can
// compare them.
var ErrTokenizerMismatch = errors.New("tokenizers differ")

// TokenSide is one side of a parity check.
type TokenSide struct {
	Name   string // what it is, for messages: "this run", "the base f32.kld", "A"
	Model  string // its model file's name; "" when unknown
	Hash   string // its tokenizer's hash (ModelInfo.TokenizerSHA256); "" when unknown
	Tokens []int32
	// Decode renders ids as text; nil shows them as numbers.
	Decode func([]int32) string
	// Base: the side is a recorded base, whose own tokens a run scores
	// when it is given no text.
	Base bool
}

// TokenParity is nil when a and b have the same tokenizer (or one hash is
// unknown) and the same tokens; else an error wrapping
// ErrTokenizerMismatch that says where they first differ.
func TokenParity(a, b TokenSide) error {
	pos := firstDifference(a.Tokens, b.Tokens)
	sameTok := a.Hash == "" || b.Hash == "" || a.Hash == b.Hash
	if sameTok && pos < 0 {
		return nil
	}
	what := "token ids differ"
	if !sameTok {
		what = "tokenizers differ"
	}
	msg := fmt.Sprintf("%s: %s and %s", what, a.describe(), b.describe())
	if pos < 0 {
		msg += fmt.Sprintf(": the %d tokens agree, but another text could tokenize differently", len(a.Tokens))
	} else {
		msg += fmt.Sprintf(": first different at token %d (of %d and %d): %s %s, %s %s", pos, len(a.Tokens), len(b.Tokens),
			a.Name, around(a, pos), b.Name, around(b, pos))
	}
	return tokenMismatch(msg + "; " + parityFix(a, b))
}

// parityFix is what to do about a and b's mismatch: with one tokenizer the
// texts differ, so the fix is the same text; across tokenizers, comparing
// by bits per byte.
func parityFix(a, b TokenSide) string {
	const bytesOnly = "compare them by bits per byte only (--allow-tokenizer-mismatch)"
	sameText := "score the same text on both"
	if a.Base || b.Base {
		sameText = "use the base's text (leave out --perplexity and --perplexity-tokens to score the base's own tokens)"
	}
	switch {
	case a.Hash == "" || b.Hash == "":
		return "if the texts differ, " + sameText + "; if the tokenizers do, " + bytesOnly
	case a.Hash != b.Hash:
		return bytesOnly
	}
	return "the tokenizer is the same, so the texts differ: " + sameText
}

// tokenMismatch is an error that is ErrTokenizerMismatch with its own text.
type tokenMismatch string

func (e tokenMismatch) Error() string        { return string(e) }
func (e tokenMismatch) Is(target error) bool { return target == ErrTokenizerMismatch }

// firstDifference is the first index where a and b differ (one ending
// counts); -1 when they are equal.
func firstDifference(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func shortHash(h string) string {
	if h == "" {
		return "unknown"
	}
	return h[:min(len(h), 12)] + "…"
}

// describe is the side's name, model and tokenizer hash.
func (s TokenSide) describe() string {
	m := ""
	if s.Model != "" {
		m = s.Model + ", "
	}
	return fmt.Sprintf("%s (%stokenizer %s)", s.Name, m, shortHash(s.Hash))
}

// parityContext is how many tokens around the first difference are shown.
const parityContext = 3

// around is s's tokens around pos, each decoded and separated by '|',
// the one at pos in brackets: `" upon| a|[ time]| there"`.
func around(s TokenSide, pos int) string {
	lo, hi := max(0, pos-parityContext), min(len(s.Tokens), pos+parityContext+1)
	var parts []string
	for i := lo; i < hi; i++ {
		p := piece(s, i)
		if i == pos {
			p = "[" + p + "]"
		}
		parts = append(parts, p)
	}
	if pos >= len(s.Tokens) {
		parts = append(parts, "[end]")
	}
	out := fmt.Sprintf("%q", strings.Join(parts, "|"))
	if lo > 0 {
		out = "…" + out
	}
	if hi < len(s.Tokens) {
		out += "…"
	}
	return out
}

// piece is token i of s as text: what it adds to the decoding of the
// tokens before it (from one token back, so SPM's leading space at a
// text's start is dropped only there); its id when s has no decoder.
func piece(s TokenSide, i int) string {
	if s.Decode == nil {
		return fmt.Sprintf("#%d", s.Tokens[i])
	}
	w := max(0, i-1)
	before := s.Decode(slices.Clone(s.Tokens[w:i]))
	return strings.TrimPrefix(s.Decode(slices.Clone(s.Tokens[w:i+1])), before)
}

// decoder is what an engine that can render its tokens as text has;
// engine.Model does, test fakes need not.
type decoder interface{ Decode(ids []int32) string }

// decodeOf is eng's Decode; nil when it has none.
func decodeOf(eng Engine) func([]int32) string {
	if d, ok := eng.(decoder); ok {
		return d.Decode
	}
	return nil
}

// allowMismatch reports whether err is a tokenizer mismatch the request
// allows; the run then goes on without its base and says so.
func (r *runner) allowMismatch(err error) bool {
	if !r.req.AllowTokenizerMismatch || !errors.Is(err, ErrTokenizerMismatch) {
		return false
	}
	r.mismatch = err.Error()
	return true
}

// checkParity checks the run's tokens (text, those of the text or of the
// request; nil: it scores the base's, and only the tokenizers can
// differ) against the base it compares with. An allowed mismatch drops
// the base, keeping its geometry for the run, which then needs tokens of
// its own.
func (r *runner) checkParity(text []int32) error {
	b := sourceFile(r.base)
	if b == nil { // none, or one openSource refused and the request allows
		if r.mismatch != "" && text == nil {
			return badRequest("--allow-tokenizer-mismatch scores the text with this model's tokenizer: give the text (--perplexity)")
		}
		return nil
	}
	run := text
	if run == nil {
		run = b.Tokens
	}
	if b.Format == BaseFormatLlama && len(run) > len(b.Tokens) {
		run = run[:len(b.Tokens)] // llama.cpp keeps only the n_chunk·C tokens it scored
	}
	runSide := TokenSide{Name: "this run", Model: filepath.Base(r.info.Path), Hash: r.info.TokenizerSHA256,
		Tokens: run, Decode: decodeOf(r.eng)}
	baseSide := TokenSide{Name: "the base " + filepath.Base(b.Name), Model: b.Header.Meta.ModelFile,
		Hash: b.Header.Meta.Config.Model.TokenizerSHA256, Tokens: b.Tokens, Decode: r.req.BaseDecode, Base: true}
	if baseSide.Decode == nil && (baseSide.Hash == "" || baseSide.Hash == runSide.Hash) {
		baseSide.Decode = runSide.Decode // the same vocabulary, or none known: read with this one
	}
	err := TokenParity(runSide, baseSide)
	if err == nil {
		return nil
	}
	if !r.allowMismatch(err) {
		return fmt.Errorf("%w: %s: %w", ErrBaseMismatch, b.Name, err)
	}
	r.req.takeGeometry(&b.Header)
	if text == nil {
		return badRequest("--allow-tokenizer-mismatch scores the text with this model's tokenizer: give the text (--perplexity)")
	}
	b.Close()
	r.base, r.req.KLDBase = nil, ""
	return nil
}
