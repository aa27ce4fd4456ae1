// progress.go owns `--progress jsonl`: one JSON object per run event (a
// line each: started, every window, finished) for scripts and dashboards,
// on stderr or in a file, beside the human progress line it replaces.
package main

import (
	"encoding/json"
	"io"

	"plexbench/scoring"
)

// progressEvent is one line of --progress jsonl.
type progressEvent struct {
	Event        string  `json:"event"` // started, window_done, finished
	Method       string  `json:"method"`
	Ctx          int     `json:"ctx"`
	Stride       int     `json:"stride"`
	WindowsDone  int     `json:"windows_done"`
	WindowsTotal int     `json:"windows_total"`
	ScoredDone   int     `json:"scored_done"`
	ScoredTotal  int     `json:"scored_total"`
	PrefillDone  int     `json:"prefill_done"`
	PrefillTotal int     `json:"prefill_total"`
	ElapsedSec   float64 `json:"elapsed_seconds"`
	ETASec       float64 `json:"eta_seconds"`
	TokPerSec    float64 `json:"tokens_per_second,omitempty"` // the last window's prefill rate
	MeanTokSec   float64 `json:"mean_tokens_per_second"`
	Perplexity   float64 `json:"perplexity"`
	PerplexityPM float64 `json:"perplexity_uncertainty"`
	MeanNLL      float64 `json:"mean_nll"`

	Window *scoring.WindowReport `json:"window,omitempty"`
	KLD    *scoring.KLDSummary   `json:"kld,omitempty"`

	Partial bool   `json:"partial,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// jsonlProgress writes events to w, one JSON object per line.
type jsonlProgress struct {
	enc *json.Encoder
	err error // the first write error; later events are dropped
}

func newJSONLProgress(w io.Writer) *jsonlProgress { return &jsonlProgress{enc: json.NewEncoder(w)} }

func (p *jsonlProgress) event(e scoring.Event) {
	if p.err != nil {
		return
	}
	p.err = p.enc.Encode(progressEvent{
		Event: e.Kind.String(), Method: e.Method, Ctx: e.Ctx, Stride: e.Stride,
		WindowsDone: e.WindowsDone, WindowsTotal: e.WindowsTotal, ScoredDone: e.ScoredDone, ScoredTotal: e.ScoredTotal,
		PrefillDone: e.PrefillDone, PrefillTotal: e.PrefillTotal, ElapsedSec: e.Elapsed.Seconds(), ETASec: e.ETA.Seconds(),
		TokPerSec: e.TokensPerSecond, MeanTokSec: e.MeanTokensPerSecond, Perplexity: e.Perplexity,
		PerplexityPM: e.PerplexityUncertainty, MeanNLL: e.MeanNLL, Window: e.Window, KLD: e.KLD.Summary(),
		Partial: e.Partial, Reason: e.Reason,
	})
}
