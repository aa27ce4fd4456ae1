package scoring

// request.go owns the Request a run is given: the JSON request object of
// lse_perplexity plus a few Go-only fields, its defaults and its checks.

import (
	"errors"
	"fmt"
)

// Methods.
const (
	MethodChunks  = "chunks"  // llama-perplexity's non-overlapping chunks
	MethodSliding = "sliding" // windows every stride, each token scored once
)

// Defaults.
const (
	DefaultCtx  = 512 // llama-perplexity's -c default
	DefaultTopK = 32
	MaxTopK     = 1024
)

// Request is what to score and how. Zero values mean defaults: method
// chunks, ctx 512, stride = ctx, every window, top-k 32. When KLDBase is
// set, a zero Method/Ctx/Stride/Chunks means "as the base says" and a
// non-zero one must agree with the base.
type Request struct {
	Text   string  `json:"text,omitempty"`   // scored as one prompt, no chat template
	Tokens []int32 `json:"tokens,omitempty"` // instead of Text

	Method string `json:"method,omitempty"` // "chunks" (default) or "sliding"
	Ctx    int    `json:"ctx,omitempty"`    // tokens per chunk or window (default 512)
	Stride int    `json:"stride,omitempty"` // sliding only; default ctx; chunks: 0 or ctx
	Chunks int    `json:"chunks,omitempty"` // score only the first N windows; <= 0: all

	KLDBaseOut string `json:"kld_base_out,omitempty"` // record a base here
	KLDTopK    int    `json:"kld_top_k,omitempty"`    // ids per scored token in that base (1..1024, default 32)
	// KLDBaseFormat is the format of the base recorded: BaseFormatPlexbench
	// (default, top-k) or BaseFormatLlama (llama.cpp's full rows, chunks only).
	KLDBaseFormat string `json:"kld_base_format,omitempty"`
	KLDBase       string `json:"kld_base,omitempty"` // compare against this base
	// CoarsenTopK, with a llama.cpp base, also gives each token the top-k
	// KLD a plexbench base of this many ids would give (the report's
	// kld.top_k_coarsened): what a compact base sees of the full KLD.
	CoarsenTopK int `json:"kld_coarsen_top_k,omitempty"`
	// CoarsenTopKs are more such k, on the same tokens (the report's
	// kld.top_k_coarsened_by_k, in ascending k).
	CoarsenTopKs []int `json:"kld_coarsen_top_ks,omitempty"`

	// Shard, when set, scores only every Shard.N-th window (from Shard.I);
	// such a run cannot record a base.
	Shard ShardSpec `json:"-"`

	// IncludeWindows: nil or true puts the per-window array in the JSON.
	IncludeWindows  *bool `json:"include_windows,omitempty"`
	IncludeTokenIDs bool  `json:"include_token_ids,omitempty"`

	// Journal, when set, is the run journal's path (see journal.go): it is
	// appended and fsynced after each window. Resume continues the run it
	// records (same model file, text, protocol and engine config) from its
	// last complete window, or starts one when there is none. Without
	// Resume an existing journal is refused, never overwritten. The caller
	// removes it (RemoveJournal) once the outputs of a complete run are
	// written.
	Journal string `json:"-"`
	Resume  bool   `json:"-"`

	// AllowTokenizerMismatch: when the base's tokenizer or token stream
	// differs from this run's (TokenParity), score the text without the
	// base, in its geometry, instead of refusing: the two then compare by
	// bits per byte only, and the report says so (tokenizer_mismatch).
	AllowTokenizerMismatch bool `json:"-"`
	// BaseDecode, when set, renders the base's token ids as text (the
	// tokenizer of the model that recorded it) for a mismatch's message.
	BaseDecode func([]int32) string `json:"-"`

	// Stop, when active, ends the run between windows once its rule is met
	// (seqstop.go); KeepGoing, when set and true at that moment, lets the
	// run go on to its last window instead (the report's stop_rule says
	// where the rule was met: a live view's "keep going").
	Stop      StopRule    `json:"-"`
	KeepGoing func() bool `json:"-"`

	// TextPath names where Text came from, for messages and the report.
	TextPath string `json:"-"`
	// Progress, when set, receives events synchronously from Run's goroutine.
	Progress func(Event) `json:"-"`
}

