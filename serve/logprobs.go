package serve

// logprobs.go owns what a prompt asks of the engine and what comes back:
// the prompt prefilled from an empty KV cache, and for each position p
// from the first asked, the row of position p-1 through the head's pick
// and top-k reductions: the log-probability of token p, its top-k, the
// ids the request names, and (for vLLM's prompt_logprobs) the token's
// rank; with one token asked after the prompt, the greedy next token from
// the last row. Log-probabilities are scoring.NLL's, negated: the scoring
// path's float64 arithmetic on the same reductions.

import (
	"context"
	"fmt"
	"math"
	"net/http"

	"plexbench/engine"
	"plexbench/scoring"
)

// scoreJob is what one prompt asks.
type scoreJob struct {
	tokens []int32
	from   int     // first position with an entry (position 0's entry is null)
	topK   int     // top log-probabilities per position
	ids    []int32 // log-probabilities of these ids at every position
	ranks  bool    // each token's rank in its row (vLLM's prompt_logprobs)
	next   bool    // the greedy token after the prompt
}

// idLogprob is one id's log-probability in a row.
type idLogprob struct {
	id int32
	lp float64
}

// rowResult is one row's figures: the log-probability of the token it
// predicts (for the row after the prompt, the greedy token's), the rank
// of that token (1 = the largest logit; ties count ahead), the row's top
// k, and the named ids' log-probabilities.
type rowResult struct {
	id    int32
	lp    float64
	rank  int
	top   []idLogprob
	named []float64
}

// scored is a prompt's results: positions first..len(tokens)-1 (first =
// max(from, 1)), and the greedy next token when asked.
type scored struct {
	first int
	pos   []rowResult
	next  *rowResult
}

// scoreAll runs jobs on the engine once it is free; the engine is free
// again when it returns, before the response is written, so that a slow
// reader holds nothing.
func (s *Server) scoreAll(ctx context.Context, jobs []*scoreJob) ([]*scored, *apiError) {
	release, e := s.engine(ctx)
	if e != nil {
		return nil, e
	}
	defer release()
	out := make([]*scored, len(jobs))
	for i, j := range jobs {
		sc, err := s.score(ctx, j)
		if err != nil {
			if ctx.Err() != nil {
				return nil, errorf(499, "ClientClosedRequest", "client closed the request")
			}
			return nil, errorf(http.StatusInternalServerError, "InternalServerError", "prompt %d: %v", i, err)
		}
		out[i] = sc
	}
	return out, nil
}

// score runs j on the engine; the caller holds it. A cancelled ctx stops
// the prefill between passes.
func (s *Server) score(ctx context.Context, j *scoreJob) (*scored, error) {
	n := len(j.tokens)
	out := &scored{first: max(j.from, 1)}
	out.pos = make([]rowResult, max(n-out.first, 0))
	firstRow, lastRow := out.first-1, n-2
	if j.next {
		lastRow = n - 1
		out.next = &rowResult{}
	}
	if lastRow < firstRow {
		return out, nil
	}
	h := s.info.HiddenSize
	done := firstRow
	err := s.eng.Prefill(ctx, j.tokens, firstRow, func(pos int, hidden []float32, rows int) error {
		if len(hidden) < rows*h {
			return fmt.Errorf("engine emitted %d rows in %d floats (hidden size %d)", rows, len(hidden), h)
		}
		if pos != done && pos <= lastRow {
			return fmt.Errorf("engine emitted row %d, expected row %d", pos, done)
		}
		rows = min(rows, lastRow-pos+1)
		for lo := 0; lo < rows; lo += engine.HeadRows {
			m := min(engine.HeadRows, rows-lo)
			if err := s.head(j, hidden[lo*h:(lo+m)*h], m, pos+lo, out); err != nil {
				return err
			}
		}
		done = max(done, pos+rows)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if done != lastRow+1 {
		return nil, fmt.Errorf("engine emitted rows up to %d of %d", done-1, lastRow)
	}
	return out, nil
}

// head reduces m rows from row pos and fills their results.
func (s *Server) head(j *scoreJob, hidden []float32, m, pos int, out *scored) error {
	n := len(j.tokens)
	reqs, res := s.reqs[:m], s.res[:m]
	for i := range m {
		q := &reqs[i]
		q.TopK = j.topK
		switch {
		case j.ranks:
			q.IDs = s.ids() // the whole row: the target's and named ids' logits are in it
			continue
		case pos+i < n-1:
			s.idBuf[i] = append(append(s.idBuf[i][:0], j.tokens[pos+i+1]), j.ids...)
		default:
			s.idBuf[i] = append(s.idBuf[i][:0], j.ids...)
		}
		q.IDs = s.idBuf[i]
	}
	if err := s.eng.HeadReduce(hidden, m, reqs, res); err != nil {
		return fmt.Errorf("head reduce: %w", err)
	}
	for i := range m {
		row, r := pos+i, &res[i]
		if math.IsNaN(float64(r.Max)) || math.IsInf(float64(r.Max), 0) || math.IsNaN(r.SumExp) || math.IsInf(r.SumExp, 0) {
			return fmt.Errorf("row %d: the model's logits are not finite (max %v, sum exp %v)", row, r.Max, r.SumExp)
		}
		lp := func(logit float32) float64 { return -scoring.NLL(logit, r.Max, r.SumExp) }
		var o *rowResult
		var target int32
		var targetLogit float32
		if row == n-1 {
			o, target, targetLogit = out.next, r.ArgMax, r.Max
		} else {
			o, target = &out.pos[row+1-out.first], j.tokens[row+1]
			if j.ranks {
				targetLogit = r.Picked[target]
			} else {
				targetLogit = r.Picked[0]
			}
		}
		o.id, o.lp = target, lp(targetLogit)
		if j.ranks {
			o.rank = 0
			for _, l := range r.Picked {
				if l >= targetLogit {
					o.rank++
				}
			}
		}
		o.top = make([]idLogprob, j.topK)
		for k := range o.top {
			o.top[k] = idLogprob{r.TopIDs[k], lp(r.TopLogits[k])}
		}
		if len(j.ids) > 0 {
			o.named = make([]float64, len(j.ids))
			for k, id := range j.ids {
				switch {
				case j.ranks:
					o.named[k] = lp(r.Picked[id])
				case row == n-1:
					o.named[k] = lp(r.Picked[k])
				default:
					o.named[k] = lp(r.Picked[1+k])
				}
			}
		}
	}
	return nil
}

// ids is every id of the vocabulary, made once.
func (s *Server) ids() []int32 {
	if s.allIDs == nil {
		s.allIDs = make([]int32, s.vocab)
		for i := range s.allIDs {
			s.allIDs[i] = int32(i)
		}
	}
	return s.allIDs
}

// finite is lp as JSON can carry it: -Inf (a token of probability 0) as
// -9999, as vLLM and OpenAI write it.
func finite(lp float64) float64 {
	if math.IsInf(lp, -1) {
		return -9999
	}
	return lp
}
