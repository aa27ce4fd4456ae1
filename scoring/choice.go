package scoring

// choice.go owns what llama-perplexity's three multiple-choice modes
// (HellaSwag, Winogrande, the binary multiple-choice format) share: a
// drawn task's token sequences and the log-probabilities its answers'
// scores read, the run that prefills each sequence from an empty KV cache
// and reads those rows through the head's pick reduction, each answer's
// mean in the mode's precision, the chosen answer, the per-task results,
// the running figures in events and the report's common part. Each mode's
// file says how its tasks are read, drawn and tokenized.

import (
	"context"
	"fmt"
	"math"
	"time"
)

// ChoiceOptions are what a multiple-choice run takes beside its tasks.
type ChoiceOptions struct {
	// Count is how many tasks to draw (llama-perplexity's --hellaswag-tasks,
	// --winogrande-tasks, --multiple-choice-tasks); 0: the mode's default.
	// It is capped at the file's task count.
	Count int
	// Ctx is llama-perplexity's -c; 0: DefaultCtx. Every task's tokens
	// (the common prefix once, then each answer's own) must fit in the
	// context llama-perplexity allocates, ChoiceContext(Ctx, Parallel).
	Ctx int
	// Parallel is llama-perplexity's -np: its multiple-choice modes run
	// max(4, -np) sequences at once, and a task may have no more answers
	// than that. 0: the least llama-perplexity accepts for the file,
	// ChoiceParallel.
	Parallel int
	// Path names the task file, for messages and the report; FileSHA256 is
	// its content's hash (hex), which records group by.
	Path       string
	FileSHA256 string
	// Progress, when set, receives events synchronously.
	Progress func(Event)
}

// ChoiceResult is one scored task of any of the three modes.
type ChoiceResult struct {
	Task   int `json:"task"`   // index in the file (its tasks, from 0)
	Gold   int `json:"gold"`   // the right answer, from 0
	Chosen int `json:"chosen"` // the answer of largest score, ties broken as llama-perplexity breaks them
	// Scores are each answer's mean log-probability per scored token.
	Scores []float64 `json:"scores"`
}

// ChoiceProgress is a multiple-choice run's running figures in an Event:
// HellaSwag's acc_norm with its Wilson interval, or the others' accuracy
// with the ± llama-perplexity prints, in percent.
type ChoiceProgress struct {
	TasksDone   int     `json:"tasks_done"`
	TasksTotal  int     `json:"tasks_total"`
	Correct     int     `json:"correct"`
	Accuracy    float64 `json:"accuracy"`
	CI95Low     float64 `json:"ci95_low"`    // HellaSwag only
	CI95High    float64 `json:"ci95_high"`   // HellaSwag only
	Uncertainty float64 `json:"uncertainty"` // Winogrande and multiple choice
}

// ChoiceParallel is the number of sequences llama-perplexity's
// multiple-choice modes run at once for -np parallel (0: not given): it
// raises -np to 4. Unless parallel is given, it is also raised to the
// largest answer count of the file's tasks, the least -np with which
// llama-perplexity scores the file instead of stopping at a task that
// "requires a higher -np|--parallel value".
func ChoiceParallel(parallel, answers int) int {
	if parallel == 0 {
		parallel = answers
	}
	return max(4, parallel)
}

// ChoiceContext is the context llama-perplexity allocates for a
// multiple-choice run at -c ctx with n sequences (ChoiceParallel): n·ctx
// positions, padded to a multiple of 256 as llama_context pads n_ctx. Its
// tasks are packed into it, each sequence from position 0, so a task's
// tokens may exceed ctx as long as they fit in it.
func ChoiceContext(ctx, n int) int { return (n*ctx + 255) / 256 * 256 }

// choiceTask is a drawn task, tokenized: the sequences it prefills and, in
// llama.cpp's accumulation order, the log-probabilities each answer's
// score sums.
type choiceTask struct {
	index, gold int
	seqs        [][]int32
	reads       []logitRead
	ends        []int // answer a sums reads[ends[a-1]:ends[a]] (from 0 for a = 0)
}

// logitRead is one log-probability a score reads: target's under the row
// of sequence seq at position pos, through llama.cpp's softmax (the first
// token of a HellaSwag or multiple-choice answer) or its log-softmax.
type logitRead struct {
	seq, pos int
	target   int32
	softmax  bool
}

