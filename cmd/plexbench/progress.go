package main

// progress.go owns `--progress jsonl`: one JSON object per run event (a
// line each: started, every window, finished) for scripts and dashboards,
// on stderr or in a file, beside the human progress line it replaces. The
// lines are scoring.Event's own JSON, so they cannot drift from it.

import (
	"encoding/json"
	"io"

	"plexbench/scoring"
)

// jsonlProgress writes events to w, one JSON object per line.
type jsonlProgress struct {
	enc *json.Encoder
	err error // the first write error; later events are dropped
}

func newJSONLProgress(w io.Writer) *jsonlProgress { return &jsonlProgress{enc: json.NewEncoder(w)} }

func (p *jsonlProgress) event(e scoring.Event) {
	if p.err == nil {
		p.err = p.enc.Encode(e)
	}
}
