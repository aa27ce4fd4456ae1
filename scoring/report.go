package scoring

// report.go owns the JSON report of a run (the "lse.perplexity" object and
// its kld object). Writing it is outfile's job.

import (
	"encoding/json"
	"fmt"
	"math"
)

// ReportObject is the report's "object" value.
const ReportObject = "lse.perplexity"

// Report is the result of a run. Field names and JSON tags follow
// lse-perplexity's report; fields past those are extras.
type Report struct {
	Object                string  `json:"object"`
	Tokens                int     `json:"tokens"`
	TokenIDsSHA256        string  `json:"token_ids_sha256"`
	Method                string  `json:"method"`
	Ctx                   int     `json:"ctx"`
	Stride                int     `json:"stride"`
	ChunkLimit            int     `json:"chunk_limit"` // the request's chunks; 0 = all
	WindowsTotal          int     `json:"windows_total"`
	WindowsScored         int     `json:"windows_scored"`
	ScoredTokens          int     `json:"scored_tokens"`
	MeanNLL               float64 `json:"mean_nll"`
	Perplexity            float64 `json:"perplexity"`
	PerplexityUncertainty float64 `json:"perplexity_uncertainty"`
	// TextBytes is the UTF-8 bytes of text the scored tokens cover (stats.go
	// BitsPerByte); BitsPerByte is Σ NLL / (ln 2 · TextBytes) with the
	// perplexity's relative ±.
	TextBytes              int64          `json:"text_bytes"`
	BitsPerByte            float64        `json:"bits_per_byte"`
	BitsPerByteUncertainty float64        `json:"bits_per_byte_uncertainty"`
	ElapsedSeconds         float64        `json:"elapsed_seconds"`
	PrefillTokens          int            `json:"prefill_tokens"`
	PrefillTokensPerSecond float64        `json:"prefill_tokens_per_second"`       // over elapsed − progress_held
	PrefillAttentionKept   float64        `json:"prefill_attention_kept"`          // fraction of causal attention blocks computed, over every window
	ProgressHeldSeconds    float64        `json:"progress_held_seconds,omitempty"` // time the progress callback held the run (a paused TUI)
	Config                 EngineConfig   `json:"config"`
	Text                   string         `json:"text,omitempty"`         // the text's path, when known
	TextSHA256             string         `json:"text_sha256,omitempty"`  // the scored text's SHA-256, when scored from a text
	KLDBaseOut             string         `json:"kld_base_out,omitempty"` // base recorded by this run
	KLDBaseTopK            int            `json:"kld_base_top_k,omitempty"`
	KLDBaseFormat          string         `json:"kld_base_format,omitempty"` // "llama" when kld_base_out is llama.cpp's format
	KLD                    *KLDReport     `json:"kld,omitempty"`
	Windows                []WindowReport `json:"windows,omitempty"`
	TokenIDs               []int32        `json:"token_ids,omitempty"`
	// TokenizerMismatch says how the base the run named differs from it in
	// tokenizer or tokens, when the run was allowed to go on without it:
	// it is then compared by bits per byte only (parity.go).
	TokenizerMismatch string   `json:"tokenizer_mismatch,omitempty"`
	Partial           bool     `json:"partial,omitempty"`
	PartialReason     string   `json:"partial_reason,omitempty"`
	Warnings          []string `json:"warnings,omitempty"`
	// StoppedEarly is set when a stopping rule (seqstop.go) ended the run
	// before its last window: the report is complete over the windows
	// scored. StopRule is where a run's rule stood at its last window.
	StoppedEarly *StopReport `json:"stopped_early,omitempty"`
	StopRule     *StopReport `json:"stop_rule,omitempty"`
	// Shard and Shards say the run scored only the windows with index
	// Shard mod Shards (shard.go); Sums then carries its raw sums.
	Shard  int      `json:"shard,omitempty"`
	Shards int      `json:"shards,omitempty"`
	Sums   *RunSums `json:"sums,omitempty"`
	// Record is set on reports kept as records (record.go).
	Record *RecordInfo `json:"record,omitempty"`
	// Trace is the run's per-token trace (trace.go): records keep it in a
	// sidecar, not in the JSON.
	Trace *TokenTrace `json:"-"`
	// Floor is what `plexbench floor` measured: the model against its own
	// bases (floor.go).
	Floor *FloorReport `json:"floor,omitempty"`
	// Noise is what `plexbench noise` measured: the model under changes
	// that must not change quality (noise.go).
	Noise *NoiseReport `json:"noise,omitempty"`
	// HellaSwag is a --hellaswag run's result (hellaswag.go); such a
	// report's method is "hellaswag" and its perplexity fields are empty.
	HellaSwag *HellaSwagReport `json:"hellaswag,omitempty"`
	// Winogrande and MultipleChoice are a --winogrande or a
	// --multiple-choice run's (winogrande.go, multichoice.go), with their
	// methods.
	Winogrande     *ChoiceReport `json:"winogrande,omitempty"`
	MultipleChoice *ChoiceReport `json:"multiple_choice,omitempty"`
	// Corpora, in a run of several texts, is each text's own report in the
	// order given, and CorporaAverage their averages (corpora.go); such a
	// report's own perplexity fields are empty and left out of its JSON.
	Corpora        []Report        `json:"corpora,omitempty"`
	CorporaAverage *CorporaAverage `json:"corpora_average,omitempty"`
}

