package scoring

// hellaswagrun.go owns RunHellaSwag: the tasks drawn and tokenized as
// llama-perplexity's hellaswag_score does, each ending prefilled from an
// empty KV cache and its tokens' log-probabilities taken from the head's
// pick reduction, one event per task, and the report.

import (
	"context"
	"fmt"
	"math"
	"time"
)

// HellaSwagRequest is what RunHellaSwag scores.
type HellaSwagRequest struct {
	Tasks []HellaSwagTask // the whole file
	// Count is how many tasks to draw (llama-perplexity's
	// --hellaswag-tasks); 0: DefaultHellaSwagTasks. It is capped at the
	// file's task count.
	Count int
	// Ctx is llama-perplexity's -c: every task's tokens (the common prefix
	// once, then each ending's own) must fit in it; 0: DefaultCtx.
	Ctx int
	// Path names the task file, for messages and the report.
	Path string
	// Progress, when set, receives events synchronously.
	Progress func(Event)
}

// hsTask is a drawn task, tokenized.
type hsTask struct {
	index, gold int
	seq         [4][]int32 // context + " " + ending, with BOS as the vocab asks
	prefix      int        // tokens all four share, at most the shortest's length − 1
}

// hsRunner holds one HellaSwag run's state.
type hsRunner struct {
	ctx    context.Context
	eng    Engine
	req    *HellaSwagRequest
	cfg    EngineConfig
	ctxLen int
	tasks  []hsTask

	rows rowStage
	reqs []RowRequest
	res  []RowResult
	seq  []int32 // the ending in flight: its tokens, first scored row, log-prob sum
	row0 int
	sum  float64

	results                   []HellaSwagResult
	correct                   int
	prefillDone, prefillTotal int
	blocks                    AttentionBlocks
	start, loopStart          time.Time
	held                      time.Duration
}

// RunHellaSwag scores req on eng as llama-perplexity --hellaswag does.
// The context is checked between tasks: a cancelled run returns the
// partial report with an error wrapping ErrStopped; an engine failure
// returns the partial report with that error.
func RunHellaSwag(ctx context.Context, eng Engine, req HellaSwagRequest) (Report, error) {
	r, err := prepareHellaSwag(ctx, eng, &req)
	if err != nil {
		if req.Path != "" {
			err = fmt.Errorf("%s: %w", req.Path, err)
		}
		return Report{}, err
	}
	reason, err := r.loop()
	return r.report(reason, err), err
}

// prepareHellaSwag draws and tokenizes the tasks and sizes the head requests.
func prepareHellaSwag(ctx context.Context, eng Engine, req *HellaSwagRequest) (*hsRunner, error) {
	r := &hsRunner{ctx: ctx, eng: eng, req: req, cfg: runConfig(eng), ctxLen: req.Ctx, start: time.Now()}
	if r.ctxLen == 0 {
		r.ctxLen = DefaultCtx
	}
	count := req.Count
	if count == 0 {
		count = DefaultHellaSwagTasks
	}
	if count < 0 || r.ctxLen < 0 {
		return nil, badRequest("hellaswag: %d tasks at ctx %d", count, r.ctxLen)
	}
	order, err := HellaSwagOrder(len(req.Tasks), count)
	if err != nil {
		return nil, err
	}
	r.tasks = make([]hsTask, len(order))
	for i, idx := range order {
		if r.tasks[i], err = r.tokenize(idx); err != nil {
			return nil, err
		}
		for _, s := range r.tasks[i].seq {
			r.prefillTotal += len(s)
		}
	}
	hidden := eng.Info().HiddenSize
	if hidden <= 0 {
		return nil, fmt.Errorf("engine reports hidden size %d", hidden)
	}
	r.rows = newRowStage(hidden, r.head)
	r.reqs, r.res = make([]RowRequest, HeadRows), make([]RowResult, HeadRows)
	for i := range r.reqs {
		r.reqs[i].IDs, r.res[i].Picked = make([]int32, 1), make([]float32, 1)
	}
	return r, nil
}

