package scoring

// run.go owns Run, in three steps: prepare (the request resolved against
// the engine and a base: geometry, tokens, windows, the base compared
// against and the base recorded, the journal), the window loop (prefill,
// the batched head reductions, scoring each token), and the report.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrStopped is returned with a partial report when the context was
// cancelled: the run stopped after the window in flight. Callers should
// still write the report. It wraps the context's cause.
var ErrStopped = errors.New("perplexity run stopped early")

// Run scores req on eng and returns the report. The context is checked
// between windows: a cancelled run finishes the window in flight and
// returns the partial report with an error wrapping ErrStopped. An engine
// failure also returns the partial report, with that error. A base being
// recorded by a run that stops early is kept marked partial, holding the
// complete windows.
func Run(ctx context.Context, eng Engine, req Request) (Report, error) {
	r, err := prepare(ctx, eng, req)
	if err != nil {
		return Report{}, err
	}
	defer r.close()
	reason, err := r.loop()
	return r.report(reason, err)
}

// runner holds one run's state and reusable buffers.
type runner struct {
	ctx context.Context
	eng Engine
	// rowsEng is eng when it returns log-probabilities (a served model,
	// rowsengine.go); pipe keeps its windows in flight.
	rowsEng RowsEngine
	pipe    *rowsPipe
	req     *Request
	info    ModelInfo
	cfg     EngineConfig
	plan    Plan
	todo    Plan // the windows this run scores: plan's, or its shard's
	tokens  []int32
	bytes   []int32 // per token, the bytes it covers of the text (Engine.TokenBytes)

	base   baseSource // what the run compares against; nil for none
	record baseSink   // the base the run records; nil for none
	kld    *KLDStats  // set when comparing
	stop   *stopper   // the stopping rule; nil for none

	// mismatch says how the base named differs in tokenizer, when the
	// request allowed it and the run goes on without the base.
	mismatch string

	nll       NLLStats
	textBytes int64 // of the scored windows' targets
	windows   []WindowReport
	traced    []TraceWindow // the scored windows' token traces

	journal *journal
	jw      journalWindow // the window in flight's journal record
	resumed int           // windows taken from the journal
	// resumedFrom is where the journal's run began (placement), when
	// that is not where this run computes; "" otherwise.
	resumedFrom string
	// prefillResumed is the prefill work taken from a journal, left out
	// of rates.
	prefillResumed int

	start, loopStart time.Time
	// held is the time the caller's Progress callback kept the run waiting
	// (a paused TUI): it is not the engine's, so rates leave it out.
	held        time.Duration
	prefillDone int
	scoredDone  int
	blocks      AttentionBlocks // summed over the windows

	// The window in flight.
	w     Window
	wNLL  NLLStats
	wTop  []TokenScore // its tokens' trace
	input []int32
	rows  rowStage
	reqs  []RowRequest // per head slot: [target, the base's top-k ids, the whole vocabulary]
	res   []RowResult
	// lpBase and lpTop are the row in flight's log-probabilities at the
	// base's ids and at its own top k.
	lpBase, lpTop []float32
}