// ErrBadRequest marks requests that cannot run as given.
var ErrBadRequest = errors.New("bad perplexity request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// takeGeometry fills the request's unset method, ctx, stride and chunk
// limit from h.
func (r *Request) takeGeometry(h *BaseHeader) {
	if r.Method == "" {
		r.Method = h.Method
	}
	if r.Ctx == 0 {
		r.Ctx = h.Ctx
	}
	if r.Stride == 0 {
		r.Stride = h.Stride
	}
	if r.Chunks <= 0 {
		r.Chunks = h.ChunkLimit
	}
}

// coarsening reports whether the request asks for a top-k coarsening.
func (r *Request) coarsening() bool { return r.CoarsenTopK > 0 || len(r.CoarsenTopKs) > 0 }

// windowsWanted reports whether the JSON should carry the windows array.
func (r *Request) windowsWanted() bool { return r.IncludeWindows == nil || *r.IncludeWindows }

// topK is the base's ids per scored token when recording.
func (r *Request) topK() int {
	if r.KLDTopK == 0 {
		return DefaultTopK
	}
	return r.KLDTopK
}

// check validates the fields that do not depend on the engine or a base.
func (r *Request) check() error {
	switch r.Method {
	case "", MethodChunks, MethodSliding:
	default:
		return badRequest("unknown method %q (want %s or %s)", r.Method, MethodChunks, MethodSliding)
	}
	if r.Ctx < 0 {
		return badRequest("ctx %d must be positive", r.Ctx)
	}
	if r.Stride < 0 {
		return badRequest("stride %d must be positive", r.Stride)
	}
	if r.KLDTopK < 0 || r.KLDTopK > MaxTopK {
		return badRequest("kld_top_k %d out of range 1..%d", r.KLDTopK, MaxTopK)
	}
	if r.CoarsenTopK < 0 || r.CoarsenTopK > MaxTopK {
		return badRequest("kld_coarsen_top_k %d out of range 1..%d", r.CoarsenTopK, MaxTopK)
	}
	for _, k := range r.CoarsenTopKs {
		if k < 1 || k > MaxTopK {
			return badRequest("kld_coarsen_top_ks: %d out of range 1..%d", k, MaxTopK)
		}
	}
	switch r.KLDBaseFormat {
	case "", BaseFormatPlexbench:
	case BaseFormatLlama:
		if r.Method == MethodSliding {
			return badRequest("a llama.cpp base holds chunks only, not the %s method", MethodSliding)
		}
	default:
		return badRequest("unknown base format %q (want %s or %s)", r.KLDBaseFormat, BaseFormatPlexbench, BaseFormatLlama)
	}
	if r.Text != "" && r.Tokens != nil {
		return badRequest("give text or tokens, not both")
	}
	if r.Text == "" && len(r.Tokens) == 0 && r.KLDBase == "" {
		if r.TextPath != "" {
			return badRequest("%s: text is empty", r.TextPath)
		}
		return badRequest("nothing to score: text and tokens are empty")
	}
	if s := r.Shard; s.N != 0 && (s.N < 0 || s.I < 0 || s.I >= s.N) {
		return badRequest("shard %d/%d: the index must be 0..n-1", s.I, s.N)
	}
	if r.Shard.N > 1 && r.KLDBaseOut != "" {
		return badRequest("a shard cannot record a KLD base; record the base with an unsharded run")
	}
	if r.Stop.Active() && r.Shard.N > 1 {
		return badRequest("a shard cannot stop early: the rule reads the run's windows in order")
	}
	if r.Stop.Active() && r.KLDBaseOut != "" && r.KLDBaseFormat == BaseFormatLlama {
		return badRequest("a llama.cpp base is recorded whole: it cannot be recorded by a run that may stop early")
	}
	if r.KLDBase != "" && r.KLDBaseOut != "" && r.KLDBase == r.KLDBaseOut {
		return badRequest("kld_base and kld_base_out are the same file %q", r.KLDBase)
	}
	return nil
}