// tokenize tokenizes the file's task idx: context + " " + each ending, its
// common prefix, and the context window it needs.
func (r *hsRunner) tokenize(idx int) (hsTask, error) {
	t := &r.req.Tasks[idx]
	h := hsTask{index: idx, gold: t.Gold}
	for s, e := range t.Endings {
		ids, err := r.eng.Tokenize(t.Context + " " + e)
		if err != nil {
			return h, fmt.Errorf("task %d, ending %d: %w", idx, s, err)
		}
		h.seq[s] = ids
	}
	h.prefix = commonPrefix(h.seq)
	if h.prefix == 0 {
		return h, fmt.Errorf("%w: task %d: its four sequences share no first token", ErrBadTaskFile, idx)
	}
	need := h.prefix
	for _, s := range h.seq {
		need += len(s) - h.prefix
	}
	if need > r.ctxLen {
		return h, fmt.Errorf("task %d does not fit in the context window (requires %d tokens, ctx %d)", idx, need, r.ctxLen)
	}
	return h, nil
}

// commonPrefix counts the leading tokens all four sequences share, leaving
// each at least one token of its own to score (llama.cpp reads past the
// end of an ending that tokenizes to nothing of its own).
func commonPrefix(seq [4][]int32) int {
	n := min(len(seq[0]), len(seq[1]), len(seq[2]), len(seq[3])) - 1
	for k := range max(n, 0) {
		if seq[1][k] != seq[0][k] || seq[2][k] != seq[0][k] || seq[3][k] != seq[0][k] {
			return k
		}
	}
	return max(n, 0)
}

// runConfig is eng's config as a report carries it.
func runConfig(eng Engine) EngineConfig {
	cfg := eng.Config()
	if cfg.HeadRows == 0 {
		cfg.HeadRows = HeadRows
	}
	if cfg.Model.Path == "" {
		cfg.Model = eng.Info()
	}
	return cfg
}

// loop scores the drawn tasks in order.
func (r *hsRunner) loop() (reason string, err error) {
	r.loopStart = time.Now()
	r.event(Event{Kind: EventStarted})
	for i := range r.tasks {
		t := &r.tasks[i]
		if err := r.ctx.Err(); err != nil {
			cause := context.Cause(r.ctx)
			return fmt.Sprintf("stopped after %d of %d tasks: %v", i, len(r.tasks), cause),
				fmt.Errorf("%w: %w", ErrStopped, cause)
		}
		t0, done := time.Now(), r.prefillDone
		res, err := r.task(t)
		if err != nil {
			return fmt.Sprintf("failed in task %d (%d of %d): %v", t.index, i+1, len(r.tasks), err),
				fmt.Errorf("hellaswag task %d: %w", t.index, err)
		}
		r.results = append(r.results, res)
		if res.Chosen == res.Gold {
			r.correct++
		}
		ev := Event{Kind: EventWindowDone}
		if secs := time.Since(t0).Seconds(); secs > 0 {
			ev.TokensPerSecond = float64(r.prefillDone-done) / secs
		}
		r.event(ev)
	}
	return "", nil
}

// task scores a task's four endings and chooses the largest score (the
// first on ties, as llama.cpp's strict comparison does).
func (r *hsRunner) task(t *hsTask) (HellaSwagResult, error) {
	res := HellaSwagResult{Task: t.index, Gold: t.gold}
	for s, seq := range t.seq {
		score, err := r.ending(seq, t.prefix)
		if err != nil {
			return res, fmt.Errorf("ending %d: %w", s, err)
		}
		res.Scores[s] = score
		if score > res.Scores[res.Chosen] {
			res.Chosen = s
		}
	}
	return res, nil
}