// prepare resolves req against eng and its base and opens what the run
// reads and writes; on error nothing stays open.
func prepare(ctx context.Context, eng Engine, req Request) (_ *runner, err error) {
	start := time.Now()
	if err := req.check(); err != nil {
		return nil, err
	}
	info, cfg := eng.Info(), runConfig(eng)
	if rowsEngineOf(eng) == nil && info.HiddenSize <= 0 {
		return nil, fmt.Errorf("engine reports hidden size %d", info.HiddenSize)
	}
	r := &runner{ctx: ctx, eng: eng, rowsEng: rowsEngineOf(eng), req: &req, info: info, cfg: cfg, start: start}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.base, err = openSource(&req, info.VocabSize); err != nil && !r.allowMismatch(err) {
		return nil, err
	}
	text, err := requestTokens(&req, eng)
	if err != nil {
		return nil, err
	}
	if err := r.checkParity(text); err != nil {
		return nil, err
	}
	file := sourceFile(r.base)
	g, err := geometryFor(&req, file, info, cfg)
	if err != nil {
		return nil, err
	}
	if r.tokens, err = tokensFor(&req, text, file, info); err != nil {
		return nil, err
	}
	if r.bytes = eng.TokenBytes(r.tokens); len(r.bytes) != len(r.tokens) {
		return nil, fmt.Errorf("engine gave the byte lengths of %d of %d tokens", len(r.bytes), len(r.tokens))
	}
	if r.plan, err = PlanWindows(len(r.tokens), g); err != nil {
		if req.TextPath != "" {
			return nil, fmt.Errorf("%s: %w", req.TextPath, err)
		}
		return nil, err
	}
	if err := baseCovers(file, r.plan); err != nil {
		return nil, err
	}
	r.todo = r.plan.shard(req.Shard)
	if r.base != nil {
		r.kld = &KLDStats{}
	}
	if err := req.Stop.check(r.base != nil); err != nil {
		return nil, err
	}
	r.stop = newStopper(req.Stop, r.base != nil)
	if r.rowsEng != nil {
		if err := r.checkRowsRequest(); err != nil {
			return nil, err
		}
	}
	if r.record, err = openSink(&req, r.plan, r.tokens, info, cfg); err != nil {
		return nil, err
	}
	r.alloc()
	if req.Journal != "" {
		if r.resumed, err = r.openJournal(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// alloc sizes the head requests: each row picks its target, the base's
// top-k ids and, for a full-vocabulary base read or written, every id.
func (r *runner) alloc() {
	if r.rowsEng != nil {
		return // its rows come scored (rowsengine.go)
	}
	baseTopK, recordTopK, vocab := r.baseTopK(), r.recordTopK(), 0
	if (r.base != nil && r.base.fullVocab()) || (r.record != nil && r.record.fullVocab()) {
		vocab = r.info.VocabSize
	}
	r.rows = newRowStage(r.info.HiddenSize, r.head)
	r.reqs = make([]RowRequest, HeadRows)
	r.res = make([]RowResult, HeadRows)
	for i := range r.reqs {
		q := &r.reqs[i]
		q.IDs, q.TopK = make([]int32, 1+baseTopK+vocab), recordTopK
		for j := range vocab {
			q.IDs[1+baseTopK+j] = int32(j)
		}
		res := &r.res[i]
		res.Picked, res.TopIDs, res.TopLogits = make([]float32, len(q.IDs)), make([]int32, recordTopK), make([]float32, recordTopK)
	}
}

// recordTopK is the top-k of the base the run records; 0 for none.
func (r *runner) recordTopK() int {
	if r.record == nil {
		return 0
	}
	return r.record.topK()
}

// recordBytes is what one scored token takes in the base the run records;
// 0 for none.
func (r *runner) recordBytes() int {
	switch {
	case r.record == nil:
		return 0
	case r.record.fullVocab():
		return 2 * llamaRowWords(r.info.VocabSize)
	}
	return BaseRecordBytes(r.record.topK())
}

// baseTopK is how many of the base's ids each row picks; 0 for none.
func (r *runner) baseTopK() int {
	if r.base == nil {
		return 0
	}
	return r.base.topK()
}

// close releases what the run holds; a base still being recorded (a run
// that never reached its report) is discarded.
func (r *runner) close() {
	if r.pipe != nil {
		r.pipe.stop()
	}
	if r.record != nil {
		r.record.abort()
	}
	if f := sourceFile(r.base); f != nil {
		f.Close()
	}
	if r.journal != nil {
		r.journal.close()
	}
}

// loop scores the windows left after a journal's; a stop, a failure or an
// unreadable base ends it with the error and the report's partial reason.
// A stopping rule met ends it between windows with neither: the run is
// complete over the windows scored.
func (r *runner) loop() (reason string, err error) {
	r.loopStart = time.Now()
	started := Event{Kind: EventStarted, Resumed: r.resumed, BaseOutBytesPerToken: r.recordBytes()}
	if r.resumedFrom != "" {
		started.ResumedFrom, started.ResumedOn = r.resumedFrom, placement(r.cfg)
	}
	r.event(started)
	for _, w := range r.plan.Windows[r.resumed:] {
		if r.stop != nil && r.stop.met != nil && (r.req.KeepGoing == nil || !r.req.KeepGoing()) {
			break
		}
		if !r.req.Shard.has(w.Index) {
			if err := r.skipBase(w.Scored); err != nil {
				return err.Error(), err
			}
			continue
		}
		if err := r.ctx.Err(); err != nil {
			cause := context.Cause(r.ctx)
			return fmt.Sprintf("stopped after %d of %d windows: %v", len(r.windows), len(r.todo.Windows), cause),
				fmt.Errorf("%w: %w", ErrStopped, cause)
		}
		if err := r.window(w); err != nil {
			return fmt.Sprintf("failed in window %d of %d: %v", w.Index+1, len(r.plan.Windows), err),
				fmt.Errorf("window %d (tokens %d..%d): %w", w.Index, w.Begin, w.End, err)
		}
	}
	return "", nil
}

// window scores one window: prefill from its first scored row, the rows
// staged for the head HeadRows at a time.
func (r *runner) window(w Window) error {
	if r.rowsEng != nil {
		return r.rowsWindow(w)
	}
	t0 := time.Now()
	r.w, r.wNLL, r.wTop = w, NLLStats{}, r.wTop[:0]
	r.rows.reset(w.FirstRow, w.LastRow())
	r.jw = journalWindow{Index: w.Index, NLL: r.jw.NLL[:0], Cmp: r.jw.Cmp[:0], IDs: r.jw.IDs[:0], LP: r.jw.LP[:0],
		Top: r.jw.Top[:0], TopP: r.jw.TopP[:0]}
	r.input = w.Input(r.tokens, r.input)
	// The window in flight always finishes: cancellation is honoured
	// between windows, so a partial report never holds half a window.
	err := r.eng.Prefill(context.WithoutCancel(r.ctx), r.input, w.FirstRow, r.rows.emit)
	if err == nil {
		err = r.rows.flush()
	}
	if err != nil {
		return err
	}
	if done := r.rows.scored(); done != w.Scored {
		return fmt.Errorf("engine emitted %d of the window's %d scored rows", done, w.Scored)
	}
	secs := time.Since(t0).Seconds()
	blocks := r.eng.PrefillBlocks()
	if r.journal != nil {
		r.jw.Seconds, r.jw.Blocks = secs, blocks
		if err := r.journal.append(w, &r.jw); err != nil {
			return err
		}
	}
	wr := r.finishWindow(w, secs, blocks)
	ev := Event{Kind: EventWindowDone, Window: &wr}
	if secs > 0 {
		ev.TokensPerSecond = float64(w.Len()) / secs
	}
	r.event(ev)
	return nil
}

// head runs the LM head and reductions on n rows starting at window
// position pos, the base's records for them read first, then scores them.
func (r *runner) head(rows []float32, n, pos int) error {
	baseTopK := r.baseTopK()
	for i := range n {
		q := &r.reqs[i]
		q.IDs[0] = r.tokens[r.w.Begin+pos+i+1]
		if r.base != nil {
			if err := r.base.next(i, q.IDs[1:1+baseTopK]); err != nil {
				return err
			}
		}
	}
	if err := r.eng.HeadReduce(rows, n, r.reqs[:n], r.res[:n]); err != nil {
		return fmt.Errorf("head reduce: %w", err)
	}
	for i := range n {
		if err := r.score(i, pos+i, baseTopK); err != nil {
			return err
		}
	}
	return nil
}

// score turns one row's reductions into the token's NLL, base record and
// comparison.
func (r *runner) score(i, pos, baseTopK int) error {
	q, res := &r.reqs[i], &r.res[i]
	if len(res.Picked) != len(q.IDs) || len(res.TopIDs) < q.TopK || len(res.TopLogits) < q.TopK {
		return fmt.Errorf("head reduce returned %d picked / %d top ids, want %d / %d",
			len(res.Picked), len(res.TopIDs), len(q.IDs), q.TopK)
	}
	nll := NLL(res.Picked[0], res.Max, res.SumExp)
	if math.IsNaN(nll) || math.IsInf(nll, 0) {
		return fmt.Errorf("row %d (target token %d): the model's logits are not finite: NLL %v (max %v, sum exp %v, target logit %v)",
			pos, q.IDs[0], nll, res.Max, res.SumExp, res.Picked[0])
	}
	row := scoredRow{target: q.IDs[0], nll: nll, lnSum: math.Log(res.SumExp), res: res,
		argMax: res.ArgMax, topP: float32(1 / res.SumExp), vocab: res.Picked[1+baseTopK:]}
	if baseTopK > 0 {
		r.lpBase = logProbs(r.lpBase, res.Picked[1:1+baseTopK], res.Max, row.lnSum)
		row.atBaseLP = r.lpBase
	}
	if k := r.recordTopK(); k > 0 {
		r.lpTop = logProbs(r.lpTop, res.TopLogits[:k], res.Max, row.lnSum)
		row.topIDs, row.topLP = res.TopIDs[:k], r.lpTop
	}
	return r.scoreRow(i, &row)
}

// scoreRow adds one scored token to the window, records, compares and
// traces it: the statistics every engine shares (slot: its base slot).
func (r *runner) scoreRow(slot int, row *scoredRow) error {
	r.wNLL.Add(row.nll)
	var jw *journalWindow
	if r.journal != nil {
		jw = &r.jw
		jw.NLL = append(jw.NLL, row.nll)
	}
	if r.record != nil {
		if err := r.record.append(row, jw); err != nil {
			return err
		}
	}
	var c *TokenComparison
	if r.base != nil {
		cmp := r.base.compare(slot, row)
		r.kld.Add(r.w.Index, cmp)
		c = &cmp
	}
	ts := traceTop(row.nll, row.argMax, row.topP, c)
	r.wTop = append(r.wTop, ts)
	if jw != nil {
		jw.Top, jw.TopP = append(jw.Top, ts.RunTop), append(jw.TopP, ts.RunTopP)
		if c != nil {
			jw.Cmp = append(jw.Cmp, *c)
		}
	}
	return nil
}

// skipBase reads past the base records of n scored tokens: of a window
// another shard scores, or of one the journal replays.
func (r *runner) skipBase(n int) error {
	if r.base == nil {
		return nil
	}
	return r.base.skip(n)
}

// finishWindow adds a scored window (r.wNLL) to the run and its report.
func (r *runner) finishWindow(w Window, secs float64, b AttentionBlocks) WindowReport {
	r.prefillDone += w.Len()
	r.scoredDone += w.Scored
	r.nll.Merge(r.wNLL)
	r.blocks.Kept += b.Kept
	r.blocks.Total += b.Total
	wr := WindowReport{Index: w.Index, Begin: w.Begin, End: w.End, FirstTarget: w.FirstTarget,
		Scored: w.Scored, NLLSum: r.wNLL.Sum, NLLSumSq: r.wNLL.Sum2, Seconds: secs, AttentionKept: b.Fraction()}
	wr.TextBytes = spanBytes(r.bytes[w.FirstTarget:w.End])
	r.textBytes += wr.TextBytes
	if res := r.wNLL.Result(); res.N > 0 {
		wr.MeanNLL, wr.Perplexity = res.MeanNLL, res.Perplexity
		wr.BitsPerByte, _ = BitsPerByte(res, wr.TextBytes)
	}
	if r.kld != nil {
		if m, st, ok := r.kld.Window(w.Index); ok {
			wr.MeanKLD, wr.SameTop = &m, &st
		}
	}
	if r.stop != nil {
		d, paired := 0.0, false
		if r.kld != nil {
			d, paired = r.kld.WindowDelta(w.Index)
		}
		r.stop.add(&wr, d, paired)
	}
	r.windows = append(r.windows, wr)
	r.traced = append(r.traced, TraceWindow{Index: w.Index, Begin: w.Begin, FirstTarget: w.FirstTarget,
		Tokens: slices.Clone(r.wTop)})
	return wr
}

// report is the run's report once the loop has ended (reason and err
// from it): the recorded base closed, totals, the KLD object, warnings.
func (r *runner) report(reason string, err error) (Report, error) {
	plan, req := r.plan, r.req
	rep := Report{
		Object: ReportObject, Tokens: len(r.tokens), Method: plan.Method, Ctx: plan.Ctx,
		Stride: plan.Stride, ChunkLimit: plan.ChunkLimit, WindowsTotal: len(plan.Windows),
		Config: r.cfg, Text: req.TextPath, Partial: err != nil, PartialReason: reason,
	}
	rep.Config.DeviceTraffic = r.eng.Config().DeviceTraffic // counted over the run, not at its start
	sum := TokenIDsSHA256(r.tokens)
	rep.TokenIDsSHA256 = hex.EncodeToString(sum[:])
	if r.mismatch != "" {
		rep.TokenizerMismatch = r.mismatch
		rep.Warnings = append(rep.Warnings, "compared by bits per byte only, not against the base: "+r.mismatch)
	}
	if r.resumedFrom != "" {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the first %d of %d windows come from the journal of a run begun on %s; this run, whose config this is, computed the rest on %s",
			r.resumed, len(plan.Windows), r.resumedFrom, placement(r.cfg)))
	}
	if req.IncludeTokenIDs {
		rep.TokenIDs = r.tokens
	}
	if r.stop != nil && err == nil {
		r.stop.finish(&rep, len(r.windows) < len(r.todo.Windows))
	}
	if r.record != nil {
		if cerr := r.record.finish(&rep, len(r.windows), r.scoredDone); cerr != nil {
			err, rep.Partial, rep.PartialReason = cerr, true, cerr.Error()
		}
	}
	res := r.nll.Result()
	rep.WindowsScored, rep.ScoredTokens = len(r.windows), res.N
	rep.MeanNLL, rep.Perplexity, rep.PerplexityUncertainty = res.MeanNLL, res.Perplexity, res.Uncertainty
	rep.TextBytes, rep.TextSHA256 = r.textBytes, textSHA256(req.Text)
	rep.BitsPerByte, rep.BitsPerByteUncertainty = BitsPerByte(res, r.textBytes)
	rep.PrefillTokens = r.prefillDone
	rep.PrefillAttentionKept = r.blocks.Fraction()
	reportTiming(&rep, r.start, r.held, r.prefillDone-r.prefillResumed)
	if req.windowsWanted() || req.Shard.N > 0 {
		rep.Windows = r.windows // a shard's windows are what merge pairs and sorts
	}
	if req.Shard.N > 0 {
		rep.Shard, rep.Shards = req.Shard.I, req.Shard.N
		rep.Sums = &RunSums{NLL: r.nll}
		if r.kld != nil {
			rep.Sums.KLD = r.kld.Sums()
		}
	}
	if r.kld != nil {
		r.kldReport(&rep)
	}
	var terr error
	if rep.Trace, terr = newTrace(r.tokens, r.bytes, plan, r.traced, r.base != nil, r.eng.Piece); terr != nil {
		rep.Warnings = append(rep.Warnings, "no token trace: "+terr.Error())
	}
	rep.sanitize()
	r.event(Event{Kind: EventFinished, Partial: rep.Partial, Reason: rep.PartialReason, StoppedEarly: rep.StoppedEarly})
	return rep, err
}

// reportTiming sets rep's elapsed and held seconds and its prefill rate:
// timed prefill tokens over the time the run was not held.
func reportTiming(rep *Report, start time.Time, held time.Duration, timed int) {
	rep.ElapsedSeconds = time.Since(start).Seconds()
	rep.ProgressHeldSeconds = held.Seconds()
	if working := rep.ElapsedSeconds - rep.ProgressHeldSeconds; working > 0 {
		rep.PrefillTokensPerSecond = float64(timed) / working
	}
}

// kldReport adds the comparison against the base and its warnings.
func (r *runner) kldReport(rep *Report) {
	k := r.kld.Result()
	r.base.finish(&k)
	if r.rowsEng != nil {
		var o kldOverlap
		if s, ok := r.base.(*topKSource); ok {
			o = s.overlap
		}
		f := o.fraction()
		k.Method, k.TopKOverlap = KLDTopKOverlap, &f
		if r.rowsEng.NamesIDs() {
			k.Method = KLDNamedIDs
		}
	}
	rep.KLD = &k
	rep.Warnings = append(rep.Warnings, k.Warnings()...)
	h := &r.base.file().Header
	if h.Partial() {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the base is partial (%d of the %d windows its run planned); compared over its first %d",
			h.Windows, h.Meta.WindowsPlanned, len(r.plan.Windows)))
	} else if n := len(r.plan.Windows); n < h.Windows {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("compared over the first %d of the base's %d windows", n, h.Windows))
	}
	if v, mv := h.Meta.VocabSize, r.info.VocabSize; v > 0 && mv > 0 && v != mv {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the base was recorded with a vocabulary of %d entries, this model has %d", v, mv))
	}
}