// ShardSpec is the report's shard ("" for none).
func (r *Report) ShardSpec() ShardSpec {
	if r.Shards == 0 {
		return ShardSpec{}
	}
	return ShardSpec{I: r.Shard, N: r.Shards}
}

// WindowReport is one scored chunk or window. Begin/End are token indices
// of the text ([Begin, End)); FirstTarget is the index of the first scored
// token. MeanKLD and SameTop are set only when comparing against a base.
type WindowReport struct {
	Index       int     `json:"index"`
	Begin       int     `json:"begin"`
	End         int     `json:"end"`
	FirstTarget int     `json:"first_target"`
	Scored      int     `json:"scored"`
	NLLSum      float64 `json:"nll_sum"`
	MeanNLL     float64 `json:"mean_nll"`
	Perplexity  float64 `json:"perplexity"`
	Seconds     float64 `json:"seconds"`
	// AttentionKept is the fraction of the window's causal (query block,
	// key block, head) attention blocks prefill computed, over every layer:
	// 1 for dense, FlashPrefill's selection otherwise.
	AttentionKept float64 `json:"attention_kept"`
	// TextBytes and BitsPerByte are the window's share of the report's;
	// absent in records written before them.
	TextBytes   int64    `json:"text_bytes,omitempty"`
	BitsPerByte float64  `json:"bits_per_byte,omitempty"`
	MeanKLD     *float64 `json:"mean_kld,omitempty"`
	SameTop     *float64 `json:"same_top,omitempty"`
	// NLLSumSq is Σ of the squared token NLLs (float64), so a reader can
	// follow the running perplexity ± window by window; absent in records
	// written before it.
	NLLSumSq float64 `json:"nll_sum_sq,omitempty"`
}

// KLDReport is the comparison against a recorded base. Probabilities and
// fractions are fractions (not percent), as in golden.json. KLD is over
// the base's top-k ids plus one "rest" outcome (see stats.go).
type KLDReport struct {
	Base                    string  `json:"base"`
	BaseFormat              string  `json:"base_format,omitempty"` // "llama": llama.cpp's base, full vocabulary
	TopK                    int     `json:"top_k"`
	Tokens                  int     `json:"tokens"`
	BasePerplexity          float64 `json:"base_perplexity"`
	Perplexity              float64 `json:"perplexity"`
	DeltaPerplexity         float64 `json:"delta_perplexity"`
	PerplexityRatio         float64 `json:"perplexity_ratio"`
	MeanLogRatio            float64 `json:"mean_log_ratio"`
	MeanLogRatioUncertainty float64 `json:"mean_log_ratio_uncertainty"`
	MeanKLD                 float64 `json:"mean_kld"`
	MeanKLDUncertainty      float64 `json:"mean_kld_uncertainty"`
	KLDP99                  float64 `json:"kld_p99"`
	KLDMax                  float64 `json:"kld_max"`
	SameTop                 float64 `json:"same_top"`
	SameTopUncertainty      float64 `json:"same_top_uncertainty"`
	MeanDeltaP              float64 `json:"mean_delta_p"`
	MeanDeltaPUncertainty   float64 `json:"mean_delta_p_uncertainty"`
	RMSDeltaP               float64 `json:"rms_delta_p"`
	MeanBaseTopMass         float64 `json:"mean_base_top_mass"`

	// Method and TopKOverlap, for a run on a served model (RowsEngine):
	// KLDNamedIDs or KLDTopKOverlap, and the fraction of the base's ids
	// the server returned a log-probability for.
	Method      string   `json:"method,omitempty"`
	TopKOverlap *float64 `json:"top_k_overlap,omitempty"`

	// Extras beyond lse-perplexity's kld object.
	BasePerplexityUncertainty  float64 `json:"base_perplexity_uncertainty"`
	PerplexityUncertainty      float64 `json:"perplexity_uncertainty"`
	DeltaPerplexityUncertainty float64 `json:"delta_perplexity_uncertainty"`
	PerplexityRatioUncertainty float64 `json:"perplexity_ratio_uncertainty"`
	PPLCorrelation             float64 `json:"ppl_correlation"` // Pearson correlation of per-token NLLs
	RMSDeltaPUncertainty       float64 `json:"rms_delta_p_uncertainty"`
	// MeanKLDUncertaintyCR1 is the window-clustered (CR1) standard error of
	// mean_kld: tokens of one window are not independent.
	MeanKLDUncertaintyCR1 float64 `json:"mean_kld_uncertainty_cr1"`
	// Top5Agreement is the fraction of tokens whose run argmax is among the
	// base's five most likely ids (its top-k when k < 5).
	Top5Agreement            float64           `json:"top5_agreement"`
	Top5AgreementUncertainty float64           `json:"top5_agreement_uncertainty"`
	KLDPercentiles           KLDPercentiles    `json:"kld_percentiles"`
	DeltaPPercentiles        DeltaPPercentiles `json:"delta_p_percentiles"`
	NonFiniteTokens          int               `json:"nonfinite_tokens"`
	NonFiniteNote            string            `json:"nonfinite_note,omitempty"`
	// Histogram counts the finite per-token KLDs (histogram.go).
	Histogram *KLDHistogram `json:"histogram,omitempty"`
	// TopKCoarsened is, against a llama.cpp base when asked, the top-k KLD
	// of the same tokens beside the full-vocabulary one (floor.go).
	TopKCoarsened *CoarseningReport `json:"top_k_coarsened,omitempty"`
	// TopKCoarsenedByK is the same at each of the request's
	// kld_coarsen_top_ks, by ascending k.
	TopKCoarsenedByK []CoarseningReport `json:"top_k_coarsened_by_k,omitempty"`
}

