package scoring

// rowsengine.go owns the seam between the statistics and an engine that
// returns log-probabilities rather than hidden rows (a served model, see
// package served): RowsEngine, the LogProbRow it returns per scored
// position, and the run's window loop for it, which keeps up to
// RowsParallel windows in flight and scores them in order through the
// same scoreRow as the in-process engine.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// KLD methods (KLDReport.Method) of a run on a RowsEngine.
const (
	// KLDNamedIDs: the engine returned the log-probability of every base
	// id named per position: the exact (top-k coarsened) KLD.
	KLDNamedIDs = "named-ids"
	// KLDTopKOverlap: the engine returned only its own top-k; the KLD is
	// coarsened over the ids both top-k sets hold plus the rest, a lower
	// bound of the named-ids figure (data-processing inequality).
	KLDTopKOverlap = "top-k-overlap"
)

// LogProbRow is one scored position as a RowsEngine returns it.
type LogProbRow struct {
	// NLL is −ln p(the actual next token).
	NLL float64
	// TopIDs and TopLP are the position's most probable ids, most probable
	// first (at least one: the argmax), with their log-probabilities.
	TopIDs []int32
	TopLP  []float32
	// Named holds the log-probabilities of the ids the query named for
	// this position, in order; NaN where the engine returned none (an
	// engine that gives only its own top-k).
	Named []float32
}

// RowsQuery is what a RowsEngine is asked for, per scored position.
type RowsQuery struct {
	// Named, when not nil, holds per scored position the ids whose
	// log-probabilities the row's Named returns.
	Named [][]int32
	// TopK is how many of each position's top ids a base recorded needs
	// (0: none); every row returns at least its top id.
	TopK int
}

// RowsEngine is an engine that scores a window in one call and returns
// log-probabilities. Its Prefill and HeadReduce are never called by Run.
type RowsEngine interface {
	Engine
	// Rows scores input (a window's tokens, BOS applied, sent as ids):
	// out[i] is the row at position from+i, predicting input[from+i+1],
	// for every i < len(out) = len(input)−1−from. It is safe to call
	// concurrently.
	Rows(ctx context.Context, input []int32, from int, q RowsQuery, out []LogProbRow) error
	// RowsParallel is how many Rows calls a run keeps in flight.
	RowsParallel() int
	// MaxTopK is the most top ids a row can return; 0 when unknown.
	MaxTopK() int
	// NamesIDs says whether the engine returns the log-probabilities of
	// ids named per position (else only its own top-k: the KLD is then
	// KLDTopKOverlap's lower bound).
	NamesIDs() bool
}

// rowsEngineOf is eng as a RowsEngine; nil when it is not one.
func rowsEngineOf(eng Engine) RowsEngine {
	re, _ := eng.(RowsEngine)
	return re
}

// rowsPipe keeps a RowsEngine run's windows in flight, launched in plan
// order, each with its base records read into its own slots.
type rowsPipe struct {
	eng    RowsEngine
	ctx    context.Context
	cancel context.CancelFunc
	topK   int
	slots  int // base slots per pipe position: the longest window's scored rows
	next   int // the plan index of the next window to launch
	queue  []*rowsCall
	free   []int // pipe positions not in use
}

// rowsCall is one window's request.
type rowsCall struct {
	w     Window
	pos   int // pipe position: its base slots begin at pos*slots
	input []int32
	rows  []LogProbRow
	named [][]int32
	done  chan error
	t0    time.Time
}

// newRowsPipe is the pipe of r's run; the requests it makes outlive a
// cancelled run context only until the run's loop ends.
func (r *runner) newRowsPipe() *rowsPipe {
	par := max(1, r.rowsEng.RowsParallel())
	slots := 0
	for _, w := range r.plan.Windows {
		slots = max(slots, w.Scored)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.ctx))
	p := &rowsPipe{eng: r.rowsEng, ctx: ctx, cancel: cancel, slots: slots, topK: r.recordTopK()}
	for i := range par {
		p.free = append(p.free, i)
	}
	if r.base != nil {
		if g, ok := r.base.(interface{ grow(int) }); ok {
			g.grow(par * slots)
		}
	}
	return p
}

// stop abandons the requests in flight.
func (p *rowsPipe) stop() {
	p.cancel()
	for _, c := range p.queue {
		<-c.done
	}
	p.queue = nil
}

