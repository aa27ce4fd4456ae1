package scoring

// events.go owns the progress events Run sends while it scores: one Started,
// one WindowDone per finished window, one Finished. The CLI and the TUI
// render them; scoring itself never prints.

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// EventKind says which point of a run an Event reports.
type EventKind int

const (
	// EventStarted is sent once, after the windows are planned and before
	// the first prefill. Window and the running statistics are empty.
	EventStarted EventKind = iota + 1
	// EventWindowDone is sent after each scored window.
	EventWindowDone
	// EventFinished is sent once when the run ends, stopped early or not;
	// Partial and Reason say which.
	EventFinished
)

func (k EventKind) String() string {
	switch k {
	case EventStarted:
		return "started"
	case EventWindowDone:
		return "window_done"
	case EventFinished:
		return "finished"
	}
	return "unknown"
}

// Event is one progress report. Events are values: a receiver may keep
// them. Its JSON (MarshalJSON) is one line of `--progress jsonl`.
type Event struct {
	Kind EventKind `json:"event"`

	Method string `json:"method"` // "chunks" or "sliding"
	Ctx    int    `json:"ctx"`
	Stride int    `json:"stride"`

	WindowsDone  int `json:"windows_done"`
	WindowsTotal int `json:"windows_total"` // windows the run will score (after the chunk limit)
	ScoredDone   int `json:"scored_done"`   // tokens scored so far
	ScoredTotal  int `json:"scored_total"`  // tokens the run will score
	PrefillDone  int `json:"prefill_done"`  // tokens sent through prefill so far
	PrefillTotal int `json:"prefill_total"` // tokens the run will send through prefill, context included

	// Elapsed and ETA (the remaining prefill tokens at the mean rate; 0
	// when unknown) are elapsed_seconds and eta_seconds in JSON.
	Elapsed time.Duration `json:"-"`
	ETA     time.Duration `json:"-"`
	// TokensPerSecond is the prefill rate of the last window alone;
	// MeanTokensPerSecond the rate over the whole run so far. Both count
	// every token sent through prefill.
	TokensPerSecond     float64 `json:"tokens_per_second,omitempty"`
	MeanTokensPerSecond float64 `json:"mean_tokens_per_second"`

	// Running statistics over every token scored so far (0 before any).
	Perplexity            float64 `json:"perplexity"`
	PerplexityUncertainty float64 `json:"perplexity_uncertainty"`
	MeanNLL               float64 `json:"mean_nll"`
	// BitsPerByte and its ± are over the text the tokens scored so far
	// cover (BitsPerByte); 0 before any.
	BitsPerByte            float64 `json:"bits_per_byte,omitempty"`
	BitsPerByteUncertainty float64 `json:"bits_per_byte_uncertainty,omitempty"`

	// AttentionKept is the fraction of causal attention blocks prefill
	// computed over the windows so far (1 for dense; 0 before any).
	AttentionKept float64 `json:"attention_kept,omitempty"`

	// Window is the window that just finished (EventWindowDone only).
	Window *WindowReport `json:"window,omitempty"`
	// KLD is the running comparison against a base; nil when not comparing.
	KLD *KLDSummary `json:"kld,omitempty"`
	// Stop is the stopping rule's interval (WindowDone, with a rule only).
	Stop *StopProgress `json:"stop,omitempty"`

	// Choice is a multiple-choice run's running accuracy (choice.go); nil
	// otherwise. Method says which mode.
	Choice *ChoiceProgress `json:"choice,omitempty"`

	// Started only: the windows taken from a resumed run's journal
	// (WindowsDone counts them too).
	Resumed int `json:"resumed,omitempty"`
	// Started only, when the resumed journal was begun on another backend
	// or device: where it was begun and where this run computes ("cpu",
	// "cuda (sm_90)"): the Resumed windows were computed there (or in a
	// resume since: the journal names only where its run began).
	ResumedFrom string `json:"resumed_from,omitempty"`
	ResumedOn   string `json:"resumed_on,omitempty"`
	// Started only, when the run records a base: the bytes each scored
	// token's record takes in it (BaseRecordBytes for a top-k base).
	BaseOutBytesPerToken int `json:"base_out_bytes_per_token,omitempty"`

	// Finished only: whether the run stopped before its last window, and why.
	Partial bool   `json:"partial,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// StoppedEarly (Finished only) is the stopping rule that ended the run.
	StoppedEarly *StopReport `json:"stopped_early,omitempty"`

	// Corpus, in a run of several corpora, is the one this event's run
	// scores (set by the caller that runs them; scoring never does).
	Corpus *CorpusStep `json:"corpus,omitempty"`
}

// CorpusStep is which corpus of a run of several an event is about:
// Index of Of (from 1), and its text's path.
type CorpusStep struct {
	Index int    `json:"index"`
	Of    int    `json:"of"`
	Text  string `json:"text"`
}

// MarshalJSON encodes e with its durations in seconds.
func (e Event) MarshalJSON() ([]byte, error) {
	type fields Event // without this method
	return json.Marshal(struct {
		fields
		ElapsedSeconds float64 `json:"elapsed_seconds"`
		ETASeconds     float64 `json:"eta_seconds"`
	}{fields(e), e.Elapsed.Seconds(), e.ETA.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Event) UnmarshalJSON(data []byte) error {
	type fields Event
	var v struct {
		*fields
		ElapsedSeconds float64 `json:"elapsed_seconds"`
		ETASeconds     float64 `json:"eta_seconds"`
	}
	v.fields = (*fields)(e)
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	e.Elapsed = time.Duration(math.Round(v.ElapsedSeconds * float64(time.Second)))
	e.ETA = time.Duration(math.Round(v.ETASeconds * float64(time.Second)))
	return nil
}

// MarshalText is the kind's name.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *EventKind) UnmarshalText(b []byte) error {
	for c := EventStarted; c <= EventFinished; c++ {
		if c.String() == string(b) {
			*k = c
			return nil
		}
	}
	return fmt.Errorf("unknown event %q", b)
}

// KLDSummary is the part of a KLD comparison a live view, the A/B
// verdict and the progress events show: from the running statistics
// (KLDStats.Snapshot) or a finished report (KLDReport.Summary).
// Percentiles use llama.cpp's f32 interpolation over the finite values.
type KLDSummary struct {
	Tokens             int     `json:"tokens"` // tokens compared so far
	MeanKLD            float64 `json:"mean_kld"`
	MeanKLDUncertainty float64 `json:"mean_kld_uncertainty"`
	P50                float64 `json:"kld_p50"`
	P90                float64 `json:"kld_p90"`
	P99                float64 `json:"kld_p99"`
	Max                float64 `json:"kld_max"`
	SameTop            float64 `json:"same_top"` // fraction
	SameTopUncertainty float64 `json:"same_top_uncertainty"`
	MeanDeltaP         float64 `json:"mean_delta_p"`     // fraction, p − p_base of the correct token
	NonFinite          int     `json:"nonfinite_tokens"` // tokens whose KLD was not finite (excluded)
}

// event fills the run totals into e and sends it.
func (r *runner) event(e Event) {
	if r.req.Progress == nil {
		return
	}
	e.Method, e.Ctx, e.Stride = r.plan.Method, r.plan.Ctx, r.plan.Stride
	e.WindowsTotal, e.WindowsDone = len(r.todo.Windows), len(r.windows)
	e.ScoredTotal, e.ScoredDone = r.todo.Scored, r.scoredDone
	e.PrefillTotal, e.PrefillDone = r.todo.PrefillToks, r.prefillDone
	if r.blocks.Total > 0 {
		e.AttentionKept = r.blocks.Fraction()
	}
	eventTiming(&e, r.start, r.loopStart, r.held, r.prefillResumed)
	res := r.nll.Result()
	e.MeanNLL, e.Perplexity, e.PerplexityUncertainty = res.MeanNLL, res.Perplexity, res.Uncertainty
	e.BitsPerByte, e.BitsPerByteUncertainty = BitsPerByte(res, r.textBytes)
	if r.kld != nil && r.kld.Tokens() > 0 {
		s := r.kld.Snapshot()
		e.KLD = &s
	}
	if r.stop != nil && e.Kind == EventWindowDone {
		e.Stop = r.stop.progress()
	}
	t0 := time.Now()
	r.req.Progress(e)
	r.held += time.Since(t0)
}

// eventTiming sets e's elapsed time, mean prefill rate and ETA from
// e.PrefillDone and e.PrefillTotal: resumed of the tokens done were taken
// from a journal and held is the time the progress callback kept the run
// waiting, both left out of the rate.
func eventTiming(e *Event, start, loopStart time.Time, held time.Duration, resumed int) {
	e.Elapsed = time.Since(start)
	if loop := (time.Since(loopStart) - held).Seconds(); loop > 0 && e.PrefillDone > resumed {
		e.MeanTokensPerSecond = float64(e.PrefillDone-resumed) / loop
		left := float64(e.PrefillTotal - e.PrefillDone)
		e.ETA = time.Duration(left / e.MeanTokensPerSecond * float64(time.Second))
	}
}