// choiceMode is how a mode turns reads into a choice.
type choiceMode struct {
	method string
	// float: answers' sums and means in float, as Winogrande and multiple
	// choice keep them; else double, as HellaSwag.
	float bool
	// lastOnTies: Winogrande's score_1st > score_2nd ? 1 : 2; else the
	// first of equal maxima.
	lastOnTies bool
	running    func(correct, n int) ChoiceProgress
}

// choiceRunner holds one multiple-choice run's state.
type choiceRunner struct {
	ctx    context.Context
	eng    Engine
	mode   choiceMode
	opt    ChoiceOptions
	cfg    EngineConfig
	ctxLen int
	nSeq   int // sequences llama-perplexity runs at once (ChoiceParallel)
	limit  int // the positions its context holds (ChoiceContext)
	tasks  []choiceTask

	rows  rowStage
	reqs  []RowRequest
	res   []RowResult
	cur   *choiceTask // the task in flight, the first row of its sequence in flight, that row's reads
	row0  int
	byRow [][]int
	vals  []float64

	results                   []ChoiceResult
	correct                   int
	prefillDone, prefillTotal int
	blocks                    AttentionBlocks
	start, loopStart          time.Time
	held                      time.Duration
}

// newChoiceRunner checks o and sizes the head requests and the context
// for tasks of at most answers answers.
func newChoiceRunner(ctx context.Context, eng Engine, mode choiceMode, o ChoiceOptions, answers int) (*choiceRunner, error) {
	r := &choiceRunner{ctx: ctx, eng: eng, mode: mode, opt: o, cfg: runConfig(eng), ctxLen: o.Ctx, start: time.Now()}
	if r.ctxLen == 0 {
		r.ctxLen = DefaultCtx
	}
	if o.Count < 0 || r.ctxLen < 0 || o.Parallel < 0 {
		return nil, badRequest("%s: %d tasks at ctx %d, %d parallel", mode.method, o.Count, r.ctxLen, o.Parallel)
	}
	r.nSeq = ChoiceParallel(o.Parallel, answers)
	r.limit = ChoiceContext(r.ctxLen, r.nSeq)
	hidden := eng.Info().HiddenSize
	if rowsEngineOf(eng) != nil {
		return r, nil // its rows come as log-probabilities (rowsengine.go)
	}
	if hidden <= 0 {
		return nil, fmt.Errorf("engine reports hidden size %d", hidden)
	}
	r.rows = newRowStage(hidden, r.head)
	r.reqs, r.res = make([]RowRequest, HeadRows), make([]RowResult, HeadRows)
	return r, nil
}

// runChoice draws and tokenizes tasks with prepare (file indices to
// tasks), scores them and returns the report's common part and the
// results; errors from prepare are prefixed with the task file's path.
// answers is the largest answer count of the file's tasks.
func runChoice(ctx context.Context, eng Engine, mode choiceMode, o ChoiceOptions, answers int, order []int,
	prepare func(r *choiceRunner, idx int) (choiceTask, error)) (Report, []ChoiceResult, error) {
	r, err := newChoiceRunner(ctx, eng, mode, o, answers)
	for i := 0; err == nil && i < len(order); i++ {
		var t choiceTask
		if t, err = prepare(r, order[i]); err == nil {
			r.add(t)
		}
	}
	if err != nil {
		if o.Path != "" {
			err = fmt.Errorf("%s: %w", o.Path, err)
		}
		return Report{}, nil, err
	}
	reason, err := r.loop()
	return r.report(reason, err), r.results, err
}

// add appends a prepared task.
func (r *choiceRunner) add(t choiceTask) {
	r.tasks = append(r.tasks, t)
	for s, seq := range t.seqs {
		if r.reads(&t, s) {
			r.prefillTotal += len(seq)
		}
	}
}

// reads reports whether any of t's reads is of sequence s.
func (r *choiceRunner) reads(t *choiceTask, s int) bool {
	for _, rd := range t.reads {
		if rd.seq == s {
			return true
		}
	}
	return false
}