// fill launches windows from the first not yet launched (at or after
// from) until the pipe is full.
func (r *runner) fillPipe(from int) error {
	p := r.pipe
	p.next = max(p.next, from)
	for len(p.free) > 0 && p.next < len(r.plan.Windows) {
		w := r.plan.Windows[p.next]
		p.next++
		pos := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		c := &rowsCall{w: w, pos: pos, input: w.Input(r.tokens, nil), rows: make([]LogProbRow, w.Scored),
			done: make(chan error, 1), t0: time.Now()}
		if r.base != nil {
			k := r.base.topK()
			c.named = make([][]int32, w.Scored)
			for i := range c.named {
				c.named[i] = make([]int32, k)
				if err := r.base.next(pos*p.slots+i, c.named[i]); err != nil {
					p.free = append(p.free, pos)
					return err
				}
			}
		}
		p.queue = append(p.queue, c)
		go func() {
			c.done <- p.eng.Rows(p.ctx, c.input, w.FirstRow, RowsQuery{Named: c.named, TopK: p.topK}, c.rows)
		}()
	}
	return nil
}

// rowsWindow scores window w of a RowsEngine run: its request, launched
// ahead with those after it, is awaited and its rows scored in order.
func (r *runner) rowsWindow(w Window) error {
	if r.pipe == nil {
		r.pipe = r.newRowsPipe()
	}
	if err := r.fillPipe(w.Index); err != nil {
		return err
	}
	p := r.pipe
	c := p.queue[0]
	if c.w.Index != w.Index {
		return fmt.Errorf("served rows out of order: window %d in flight, %d wanted", c.w.Index, w.Index)
	}
	err := <-c.done
	p.queue = p.queue[1:]
	p.free = append(p.free, c.pos)
	if err != nil {
		return err
	}
	r.w, r.wNLL, r.wTop = w, NLLStats{}, r.wTop[:0]
	r.jw = journalWindow{Index: w.Index, NLL: r.jw.NLL[:0], Cmp: r.jw.Cmp[:0], IDs: r.jw.IDs[:0], LP: r.jw.LP[:0],
		Top: r.jw.Top[:0], TopP: r.jw.TopP[:0]}
	for i := range c.rows {
		if err := r.scoreLogProbs(c.pos*p.slots+i, w.FirstRow+i, c.named, i, &c.rows[i]); err != nil {
			return err
		}
	}
	secs := time.Since(c.t0).Seconds()
	if r.journal != nil {
		r.jw.Seconds = secs
		if err := r.journal.append(w, &r.jw); err != nil {
			return err
		}
	}
	wr := r.finishWindow(w, secs, AttentionBlocks{})
	ev := Event{Kind: EventWindowDone, Window: &wr}
	if secs > 0 {
		ev.TokensPerSecond = float64(w.Len()) / secs
	}
	r.event(ev)
	return r.fillPipe(w.Index + 1)
}

// scoreLogProbs scores one served row (slot: its base slot; pos: its
// window position) through scoreRow.
func (r *runner) scoreLogProbs(slot, pos int, named [][]int32, i int, lr *LogProbRow) error {
	target := r.tokens[r.w.Begin+pos+1]
	if len(lr.TopIDs) == 0 || len(lr.TopLP) != len(lr.TopIDs) {
		return fmt.Errorf("row %d (target token %d): the engine returned %d top ids and %d log-probabilities",
			pos, target, len(lr.TopIDs), len(lr.TopLP))
	}
	if math.IsNaN(lr.NLL) || math.IsInf(lr.NLL, 0) {
		return fmt.Errorf("row %d (target token %d): the engine's log-probability is not finite: NLL %v", pos, target, lr.NLL)
	}
	row := scoredRow{target: target, nll: lr.NLL, argMax: lr.TopIDs[0], topP: float32(math.Exp(float64(lr.TopLP[0]))),
		topIDs: lr.TopIDs, topLP: lr.TopLP}
	if named != nil {
		if len(lr.Named) != len(named[i]) {
			return fmt.Errorf("row %d: the engine returned %d of the %d named log-probabilities", pos, len(lr.Named), len(named[i]))
		}
		row.atBaseLP = lr.Named
	}
	if r.record != nil && len(lr.TopIDs) < r.record.topK() {
		return fmt.Errorf("row %d: the engine returned %d top ids, the base recorded needs %d", pos, len(lr.TopIDs), r.record.topK())
	}
	return r.scoreRow(slot, &row)
}

// ErrRowsEngine marks what a RowsEngine cannot do.
var ErrRowsEngine = errors.New("a served model returns log-probabilities, not logits")

