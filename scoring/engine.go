// Package scoring turns an engine's logits into llama-perplexity's
// statistics: token windows, NLL and KLD accumulators, compact KLD base
// files, and the JSON report. It does no terminal output.
package scoring

import "context"

// HeadRows is how many hidden rows the LM head and the reductions take at once.
const HeadRows = 128

// ModelInfo describes the loaded model for windows, checks and the report.
type ModelInfo struct {
	Path         string         `json:"path"`
	Size         int64          `json:"size"`
	Architecture string         `json:"architecture"`
	TypeCounts   map[string]int `json:"type_histogram"` // tensor type name → tensor count
	VocabSize    int            `json:"vocab_size"`
	HiddenSize   int            `json:"hidden_size"`
	AddBOS       bool           `json:"add_bos"`
	BOS          int32          `json:"bos"`
}

// RowRequest asks the head reduction of one hidden row for the logits of IDs
// (the next token first, then a base's top-k ids when comparing) and, when
// TopK > 0, for the row's TopK largest logits.
type RowRequest struct {
	IDs  []int32
	TopK int
}

// RowResult is what the pick and topk reductions return for one row. Picked
// holds the logits of the requested IDs in order; TopIDs/TopLogits hold the
// top-k pairs in descending logit order (ties: lower id first).
type RowResult struct {
	Max       float32 // largest logit
	ArgMax    int32   // first id attaining Max
	SumExp    float64 // Σ_j f64(expf(l_j − Max))
	Picked    []float32
	TopIDs    []int32
	TopLogits []float32
}

// Engine is what Run needs from an inference engine. engine.Model
// implements it; tests use small fakes.
type Engine interface {
	Info() ModelInfo
	// Tokenize tokenizes a whole text as llama-perplexity does: BOS when the
	// vocab asks for it, special tokens never parsed out of the text.
	Tokenize(text string) ([]int32, error)
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
	// Config describes how the engine runs, for the report's config object.
	Config() EngineConfig
}

// EngineConfig is the report's config object: how the engine ran.
type EngineConfig struct {
	DeviceArch            string            `json:"device_arch"` // "cpu" for the Go backend
	PrefillAttention      string            `json:"prefill_attention"`
	PrefillAttentionScale float64           `json:"prefill_attention_scale"`
	KVCacheDType          string            `json:"kv_cache_dtype"`
	KVCapacity            int               `json:"kv_capacity"`
	BatchSize             int               `json:"batch_size"`
	UBatchSize            int               `json:"ubatch_size"`
	HeadRows              int               `json:"head_rows"`
	CPUFallbackAllowed    bool              `json:"cpu_fallback_allowed"`
	Threads               int               `json:"threads"`
	Backend               string            `json:"backend"`
	Kernels               map[string]string `json:"kernels,omitempty"` // op → variant that ran
	Model                 ModelInfo         `json:"model"`
}
