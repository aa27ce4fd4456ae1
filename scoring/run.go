// run.go owns Run: planning the windows, driving the engine's prefill and
// head reductions, recording or comparing a KLD base, and the report.
package scoring

import (
	"context"
	"errors"
)

// ErrStopped is returned with a partial report when the context was
// cancelled: the run stopped after the window in flight. Callers should
// still write the report.
var ErrStopped = errors.New("perplexity run stopped early")

// Run scores req on eng. See Request for the fields.
func Run(ctx context.Context, eng Engine, req Request) (Report, error) {
	return Report{}, errors.New("scoring.Run: not implemented yet")
}