// checkRowsRequest refuses what a RowsEngine run cannot do.
func (r *runner) checkRowsRequest() error {
	switch {
	case r.req.Shard.N > 1:
		return badRequest("a served model is not sharded: its windows already run %d at a time (--server-parallel)", r.rowsEng.RowsParallel())
	case r.req.KLDBaseFormat == BaseFormatLlama && r.req.KLDBaseOut != "":
		return fmt.Errorf("%w: it cannot record a llama.cpp base (full rows); record a plexbench top-k base", ErrRowsEngine)
	case r.base != nil && r.base.fullVocab():
		return fmt.Errorf("%w: it cannot be compared against a llama.cpp base (full rows); compare against a plexbench top-k base", ErrRowsEngine)
	}
	if k := r.rowsEng.MaxTopK(); k > 0 {
		if r.req.KLDBaseOut != "" && r.req.KLDTopK == 0 {
			r.req.KLDTopK = min(DefaultTopK, k)
		}
		if r.req.KLDBaseOut != "" && r.req.KLDTopK > k {
			return badRequest("kld_top_k %d: the server returns at most %d log-probabilities per position", r.req.KLDTopK, k)
		}
	}
	return nil
}

// kldOverlap counts, over a run's compared tokens, the base ids named and
// those the engine returned a log-probability for.
type kldOverlap struct{ named, known int }

// fraction is the share of the named ids known (1 for none named).
func (o kldOverlap) fraction() float64 {
	if o.named == 0 {
		return 1
	}
	return float64(o.known) / float64(o.named)
}

// CompareTokenKnown is CompareToken where the run's log-probabilities are
// known for only some of the base's ids (NaN elsewhere): the KLD is that
// of the coarsening onto the known ids plus the rest, which merges the
// unknown ids into the rest: by the data-processing inequality it is no
// more than CompareToken's with every id known. Same-top, top-5 and Δp
// read the whole base record as CompareToken's do.
func CompareTokenKnown(nll, baseNLL float64, runArgMax int32, baseIDs []int32, baseLP, runLP []float32, restEmpty bool) (TokenComparison, int) {
	known := 0
	for _, lq := range runLP {
		if !math.IsNaN(float64(lq)) {
			known++
		}
	}
	if known == len(runLP) {
		return CompareToken(nll, baseNLL, runArgMax, baseIDs, baseLP, runLP, restEmpty), known
	}
	kb, kr := make([]float32, 0, known), make([]float32, 0, known)
	for i, lq := range runLP {
		if !math.IsNaN(float64(lq)) {
			kb, kr = append(kb, baseLP[i]), append(kr, lq)
		}
	}
	c := CompareToken(nll, baseNLL, runArgMax, baseIDs, baseLP, runLP, restEmpty)
	kld, ps, qs := topTerms(kb, kr)
	c.KLD = kld + restTerm(max(0, 1-ps), max(0, 1-qs))
	return c, known
}

// rowsSequence is choiceRunner.sequence on a RowsEngine: rows lo..hi of
// sequence s in one request, each read's log-probability the server's:
// of the row's actual next token, or of an id named for the row (a
// Winogrande read whose target is the other sentence's token), which an
// engine returning only its own top-k may not have.
func (r *choiceRunner) rowsSequence(re RowsEngine, s, lo, hi int) error {
	t := r.cur
	seq := t.seqs[s][:hi+2]
	var named [][]int32 // only when a read is not of the next token
	for _, rd := range t.reads {
		if rd.seq == s && rd.target != seq[rd.pos+1] {
			named = make([][]int32, hi-lo+1)
			break
		}
	}
	for i, ks := range r.byRow {
		for _, k := range ks {
			if named != nil {
				named[i] = append(named[i], t.reads[k].target)
			}
		}
	}
	out := make([]LogProbRow, hi-lo+1)
	if err := re.Rows(context.WithoutCancel(r.ctx), seq, lo, RowsQuery{Named: named}, out); err != nil {
		return err
	}
	for i, ks := range r.byRow {
		for j, k := range ks {
			lp := -out[i].NLL
			if rd := t.reads[k]; rd.target != seq[rd.pos+1] {
				if j >= len(out[i].Named) || math.IsNaN(float64(out[i].Named[j])) {
					return fmt.Errorf("row %d: the server returned no log-probability for token %d (it returns only its own top-k; use an API that names ids)",
						rd.pos, rd.target)
				}
				lp = float64(out[i].Named[j])
			}
			r.vals[k] = lp
		}
	}
	r.prefillDone += len(seq)
	return nil
}
