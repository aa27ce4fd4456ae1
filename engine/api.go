// Package engine runs a GGUF model's forward pass on the CPU: model
// configuration and weights, the prefill pass plan, the KV cache, and the
// LM head with its logit reductions. It knows nothing about scoring.
package engine

import "plexbench/kernels"

// HeadRows is how many hidden rows the LM head and the reductions take at once.
const HeadRows = 128

// ModelInfo describes the loaded model for windows, checks and the report.
type ModelInfo struct {
	Path         string         `json:"path"`
	Size         int64          `json:"size"`
	Architecture string         `json:"architecture"`
	LayerPattern string         `json:"layer_pattern,omitempty"` // e.g. "3×GDN + 1×attention, repeated 6×"
	TypeCounts   map[string]int `json:"type_histogram"`          // tensor type name → tensor count
	VocabSize    int            `json:"vocab_size"`
	HiddenSize   int            `json:"hidden_size"`
	AddBOS       bool           `json:"add_bos"`
	BOS          int32          `json:"bos"`
	// TokenizerSHA256 is the tokenizer's identity (tokenizer.Hash): models
	// that share it tokenize every text alike. Absent in older reports.
	TokenizerSHA256 string `json:"tokenizer_sha256,omitempty"`
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
// top-k pairs in descending logit order (ties: lower id first). The slices
// are owned by the caller and reused: HeadReduce fills them to length.
type RowResult struct {
	Max       float32 // largest logit
	ArgMax    int32   // first id attaining Max
	SumExp    float64 // Σ_j f64(expf(l_j − Max))
	Picked    []float32
	TopIDs    []int32
	TopLogits []float32
}

// Config is the report's config object: how the engine runs.
type Config struct {
	DeviceArch            string  `json:"device_arch"` // "cpu" for the Go backend
	PrefillAttention      string  `json:"prefill_attention"`
	PrefillAttentionScale float64 `json:"prefill_attention_scale"`
	KVCacheDType          string  `json:"kv_cache_dtype"`
	KVCapacity            int     `json:"kv_capacity"`
	BatchSize             int     `json:"batch_size"`
	UBatchSize            int     `json:"ubatch_size"`
	HeadRows              int     `json:"head_rows"`
	CPUFallbackAllowed    bool    `json:"cpu_fallback_allowed"`
	// DeviceOps ran on the GPU; CPUFallbackOps ran on the CPU under a
	// GPU backend (both empty on the CPU backend).
	DeviceOps      []string `json:"device_ops,omitempty"`
	CPUFallbackOps []string `json:"cpu_fallback_ops,omitempty"`
	// DeviceBLAS is the vendor BLAS the device's F16/BF16 products take at
	// prefill sizes ("cublas 12.4.5", "rocblas 4.2.4…"); absent when none
	// was loaded (then our own kernels run them) and on the CPU backend.
	DeviceBLAS  string            `json:"device_blas,omitempty"`
	Threads     int               `json:"threads"`
	Backend     string            `json:"backend"`
	Kernels     map[string]string `json:"kernels,omitempty"` // op → variant that ran
	CPUFeatures string            `json:"cpu_features"`      // what the kernels could use ("avx2 fma f16c")
	CPULevel    string            `json:"cpu_level"`         // PLEXBENCH_CPU in force: "native" or the masked level
	Model       ModelInfo         `json:"model"`
	// DeviceTraffic is the weight traffic of the device's passes, only on
	// a device that counts it (the emulated one under PLEXBENCH_EMU_TRAFFIC=1).
	DeviceTraffic *DeviceTraffic `json:"device_traffic,omitempty"`
	// FlashPrefill is every FlashPrefill parameter, when it ran.
	FlashPrefill *kernels.FlashPrefill `json:"flashprefill,omitempty"`
}