// ending prefills one sequence from an empty KV cache and returns the mean
// log-probability of its tokens after the common prefix, each predicted
// from the row before it (the prefix's last row predicts the first).
func (r *hsRunner) ending(seq []int32, prefix int) (float64, error) {
	r.seq, r.row0, r.sum = seq, prefix-1, 0
	r.rows.reset(prefix-1, len(seq)-2)
	// A task in flight always finishes: cancellation is honoured between tasks.
	err := r.eng.Prefill(context.WithoutCancel(r.ctx), seq, prefix-1, r.rows.emit)
	if err == nil {
		err = r.rows.flush()
	}
	if err != nil {
		return 0, err
	}
	n := len(seq) - prefix
	if done := r.rows.scored(); done != n {
		return 0, fmt.Errorf("engine emitted %d of the ending's %d scored rows", done, n)
	}
	r.prefillDone += len(seq)
	b := r.eng.PrefillBlocks()
	r.blocks.Kept += b.Kept
	r.blocks.Total += b.Total
	return r.sum / float64(n), nil
}

// head takes n rows from position pos of the ending in flight and adds
// their targets' log-probabilities.
func (r *hsRunner) head(rows []float32, n, pos int) error {
	for i := range n {
		r.reqs[i].IDs[0] = r.seq[pos+i+1]
	}
	if err := r.eng.HeadReduce(rows, n, r.reqs[:n], r.res[:n]); err != nil {
		return fmt.Errorf("head reduce: %w", err)
	}
	for i := range n {
		o := &r.res[i]
		if len(o.Picked) != 1 {
			return fmt.Errorf("head reduce returned %d picked logits, want 1", len(o.Picked))
		}
		lp := endingLogProb(o.Picked[0], o.Max, o.SumExp, pos+i == r.row0)
		if math.IsNaN(lp) || math.IsInf(lp, 1) {
			return fmt.Errorf("row %d (target token %d): non-finite log-probability (max %v, sum exp %v, target logit %v)",
				pos+i, r.reqs[i].IDs[0], o.Max, o.SumExp, o.Picked[0])
		}
		r.sum += lp
	}
	return nil
}

// report is the run's report once the loop has ended (reason and err from it).
func (r *hsRunner) report(reason string, err error) Report {
	rep := Report{
		Object: ReportObject, Method: MethodHellaSwag, Ctx: r.ctxLen, Config: r.cfg, Text: r.req.Path,
		Partial: err != nil, PartialReason: reason, PrefillTokens: r.prefillDone,
		PrefillAttentionKept: r.blocks.Fraction(),
	}
	reportTiming(&rep, r.start, r.held, r.prefillDone)
	rep.HellaSwag = hellaswagReport(len(r.req.Tasks), r.results)
	if n := finiteScores(rep.HellaSwag.Results); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"%d ending scores were -Inf (a first token of float probability 0) and are written as %g", n, -math.MaxFloat64))
	}
	r.event(Event{Kind: EventFinished, Partial: rep.Partial, Reason: rep.PartialReason})
	return rep
}

// finiteScores replaces the -Inf scores JSON cannot carry by the lowest
// float64 and counts them.
func finiteScores(results []HellaSwagResult) int {
	n := 0
	for i := range results {
		for s, v := range results[i].Scores {
			if math.IsInf(v, -1) {
				results[i].Scores[s] = -math.MaxFloat64
				n++
			}
		}
	}
	return n
}

// event fills the run's totals and running figures into e and sends it.
func (r *hsRunner) event(e Event) {
	if r.req.Progress == nil {
		return
	}
	e.Method, e.Ctx = MethodHellaSwag, r.ctxLen
	e.WindowsTotal, e.WindowsDone = len(r.tasks), len(r.results)
	e.PrefillTotal, e.PrefillDone = r.prefillTotal, r.prefillDone
	eventTiming(&e, r.start, r.loopStart, r.held, 0)
	p := HellaSwagProgress{TasksDone: len(r.results), TasksTotal: len(r.tasks)}
	if len(r.results) > 0 {
		p.Accuracy, p.CI95Low, p.CI95High = HellaSwagRunning(r.correct, len(r.results))
	}
	e.HellaSwag = &p
	t0 := time.Now()
	r.req.Progress(e)
	r.held += time.Since(t0)
}
