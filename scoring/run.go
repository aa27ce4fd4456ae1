// run.go owns Run: resolving the request against the engine and a base,
// planning the windows, driving prefill and the batched head reductions,
// recording or comparing a KLD base, progress events and the report.
package scoring

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
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
	start := time.Now()
	if err := req.check(); err != nil {
		return Report{}, err
	}
	info, cfg := eng.Info(), eng.Config()
	if cfg.HeadRows == 0 {
		cfg.HeadRows = HeadRows
	}
	if cfg.Model.Path == "" {
		cfg.Model = info
	}

	var base *BaseReader
	if req.KLDBase != "" {
		var err error
		if base, err = OpenBase(req.KLDBase); err != nil {
			return Report{}, err
		}
		defer base.Close()
		if v := base.Header.Meta.VocabSize; base.Format == BaseFormatLlama && info.VocabSize > 0 && v != info.VocabSize {
			return Report{}, fmt.Errorf("%w: %s: the llama.cpp base has a vocabulary of %d entries, this model %d",
				ErrBaseMismatch, base.Name, v, info.VocabSize)
		}
	}
	g, err := geometryFor(&req, base, info, cfg)
	if err != nil {
		return Report{}, err
	}
	tokens, err := tokensFor(&req, eng, base, info)
	if err != nil {
		return Report{}, err
	}
	plan, err := PlanWindows(len(tokens), g)
	if err != nil {
		if req.TextPath != "" {
			return Report{}, fmt.Errorf("%s: %w", req.TextPath, err)
		}
		return Report{}, err
	}
	if err := baseCovers(base, plan); err != nil {
		return Report{}, err
	}

	r := &runner{ctx: ctx, eng: eng, req: &req, info: info, cfg: cfg, plan: plan, tokens: tokens, base: base,
		hidden: info.HiddenSize, start: start, nll: NLLStats{}}
	r.todo = plan
	if req.Shard.N > 0 {
		r.todo.Windows, r.todo.Scored, r.todo.PrefillToks = nil, 0, 0
		for _, w := range plan.Windows {
			if req.Shard.has(w.Index) {
				r.todo.Windows = append(r.todo.Windows, w)
				r.todo.Scored += w.Scored
				r.todo.PrefillToks += w.Len()
			}
		}
	}
	switch {
	case base != nil && base.Format == BaseFormatLlama:
		r.llamaIn, r.full = true, base.Header.Meta.VocabSize
		r.kld = &KLDStats{}
		if req.CoarsenTopK > 0 {
			if req.Journal != "" || req.Shard.N > 0 {
				return Report{}, badRequest("kld_coarsen_top_k is kept by neither journals nor shards: run it whole, without a journal")
			}
			r.coarse = &CoarseningStats{TopK: req.CoarsenTopK}
		}
	case req.CoarsenTopK > 0:
		return Report{}, badRequest("kld_coarsen_top_k needs a llama.cpp base to compare against (its rows hold the whole vocabulary)")
	case base != nil:
		r.kb = base.Header.TopK
		if info.VocabSize > 0 && r.kb >= info.VocabSize {
			r.restEmpty = true
		}
		r.kld = &KLDStats{}
	}
	if req.KLDBaseOut != "" && req.KLDBaseFormat == BaseFormatLlama {
		if plan.Method != MethodChunks {
			return Report{}, badRequest("a llama.cpp base holds chunks only, not the %s method", plan.Method)
		}
		if info.VocabSize <= 0 {
			return Report{}, badRequest("a llama.cpp base needs the vocabulary size, which the engine does not report")
		}
		r.full = info.VocabSize
		if r.lout, err = CreateLlamaBase(req.KLDBaseOut, plan.Ctx, info.VocabSize, len(plan.Windows), tokens); err != nil {
			return Report{}, err
		}
		r.sink = r.lout
		defer r.lout.Abort() // no-op after a successful Close
	} else if req.KLDBaseOut != "" {
		r.kout = req.topK()
		if info.VocabSize > 0 && r.kout > info.VocabSize {
			return Report{}, badRequest("kld_top_k %d exceeds the vocabulary size %d", r.kout, info.VocabSize)
		}
		h := BaseHeader{
			Method: plan.Method, Ctx: plan.Ctx, Stride: plan.Stride, ChunkLimit: plan.ChunkLimit,
			TopK: r.kout, Windows: len(plan.Windows), Scored: plan.Scored, ModelSize: info.Size,
			Meta: BaseMeta{ModelFile: filepath.Base(info.Path), ModelArchitecture: info.Architecture,
				VocabSize: info.VocabSize, Config: cfg, WindowsPlanned: len(plan.Windows)},
		}
		if r.out, err = CreateBase(req.KLDBaseOut, h, tokens); err != nil {
			return Report{}, err
		}
		r.sink = r.out
		defer r.out.Abort() // no-op after a successful Close
	}
	if r.hidden <= 0 {
		return Report{}, fmt.Errorf("engine reports hidden size %d", r.hidden)
	}
	r.alloc()

	rep := Report{
		Object: ReportObject, Tokens: len(tokens), Method: plan.Method, Ctx: plan.Ctx,
		Stride: plan.Stride, ChunkLimit: plan.ChunkLimit, WindowsTotal: len(plan.Windows),
		Config: cfg, Text: req.TextPath,
	}
	sum := TokenIDsSHA256(tokens)
	rep.TokenIDsSHA256 = hex.EncodeToString(sum[:])
	if req.IncludeTokenIDs {
		rep.TokenIDs = tokens
	}

	resumed := 0
	if req.Journal != "" {
		if resumed, err = r.openJournal(); err != nil {
			return Report{}, err
		}
		defer r.journal.close()
	}

	r.loopStart = time.Now()
	r.event(Event{Kind: EventStarted, Resumed: resumed})
	var runErr error
	for _, w := range plan.Windows[resumed:] {
		if !req.Shard.has(w.Index) {
			if err := r.skipBase(w.Scored); err != nil {
				runErr = err
				rep.PartialReason = err.Error()
				break
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			runErr = fmt.Errorf("%w: %w", ErrStopped, context.Cause(ctx))
			rep.PartialReason = fmt.Sprintf("stopped after %d of %d windows: %v",
				len(r.windows), len(r.todo.Windows), context.Cause(ctx))
			break
		}
		if err := r.window(w); err != nil {
			runErr = fmt.Errorf("window %d (tokens %d..%d): %w", w.Index, w.Begin, w.End, err)
			rep.PartialReason = fmt.Sprintf("failed in window %d of %d: %v", w.Index+1, len(plan.Windows), err)
			break
		}
	}
	rep.Partial = runErr != nil

	if r.sink != nil {
		if rep.Partial {
			if r.out != nil {
				rep.PartialReason += r.closePartialBase()
				if r.out != nil {
					rep.KLDBaseOut, rep.KLDBaseTopK = req.KLDBaseOut, r.kout
				}
			} else {
				r.sink.Abort() // a llama.cpp base is kept whole or not at all
				rep.PartialReason += "; the KLD base was not written"
			}
		} else if err := r.sink.Close(); err != nil {
			runErr = err
			rep.Partial, rep.PartialReason = true, err.Error()
		} else {
			rep.KLDBaseOut, rep.KLDBaseTopK = req.KLDBaseOut, r.kout
			if r.lout != nil {
				rep.KLDBaseTopK, rep.KLDBaseFormat = r.full, BaseFormatLlama
			}
		}
	}

	res := r.nll.Result()
	rep.WindowsScored = len(r.windows)
	rep.ScoredTokens = res.N
	rep.MeanNLL, rep.Perplexity, rep.PerplexityUncertainty = res.MeanNLL, res.Perplexity, res.Uncertainty
	rep.PrefillTokens = r.prefillDone
	rep.PrefillAttentionKept = r.blocks.Fraction()
	rep.ElapsedSeconds = time.Since(start).Seconds()
	rep.ProgressHeldSeconds = r.held.Seconds()
	if working := rep.ElapsedSeconds - rep.ProgressHeldSeconds; working > 0 {
		rep.PrefillTokensPerSecond = float64(r.prefillDone-r.prefillResumed) / working
	}
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
		k := r.kld.Result()
		k.Base, k.TopK = req.KLDBase, r.kb
		if r.llamaIn {
			k.BaseFormat, k.TopK = BaseFormatLlama, r.full
		}
		if r.coarse != nil {
			c := r.coarse.Result()
			k.TopKCoarsened = &c
		}
		rep.KLD = &k
		rep.Warnings = append(rep.Warnings, k.Warnings()...)
		if h := &base.Header; h.Partial() {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"the base is partial (%d of the %d windows its run planned); compared over its first %d",
				h.Windows, h.Meta.WindowsPlanned, len(plan.Windows)))
		}
		if v := base.Header.Meta.VocabSize; v > 0 && info.VocabSize > 0 && v != info.VocabSize {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf(
				"the base was recorded with a vocabulary of %d entries, this model has %d", v, info.VocabSize))
		}
	}
	rep.sanitize()
	r.event(Event{Kind: EventFinished, Partial: rep.Partial, Reason: rep.PartialReason})
	return rep, runErr
}

