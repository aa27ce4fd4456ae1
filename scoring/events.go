// events.go owns the progress events Run sends while it scores: one Started,
// one WindowDone per finished window, one Finished. The CLI and the TUI
// render them; scoring itself never prints.
package scoring

import "time"

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

// Event is one progress report. Events are values: a receiver may keep them.
type Event struct {
	Kind EventKind

	Method string // "chunks" or "sliding"
	Ctx    int
	Stride int

	WindowsTotal int // windows the run will score (after the chunk limit)
	WindowsDone  int
	ScoredTotal  int // tokens the run will score
	ScoredDone   int // tokens scored so far
	PrefillTotal int // tokens the run will send through prefill, context included
	PrefillDone  int // tokens sent through prefill so far

	Elapsed time.Duration
	// TokensPerSecond is the prefill rate of the last window alone;
	// MeanTokensPerSecond the rate over the whole run so far. Both count
	// every token sent through prefill.
	TokensPerSecond     float64
	MeanTokensPerSecond float64
	// ETA is the remaining prefill tokens at the mean rate; 0 when unknown.
	ETA time.Duration
	// AttentionKept is the fraction of causal attention blocks prefill
	// computed over the windows so far (1 for dense; 0 before any).
	AttentionKept float64

	// Window is the window that just finished (EventWindowDone only).
	Window *WindowReport

	// Running statistics over every token scored so far (0 before any).
	MeanNLL               float64
	Perplexity            float64
	PerplexityUncertainty float64

	// KLD is the running comparison against a base; nil when not comparing.
	KLD *KLDSnapshot

	// Started only: the windows taken from a resumed run's journal
	// (WindowsDone counts them too).
	Resumed int

	// Finished only: whether the run stopped before its last window, and why.
	Partial bool
	Reason  string
}

// KLDSnapshot is the running KL-divergence summary a live view shows.
// Percentiles use llama.cpp's f32 interpolation over the finite values.
type KLDSnapshot struct {
	Tokens             int     // tokens compared so far
	NonFinite          int     // tokens whose KLD was not finite (excluded)
	MeanKLD            float64 // nats
	MeanKLDUncertainty float64
	P50, P90, P99, Max float64 // KLD median, 90th, 99th percentile, maximum
	SameTop            float64 // fraction
	SameTopUncertainty float64
	MeanDeltaP         float64 // fraction, p − p_base of the correct token
	MeanLogRatio       float64 // mean(nll − base nll)
}
