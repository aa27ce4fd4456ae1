// Package scoring turns an engine's logits into llama-perplexity's
// statistics: token windows, NLL and KLD accumulators, compact KLD base
// files, and the JSON report. It does no terminal output.
package scoring

import (
	"context"

	"plexbench/engine"
)

// HeadRows is how many hidden rows the LM head and the reductions take at once.
const HeadRows = engine.HeadRows

// The engine's data types, named here so scoring code reads on its own.
type (
	ModelInfo    = engine.ModelInfo
	RowRequest   = engine.RowRequest
	RowResult    = engine.RowResult
	EngineConfig = engine.Config
	// AttentionBlocks counts the causal attention blocks a prefill kept.
	AttentionBlocks = engine.AttentionBlocks
)

// Engine is what Run needs from an inference engine. engine.Model
// implements it; tests use small fakes.
type Engine interface {
	Info() ModelInfo
	// Tokenize tokenizes a whole text as llama-perplexity does: BOS when the
	// vocab asks for it, special tokens never parsed out of the text.
	Tokenize(text string) ([]int32, error)
	// TokenBytes is, per token, how many bytes it adds to the detokenized
	// text: 0 for BOS and other control tokens, SPM's leading space at the
	// start left out, so that a run of tokens covers that many bytes of the
	// text it came from.
	TokenBytes(tokens []int32) []int32
	// Piece is a token's text as it renders after a normal token ("" for
	// control tokens): a token i of a text adds the last TokenBytes[i]
	// bytes of it. Records keep the pieces of the ids they list (trace.go).
	Piece(id int32) string
	// Prefill runs tokens from an empty KV cache through the pass plan and,
	// after each pass, calls emit with the final hidden rows (already through
	// the output norm) of the pass's positions >= from: pos is the position
	// of the first row, hidden holds n rows of Info().HiddenSize floats.
	// hidden is only valid during the call.
	Prefill(ctx context.Context, tokens []int32, from int, emit func(pos int, hidden []float32, n int) error) error
	// HeadReduce applies the LM head to n <= HeadRows hidden rows and runs the
	// pick/topk reductions for each, writing out[i] for reqs[i]. Nothing
	// vocabulary-sized is kept after it returns.
	HeadReduce(hidden []float32, n int, reqs []RowRequest, out []RowResult) error
	// PrefillBlocks counts the causal (query block, key block, head)
	// attention blocks the last Prefill computed, over every layer: all of
	// them for dense attention, the selected ones for FlashPrefill.
	PrefillBlocks() AttentionBlocks
	// Config describes how the engine runs, for the report's config object.
	Config() EngineConfig
}