// closePartialBase keeps the complete windows of a stopped recording as a
// partial base and returns what to add to the partial reason; r.out is nil
// afterwards when no base was kept.
func (r *runner) closePartialBase() string {
	out := r.out
	if len(r.windows) == 0 {
		out.Abort()
		r.out = nil
		return "; the KLD base was not written (no complete window)"
	}
	if err := out.ClosePartial(len(r.windows), r.scoredDone); err != nil {
		r.out = nil
		return "; " + err.Error()
	}
	return fmt.Sprintf("; the KLD base holds the %d complete windows (marked partial)", len(r.windows))
}

// baseCovers checks that a base holds the windows plan scores: all of
// them, or for a partial base its first ones.
func baseCovers(base *BaseReader, plan Plan) error {
	if base == nil {
		return nil
	}
	h := &base.Header
	if h.Partial() {
		if len(plan.Windows) > h.Windows {
			return fmt.Errorf("%w: %s is a partial base holding %d windows, this run needs %d (use --perplexity-chunks %d or fewer)",
				ErrBaseMismatch, base.Name, h.Windows, len(plan.Windows), h.Windows)
		}
		if plan.Scored > h.Scored {
			return fmt.Errorf("%w: %s is a partial base holding %d scored tokens, this run scores %d",
				ErrBaseMismatch, base.Name, h.Scored, plan.Scored)
		}
		return nil
	}
	if plan.Scored != h.Scored || len(plan.Windows) != h.Windows {
		return fmt.Errorf("%w: %s holds %d windows / %d scored tokens, this run plans %d / %d",
			ErrBaseMismatch, base.Name, h.Windows, h.Scored, len(plan.Windows), plan.Scored)
	}
	return nil
}