// KLDPercentiles are llama.cpp's KLD percentile rows (f32 interpolation).
type KLDPercentiles struct {
	Max    float64 `json:"max"`
	P99_9  float64 `json:"p99_9"`
	P99    float64 `json:"p99"`
	P95    float64 `json:"p95"`
	P90    float64 `json:"p90"`
	Median float64 `json:"median"`
	P10    float64 `json:"p10"`
	P5     float64 `json:"p5"`
	P1     float64 `json:"p1"`
	P0_1   float64 `json:"p0_1"`
	Min    float64 `json:"min"`
}

// DeltaPPercentiles are llama.cpp's Δp percentile rows, as fractions.
type DeltaPPercentiles struct {
	Max    float64 `json:"max"`
	P99_9  float64 `json:"p99_9"`
	P99    float64 `json:"p99"`
	P95    float64 `json:"p95"`
	P90    float64 `json:"p90"`
	P75    float64 `json:"p75"`
	Median float64 `json:"median"`
	P25    float64 `json:"p25"`
	P10    float64 `json:"p10"`
	P5     float64 `json:"p5"`
	P1     float64 `json:"p1"`
	P0_1   float64 `json:"p0_1"`
	Min    float64 `json:"min"`
}

// JSON encodes the report with two-space indentation and a final newline.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("perplexity report: %w", err)
	}
	return append(b, '\n'), nil
}

// sanitize replaces non-finite numbers, which JSON cannot carry, by 0 and
// says so in a warning.
func (rep *Report) sanitize() {
	bad := 0
	fix := func(x *float64) {
		if math.IsNaN(*x) || math.IsInf(*x, 0) {
			*x = 0
			bad++
		}
	}
	fix(&rep.MeanNLL)
	fix(&rep.Perplexity)
	fix(&rep.PerplexityUncertainty)
	fix(&rep.BitsPerByte)
	fix(&rep.BitsPerByteUncertainty)
	for i := range rep.Windows {
		fix(&rep.Windows[i].MeanNLL)
		fix(&rep.Windows[i].Perplexity)
	}
	if k := rep.KLD; k != nil {
		for _, p := range []*float64{&k.BasePerplexity, &k.Perplexity, &k.DeltaPerplexity, &k.PerplexityRatio,
			&k.PerplexityRatioUncertainty, &k.DeltaPerplexityUncertainty, &k.PerplexityUncertainty,
			&k.BasePerplexityUncertainty, &k.PPLCorrelation} {
			fix(p)
		}
	}
	if bad > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d non-finite statistics (overflow) were written as 0", bad))
	}
}