// fits checks that a task of these sequences, sharing prefix tokens, is
// one llama-perplexity scores: its answers at most the sequences it runs
// at once, its tokens as it counts them (the prefix once) within its
// context; and that each sequence fits this engine's KV cache.
func (r *choiceRunner) fits(idx int, seqs [][]int32, prefix int) error {
	if len(seqs) > r.nSeq {
		return fmt.Errorf("task %d has %d answers: llama-perplexity runs %d sequences at once with -np %d "+
			"and needs at least -np %d (--parallel)", idx, len(seqs), r.nSeq, r.opt.Parallel, len(seqs))
	}
	need, longest := prefix, 0
	for _, s := range seqs {
		need += len(s) - prefix
		longest = max(longest, len(s))
	}
	if need > r.limit {
		return fmt.Errorf("task %d does not fit in the context window (requires %d tokens; llama-perplexity's context "+
			"at ctx %d holds %d: %d sequences, padded to 256)", idx, need, r.ctxLen, r.limit, r.nSeq)
	}
	if kv := r.cfg.KVCapacity; kv > 0 && longest > kv {
		return fmt.Errorf("task %d has a sequence of %d tokens, more than the KV cache's %d positions (kv-len)", idx, longest, kv)
	}
	return nil
}

// tokenizeAll tokenizes each text, naming the task and answer on failure.
func (r *choiceRunner) tokenizeAll(idx int, texts []string) ([][]int32, error) {
	seqs := make([][]int32, len(texts))
	for a, s := range texts {
		ids, err := r.eng.Tokenize(s)
		if err != nil {
			return nil, fmt.Errorf("task %d, answer %d: %w", idx, a, err)
		}
		seqs[a] = ids
	}
	return seqs, nil
}

// CommonPrefix counts the leading tokens all sequences share, leaving
// each at least one token of its own to score (llama.cpp reads past the
// end of an answer that tokenizes to nothing of its own).
func CommonPrefix(seqs [][]int32) int {
	n := len(seqs[0])
	for _, s := range seqs[1:] {
		n = min(n, len(s))
	}
	n = max(n-1, 0)
	for k := range n {
		for _, s := range seqs[1:] {
			if s[k] != seqs[0][k] {
				return k
			}
		}
	}
	return n
}