// geometryFor resolves method/ctx/stride/chunks from the request and, when
// comparing, the base: zero request fields take the base's values, others
// must agree with it. KV capacity is checked here, before tokenizing.
func geometryFor(req *Request, base *BaseReader, info ModelInfo, cfg EngineConfig) (Geometry, error) {
	g := Geometry{Method: req.Method, Ctx: req.Ctx, Stride: req.Stride, Chunks: req.Chunks,
		AddBOS: info.AddBOS, BOS: info.BOS, KVCapacity: cfg.KVCapacity}
	if base != nil {
		h := &base.Header
		mismatch := func(field string, b, run any) error {
			return fmt.Errorf("%w: %s: %s is %v in the base, %v in this run", ErrBaseMismatch, base.Name, field, b, run)
		}
		if g.Method == "" {
			g.Method = h.Method
		} else if g.Method != h.Method {
			return g, mismatch("method", h.Method, g.Method)
		}
		if g.Ctx == 0 {
			g.Ctx = h.Ctx
		} else if g.Ctx != h.Ctx {
			return g, mismatch("ctx", h.Ctx, g.Ctx)
		}
		if g.Stride == 0 {
			g.Stride = h.Stride
		} else if g.Stride != h.Stride {
			return g, mismatch("stride", h.Stride, g.Stride)
		}
		if g.Chunks <= 0 {
			g.Chunks = h.ChunkLimit
		} else if g.Chunks != h.ChunkLimit && !h.Partial() { // a partial base is checked after planning
			return g, mismatch("chunk limit", h.ChunkLimit, g.Chunks)
		}
	}
	if g.Ctx == 0 {
		g.Ctx = DefaultCtx
	}
	return g.resolve()
}

// tokensFor returns the ids to score: the base's when comparing (text or
// tokens, when also given, must hash the same), else the request's tokens
// or its tokenized text. Every id must be inside the vocabulary.
func tokensFor(req *Request, eng Engine, base *BaseReader, info ModelInfo) ([]int32, error) {
	src := "tokens"
	var tokens []int32
	switch {
	case req.Text != "":
		src = "text"
		if req.TextPath != "" {
			src = req.TextPath
		}
		var err error
		if tokens, err = eng.Tokenize(req.Text); err != nil {
			return nil, fmt.Errorf("tokenizing %s: %w", src, err)
		}
		if len(tokens) == 0 {
			return nil, badRequest("%s tokenizes to no tokens", src)
		}
	case len(req.Tokens) > 0:
		tokens = req.Tokens
	}
	if base != nil {
		if tokens != nil && base.Format == BaseFormatLlama && len(tokens) >= len(base.Tokens) {
			// llama.cpp stores only the n_chunk·C tokens it scored: the
			// text's stream must start with them.
			tokens = tokens[:len(base.Tokens)]
		}
		if tokens != nil {
			if got := TokenIDsSHA256(tokens); got != base.Header.TokenIDsSHA256 {
				return nil, fmt.Errorf("%w: %s: token ids differ: token_ids_sha256 is %s (%d tokens) in the base, %s (%d tokens) for %s",
					ErrBaseMismatch, base.Name, base.Header.TokenHash(), base.Header.Tokens,
					hex.EncodeToString(got[:]), len(tokens), src)
			}
		}
		tokens, src = base.Tokens, base.Name
	}
	if v := info.VocabSize; v > 0 {
		for i, t := range tokens {
			if t < 0 || int(t) >= v {
				return nil, badRequest("%s: token %d at index %d is outside the vocabulary (size %d)", src, t, i, v)
			}
		}
	}
	return tokens, nil
}

// runner holds one run's state and reusable buffers.
type runner struct {
	ctx    context.Context
	eng    Engine
	req    *Request
	info   ModelInfo
	cfg    EngineConfig
	plan   Plan
	todo   Plan // the windows this run scores: plan's, or its shard's
	tokens []int32
	hidden int

	base      *BaseReader
	kb        int // base's top-k when comparing
	restEmpty bool
	kld       *KLDStats
	coarse    *CoarseningStats // top-k KLDs beside a llama.cpp base's full ones
	out       *BaseWriter
	kout      int // top-k recorded when writing a base
	// Full-vocabulary rows, for a llama.cpp base read (llamaIn) or
	// written (lout): full = V ids picked after the target and base ids.
	llamaIn bool
	full    int
	lrows   []LlamaRow
	lout    *LlamaBaseWriter
	sink    interface {
		Close() error
		Abort()
	} // the base being written, either format

	nll     NLLStats
	windows []WindowReport

	journal *journal
	jw      journalWindow // the window in flight's journal record
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

	// Per window.
	w        Window
	wNLL     NLLStats
	nextRow  int // window position of the next row expected from prefill
	input    []int32
	rows     []float32 // HeadRows × hidden staging buffer
	nrows    int
	firstPos int // window position of rows[0]

	reqs    []RowRequest
	res     []RowResult
	baseIDs [][]int32
	baseLP  [][]float32
	baseNLL []float64
	runLP   []float32
	lp      []float32
}