// endingReads is the reads of HellaSwag's and multiple choice's scores:
// each answer's tokens after the common prefix, each predicted from the
// row before it (the prefix's last row, through the softmax, predicts the
// first).
func endingReads(idx, gold int, seqs [][]int32, prefix int) choiceTask {
	t := choiceTask{index: idx, gold: gold, seqs: seqs}
	for s, seq := range seqs {
		for pos := prefix - 1; pos < len(seq)-1; pos++ {
			t.reads = append(t.reads, logitRead{seq: s, pos: pos, target: seq[pos+1], softmax: pos == prefix-1})
		}
		t.ends = append(t.ends, len(t.reads))
	}
	return t
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
func (r *choiceRunner) loop() (reason string, err error) {
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
				fmt.Errorf("%s task %d: %w", r.mode.method, t.index, err)
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

// task prefills the task's sequences, reads their log-probabilities and
// chooses the answer of largest score.
func (r *choiceRunner) task(t *choiceTask) (ChoiceResult, error) {
	r.cur, r.vals = t, growFloats(r.vals, len(t.reads))
	for s := range t.seqs {
		if err := r.sequence(s); err != nil {
			return ChoiceResult{}, fmt.Errorf("sequence %d: %w", s, err)
		}
	}
	res := ChoiceResult{Task: t.index, Gold: t.gold, Scores: make([]float64, len(t.ends))}
	lo := 0
	for a, hi := range t.ends {
		res.Scores[a] = r.mode.mean(r.vals[lo:hi])
		lo = hi
		if s := res.Scores[a]; s > res.Scores[res.Chosen] || (r.mode.lastOnTies && s == res.Scores[res.Chosen]) {
			res.Chosen = a
		}
	}
	return res, nil
}

// mean is an answer's score: its reads' mean in the mode's precision.
func (m choiceMode) mean(v []float64) float64 {
	if m.float {
		var s float32
		for _, x := range v {
			s += float32(x)
		}
		return float64(s / float32(len(v)))
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func growFloats(v []float64, n int) []float64 {
	if cap(v) < n {
		return make([]float64, n)
	}
	return v[:n]
}

// sequence prefills sequence s of the task in flight from an empty KV
// cache and fills the values of its reads.
func (r *choiceRunner) sequence(s int) error {
	t := r.cur
	lo, hi := math.MaxInt, -1
	for _, rd := range t.reads {
		if rd.seq == s {
			lo, hi = min(lo, rd.pos), max(hi, rd.pos)
		}
	}
	if hi < 0 {
		return nil
	}
	r.row0 = lo
	r.byRow = r.byRow[:0]
	for range hi - lo + 1 {
		r.byRow = append(r.byRow, nil)
	}
	for k, rd := range t.reads {
		if rd.seq == s {
			r.byRow[rd.pos-lo] = append(r.byRow[rd.pos-lo], k)
		}
	}
	if re := rowsEngineOf(r.eng); re != nil {
		return r.rowsSequence(re, s, lo, hi)
	}
	r.rows.reset(lo, hi)
	// A task in flight always finishes: cancellation is honoured between tasks.
	err := r.eng.Prefill(context.WithoutCancel(r.ctx), t.seqs[s], lo, r.rows.emit)
	if err == nil {
		err = r.rows.flush()
	}
	if err != nil {
		return err
	}
	if done := r.rows.scored(); done != hi-lo+1 {
		return fmt.Errorf("engine emitted %d of the %d rows read", done, hi-lo+1)
	}
	r.prefillDone += len(t.seqs[s])
	b := r.eng.PrefillBlocks()
	r.blocks.Kept += b.Kept
	r.blocks.Total += b.Total
	return nil
}

// head takes n rows from position pos of the sequence in flight and
// computes the log-probabilities read from them.
func (r *choiceRunner) head(rows []float32, n, pos int) error {
	t := r.cur
	for i := range n {
		ids := r.reqs[i].IDs[:0]
		for _, k := range r.byRow[pos+i-r.row0] {
			ids = append(ids, t.reads[k].target)
		}
		r.reqs[i].IDs = ids
	}
	if err := r.eng.HeadReduce(rows, n, r.reqs[:n], r.res[:n]); err != nil {
		return fmt.Errorf("head reduce: %w", err)
	}
	for i := range n {
		o, ks := &r.res[i], r.byRow[pos+i-r.row0]
		if len(o.Picked) != len(ks) {
			return fmt.Errorf("head reduce returned %d picked logits, want %d", len(o.Picked), len(ks))
		}
		for j, k := range ks {
			lp := endingLogProb(o.Picked[j], o.Max, o.SumExp, t.reads[k].softmax)
			if math.IsNaN(lp) || math.IsInf(lp, 1) {
				return fmt.Errorf("row %d (target token %d): non-finite log-probability (max %v, sum exp %v, target logit %v)",
					pos+i, t.reads[k].target, o.Max, o.SumExp, o.Picked[j])
			}
			r.vals[k] = lp
		}
	}
	return nil
}

// endingLogProb is one token's log-probability in llama-perplexity's float
// arithmetic: through its softmax (a float probability, then the log of
// that float), or its log-softmax, a float logit − max − log(Σexp).
func endingLogProb(logit, max float32, sumExp float64, softmax bool) float64 {
	if softmax {
		p := float32(float64(expf(logit-max)) / sumExp)
		return float64(float32(math.Log(float64(p))))
	}
	return float64(logit - max - float32(math.Log(float64(float32(sumExp)))))
}

// report is the run's report without its mode's object, once the loop has
// ended (reason and err from it).
func (r *choiceRunner) report(reason string, err error) Report {
	rep := Report{
		Object: ReportObject, Method: r.mode.method, Ctx: r.ctxLen, Config: r.cfg, Text: r.opt.Path,
		Partial: err != nil, PartialReason: reason, PrefillTokens: r.prefillDone,
		PrefillAttentionKept: r.blocks.Fraction(),
	}
	reportTiming(&rep, r.start, r.held, r.prefillDone)
	if n := finiteScores(r.results); n > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"%d answer scores were -Inf (a token of float probability 0) and are written as %g", n, -math.MaxFloat64))
	}
	if r.results == nil {
		r.results = []ChoiceResult{}
	}
	r.event(Event{Kind: EventFinished, Partial: rep.Partial, Reason: rep.PartialReason})
	return rep
}

// finiteScores replaces the -Inf scores JSON cannot carry by the lowest
// float64 and counts them.
func finiteScores(results []ChoiceResult) int {
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
func (r *choiceRunner) event(e Event) {
	if r.opt.Progress == nil {
		return
	}
	e.Method, e.Ctx = r.mode.method, r.ctxLen
	e.WindowsTotal, e.WindowsDone = len(r.tasks), len(r.results)
	e.PrefillTotal, e.PrefillDone = r.prefillTotal, r.prefillDone
	eventTiming(&e, r.start, r.loopStart, r.held, 0)
	p := ChoiceProgress{}
	if len(r.results) > 0 {
		p = r.mode.running(r.correct, len(r.results))
	}
	p.TasksDone, p.TasksTotal, p.Correct = len(r.results), len(r.tasks), r.correct
	e.Choice = &p
	t0 := time.Now()
	r.opt.Progress(e)
	r.held += time.Since(t0)
}

// ChoiceRunning is the running figures after each of results (a report's,
// in scoring order) of a run of the mode method over total tasks: what
// the run's events carried, so a view can rebuild a saved run's chart.
func ChoiceRunning(method string, results []ChoiceResult, total int) ([]ChoiceProgress, error) {
	var mode choiceMode
	switch method {
	case MethodHellaSwag:
		mode = hellaswagMode
	case MethodWinogrande:
		mode = winograndeMode
	case MethodMultipleChoice:
		mode = multipleChoiceMode
	default:
		return nil, fmt.Errorf("%q is not a multiple-choice method", method)
	}
	out := make([]ChoiceProgress, len(results))
	correct := 0
	for i, r := range results {
		if r.Chosen == r.Gold {
			correct++
		}
		out[i] = mode.running(correct, i+1)
		out[i].TasksDone, out[i].TasksTotal, out[i].Correct = i+1, total, correct
	}
	return out, nil
}

// correctCount counts the results whose chosen answer is the gold one.
func correctCount(results []ChoiceResult) int {
	n := 0
	for _, r := range results {
		if r.Chosen == r.Gold {
			n++
		}
	}
	return n
}

// ChoiceSummary is a multiple-choice report's figures, whichever its mode:
// Uncertainty is Winogrande's and multiple choice's ±, CI95Low/High
// HellaSwag's Wilson interval.
type ChoiceSummary struct {
	Method         string
	TasksInFile    int
	TaskFileSHA256 string
	Tasks          int
	Accuracy       float64
	Uncertainty    float64
	CI95Low        float64
	CI95High       float64
	Results        []ChoiceResult
}

// Choice is r's multiple-choice figures; nil for a perplexity report.
func (r *Report) Choice() *ChoiceSummary {
	switch {
	case r.HellaSwag != nil:
		h := r.HellaSwag
		return &ChoiceSummary{Method: MethodHellaSwag, TasksInFile: h.TasksInFile, TaskFileSHA256: h.TaskFileSHA256,
			Tasks: h.Tasks, Accuracy: h.Accuracy, CI95Low: h.CI95Low, CI95High: h.CI95High, Results: h.Results}
	case r.Winogrande != nil:
		return r.Winogrande.summary(MethodWinogrande)
	case r.MultipleChoice != nil:
		return r.MultipleChoice.summary(MethodMultipleChoice)
	}
	return nil
}

func (c *ChoiceReport) summary(method string) *ChoiceSummary {
	return &ChoiceSummary{Method: method, TasksInFile: c.TasksInFile, TaskFileSHA256: c.TaskFileSHA256,
		Tasks: c.Tasks, Accuracy: c.Accuracy, Uncertainty: c.Uncertainty, Results: c.Results}
}

// Correct is how many of c's tasks chose the gold answer.
func (c *ChoiceSummary) Correct() int { return correctCount(c.Results) }

// Figure is the accuracy with its ± or interval, as a table shows it.
func (c *ChoiceSummary) Figure() string {
	return choiceFigure(c.Method, c.Accuracy, c.CI95Low, c.CI95High, c.Uncertainty)
}

// Figure is the running accuracy named as llama-perplexity names it, with
// HellaSwag's Wilson interval or the others' ±: the figure the headless
// progress line and the TUI show, and, after the last task, the report's
// (ChoiceSummary.Figure, after the name).
func (c *ChoiceProgress) Figure(method string) string {
	return ChoiceMetric(method) + " " + choiceFigure(method, c.Accuracy, c.CI95Low, c.CI95High, c.Uncertainty)
}

// ChoiceMetric is the name llama-perplexity gives the accuracy of the
// mode method: HellaSwag's acc_norm, the others' accuracy.
func ChoiceMetric(method string) string {
	if method == MethodHellaSwag {
		return "acc_norm"
	}
	return "accuracy"
}

func choiceFigure(method string, acc, lo, hi, u float64) string {
	if method == MethodHellaSwag {
		return fmt.Sprintf("%.4f%% [%.4f%%, %.4f%%]", acc, lo, hi)
	}
	return fmt.Sprintf("%.4f ± %.4f%%", acc, u)
}