func (r *runner) alloc() {
	r.rows = make([]float32, HeadRows*r.hidden)
	r.reqs = make([]RowRequest, HeadRows)
	r.res = make([]RowResult, HeadRows)
	r.baseIDs = make([][]int32, HeadRows)
	r.baseLP = make([][]float32, HeadRows)
	r.baseNLL = make([]float64, HeadRows)
	for i := range r.reqs {
		r.reqs[i].IDs = make([]int32, 1+r.kb+r.full)
		r.reqs[i].TopK = r.kout
		r.baseIDs[i] = r.reqs[i].IDs[1 : 1+r.kb]
		r.baseLP[i] = make([]float32, r.kb)
		for j := range r.full {
			r.reqs[i].IDs[1+r.kb+j] = int32(j)
		}
	}
	if r.llamaIn {
		r.lrows = make([]LlamaRow, HeadRows)
	}
	r.runLP = make([]float32, r.kb)
	r.lp = make([]float32, r.kout)
}

// window scores one window: prefill from its first scored row, staging
// rows and reducing them HeadRows at a time.
func (r *runner) window(w Window) error {
	t0 := time.Now()
	r.w, r.wNLL, r.nextRow, r.nrows = w, NLLStats{}, w.FirstRow, 0
	r.jw = journalWindow{Index: w.Index, NLL: r.jw.NLL[:0], Cmp: r.jw.Cmp[:0], IDs: r.jw.IDs[:0], LP: r.jw.LP[:0]}
	r.input = w.Input(r.tokens, r.input)
	// The window in flight always finishes: cancellation is honoured
	// between windows, so a partial report never holds half a window.
	err := r.eng.Prefill(context.WithoutCancel(r.ctx), r.input, w.FirstRow, r.emit)
	if err == nil && r.nrows > 0 {
		err = r.flush(r.rows, r.nrows, r.firstPos)
	}
	if err != nil {
		return err
	}
	if done := r.nextRow - w.FirstRow; done != w.Scored {
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

// finishWindow adds a scored window (r.wNLL) to the run and its report.
func (r *runner) finishWindow(w Window, secs float64, b AttentionBlocks) WindowReport {
	r.prefillDone += w.Len()
	r.scoredDone += w.Scored
	r.nll.Merge(r.wNLL)
	r.blocks.Kept += b.Kept
	r.blocks.Total += b.Total
	wr := WindowReport{Index: w.Index, Begin: w.Begin, End: w.End, FirstTarget: w.FirstTarget,
		Scored: w.Scored, NLLSum: r.wNLL.Sum, NLLSumSq: r.wNLL.Sum2, Seconds: secs, AttentionKept: b.Fraction()}
	if res := r.wNLL.Result(); res.N > 0 {
		wr.MeanNLL, wr.Perplexity = res.MeanNLL, res.Perplexity
	}
	if r.kld != nil {
		if m, st, ok := r.kld.Window(w.Index); ok {
			wr.MeanKLD, wr.SameTop = &m, &st
		}
	}
	r.windows = append(r.windows, wr)
	return wr
}

// openJournal opens the request's journal (resuming it when asked) and
// replays the windows it holds; it returns how many.
func (r *runner) openJournal() (int, error) {
	tsum := TokenIDsSHA256(r.tokens)
	id := journalIdentity{
		Model: modelIdentityOf(r.info), TokenIDsSHA256: hex.EncodeToString(tsum[:]),
		Tokens: len(r.tokens), Method: r.plan.Method, Ctx: r.plan.Ctx, Stride: r.plan.Stride,
		ChunkLimit: r.plan.ChunkLimit, Windows: len(r.plan.Windows), KLDBaseOutTopK: r.kout, Config: r.cfg,
	}
	if r.req.Text != "" {
		sum := sha256.Sum256([]byte(r.req.Text))
		id.TextSHA256 = hex.EncodeToString(sum[:])
	}
	if r.base != nil {
		id.KLDBase = &baseIdentity{Size: r.base.size, Checksum: hex.EncodeToString(r.base.checksum[:])}
	}
	j, resuming, err := openJournal(r.req.Journal, id, r.req.Resume, r.kld != nil, r.kout)
	if err != nil {
		return 0, err
	}
	r.journal = j
	if !resuming {
		return 0, nil
	}
	n, err := j.replay(r.plan, r.replay)
	if err != nil {
		j.close()
		return 0, fmt.Errorf("resuming from %s: window %d: %w", j.path, n, err)
	}
	r.prefillResumed = r.prefillDone
	return n, nil
}

// replay adds a window taken from the journal as if it had just been
// scored: its tokens' NLLs and comparisons, and its base rows.
func (r *runner) replay(w Window, jw *journalWindow) error {
	r.wNLL = NLLStats{}
	for i, nll := range jw.NLL {
		r.wNLL.Add(nll)
		if r.out != nil {
			if err := r.out.Append(nll, jw.IDs[i*r.kout:(i+1)*r.kout], jw.LP[i*r.kout:(i+1)*r.kout]); err != nil {
				return err
			}
		}
		if r.kld != nil {
			if err := r.skipBase(1); err != nil {
				return err
			}
			r.kld.Add(w.Index, jw.Cmp[i])
		}
	}
	r.finishWindow(w, jw.Seconds, jw.Blocks)
	return nil
}

// emit receives one pass's rows from prefill. Rows before FirstRow and
// after LastRow (position ctx−1 in chunks) are not scored.
func (r *runner) emit(pos int, hidden []float32, n int) error {
	last := r.w.LastRow()
	if len(hidden) < n*r.hidden {
		return fmt.Errorf("engine emitted %d rows in %d floats (hidden size %d)", n, len(hidden), r.hidden)
	}
	for i := 0; i < n; {
		p := pos + i
		if p < r.w.FirstRow || p > last {
			i++
			continue
		}
		if p != r.nextRow {
			return fmt.Errorf("engine emitted row %d, expected row %d", p, r.nextRow)
		}
		// Whole blocks go straight from the engine's buffer to the head.
		if r.nrows == 0 {
			if m := min(n-i, last-p+1); m >= HeadRows {
				m = HeadRows
				if err := r.flush(hidden[i*r.hidden:(i+m)*r.hidden], m, p); err != nil {
					return err
				}
				i += m
				continue
			}
			r.firstPos = p
		}
		copy(r.rows[r.nrows*r.hidden:], hidden[i*r.hidden:(i+1)*r.hidden])
		r.nrows++
		r.nextRow++
		i++
		if r.nrows == HeadRows {
			if err := r.flush(r.rows, r.nrows, r.firstPos); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush runs the LM head and reductions on n rows starting at window
// position pos, then scores them. For staged rows nextRow already counts
// them; for direct blocks it is advanced here.
func (r *runner) flush(rows []float32, n, pos int) error {
	direct := r.nrows == 0
	for i := range n {
		q := &r.reqs[i]
		q.IDs[0] = r.tokens[r.w.Begin+pos+i+1]
		if r.llamaIn {
			if err := r.base.NextLlama(&r.lrows[i]); err != nil {
				return err
			}
		} else if r.base != nil {
			nll, err := r.base.Next(r.baseIDs[i], r.baseLP[i])
			if err != nil {
				return err
			}
			for _, id := range r.baseIDs[i] {
				if id < 0 || (r.info.VocabSize > 0 && int(id) >= r.info.VocabSize) {
					return fmt.Errorf("%w %s: record %d holds token id %d outside the vocabulary (%d)",
						ErrBadBase, r.base.Name, r.base.read-1, id, r.info.VocabSize)
				}
			}
			r.baseNLL[i] = nll
		}
		res := &r.res[i]
		res.Picked = grow(res.Picked, len(q.IDs))
		res.TopIDs = growI(res.TopIDs, r.kout)
		res.TopLogits = grow(res.TopLogits, r.kout)
	}
	if err := r.eng.HeadReduce(rows, n, r.reqs[:n], r.res[:n]); err != nil {
		return fmt.Errorf("head reduce: %w", err)
	}
	for i := range n {
		if err := r.score(i, pos+i); err != nil {
			return err
		}
	}
	if direct {
		r.nextRow += n
	}
	r.nrows = 0
	return nil
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func growI(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// score turns one row's reductions into the token's NLL, base record and
// comparison.
func (r *runner) score(i, pos int) error {
	q, res := &r.reqs[i], &r.res[i]
	if len(res.Picked) != len(q.IDs) || len(res.TopIDs) < r.kout || len(res.TopLogits) < r.kout {
		return fmt.Errorf("head reduce returned %d picked / %d top ids, want %d / %d",
			len(res.Picked), len(res.TopIDs), len(q.IDs), r.kout)
	}
	lnS := math.Log(res.SumExp)
	nll := NLL(res.Picked[0], res.Max, res.SumExp)
	if math.IsNaN(nll) || math.IsInf(nll, 0) {
		return fmt.Errorf("row %d (target token %d): non-finite NLL (max %v, sum exp %v, target logit %v)",
			pos, q.IDs[0], res.Max, res.SumExp, res.Picked[0])
	}
	r.wNLL.Add(nll)
	jr := r.journal != nil
	if jr {
		r.jw.NLL = append(r.jw.NLL, nll)
	}
	if r.out != nil {
		for j := range r.kout {
			r.lp[j] = LogProb(res.TopLogits[j], res.Max, lnS)
		}
		if err := r.out.Append(nll, res.TopIDs[:r.kout], r.lp); err != nil {
			return err
		}
		if jr {
			r.jw.IDs, r.jw.LP = append(r.jw.IDs, res.TopIDs[:r.kout]...), append(r.jw.LP, r.lp...)
		}
	}
	full := res.Picked[1+r.kb:]
	if r.lout != nil {
		if err := r.lout.Append(full, res.Max, res.SumExp); err != nil {
			return err
		}
	}
	if r.kld == nil {
		return nil
	}
	var c TokenComparison
	if r.llamaIn {
		c = CompareFull(q.IDs[0], full, res.Max, res.ArgMax, res.SumExp, &r.lrows[i])
		if r.coarse != nil {
			r.coarse.AddRow(c, full, res.Max, res.ArgMax, res.SumExp, &r.lrows[i])
		}
	} else {
		for j := range r.kb {
			r.runLP[j] = LogProb(res.Picked[1+j], res.Max, lnS)
		}
		c = CompareToken(nll, r.baseNLL[i], res.ArgMax, r.baseIDs[i], r.baseLP[i], r.runLP, r.restEmpty)
	}
	r.kld.Add(r.w.Index, c)
	if jr {
		r.jw.Cmp = append(r.jw.Cmp, c)
	}
	return nil
}

// skipBase reads past the base records of n scored tokens: of a window
// another shard scores, or of one the journal replays.
func (r *runner) skipBase(n int) error {
	if r.base == nil {
		return nil
	}
	for range n {
		var err error
		if r.llamaIn {
			err = r.base.NextLlama(&r.lrows[0])
		} else {
			_, err = r.base.Next(r.baseIDs[0], r.baseLP[0])
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	e.Elapsed = time.Since(r.start)
	if loop := (time.Since(r.loopStart) - r.held).Seconds(); loop > 0 && r.prefillDone > r.prefillResumed {
		e.MeanTokensPerSecond = float64(r.prefillDone-r.prefillResumed) / loop
		left := float64(r.todo.PrefillToks - r.prefillDone)
		e.ETA = time.Duration(left / e.MeanTokensPerSecond * float64(time.Second))
	}
	res := r.nll.Result()
	e.MeanNLL, e.Perplexity, e.PerplexityUncertainty = res.MeanNLL, res.Perplexity, res.Uncertainty
	if r.kld != nil && r.kld.Tokens() > 0 {
		s := r.kld.Snapshot()
		e.KLD = &s
	}
	t0 := time.Now()
	r.req.Progress(e)
	r.held += time.Since(t0)
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
