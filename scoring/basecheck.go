package scoring

// basecheck.go owns the checks of a base's records. ReadBase runs them
// on every base it opens, of either format, so that a run (resumed or
// not) and `plexbench bases verify` refuse a damaged base before any
// window is scored, naming its first bad record: every value finite,
// log-probabilities at most 0 and NLLs at least 0 (within rounding), and
// in a plexbench record the ids inside the vocabulary, distinct, and
// ranked by descending log-probability.

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// baseLogProbSlack is how far above 0 a stored log-probability, or below
// 0 a stored NLL, may lie: float rounding, not a probability above 1.
// (llama.cpp's rows top out within a few 1e-6 of −ln Σ exp.)
const baseLogProbSlack = 1e-4

// maxStampVocab bounds the per-id table the duplicate check keeps; a
// larger (or unknown) vocabulary is checked by sorting each record's ids.
const maxStampVocab = 1 << 24

// recordCheck checks a base's records in the order they are stored. The
// zero place names records by index only.
type recordCheck struct {
	name  string
	vocab int // ids must lie below it; 0: unknown
	place func(int) string
	seen  []uint32 // per id, 1 + the last record holding it
	ids   []int32  // scratch: a record's ids, sorted
}

// newRecordCheck checks the records of b, whose header is read; windows
// are the base's windows when its geometry plans (nil: records are named
// by index only).
func newRecordCheck(b *BaseReader, windows []Window) *recordCheck {
	c := &recordCheck{name: b.Name, vocab: b.Header.Meta.VocabSize}
	if b.Format == BaseFormatLlama {
		c.place = llamaPlace(b.Header.Ctx)
	} else if windows != nil {
		c.place = planPlace(windows)
	}
	if c.vocab > 0 && c.vocab <= maxStampVocab && b.Format != BaseFormatLlama {
		c.seen = make([]uint32, c.vocab)
	}
	return c
}

// planPlace names record i by the window of windows it scores and its
// position (row) in that window.
func planPlace(windows []Window) func(int) string {
	return func(i int) string {
		for _, w := range windows {
			if i < w.Scored {
				return fmt.Sprintf(" (window %d, position %d)", w.Index, w.FirstRow+i)
			}
			i -= w.Scored
		}
		return ""
	}
}

// llamaPlace names row i of a llama.cpp base of chunks of ctx tokens.
func llamaPlace(ctx int) func(int) string {
	rows := llamaRows(ctx)
	return func(i int) string {
		return fmt.Sprintf(" (window %d, position %d)", i/rows, ctx/2+i%rows)
	}
}

// bad is the error for record (what: "record" or "row") i.
func (c *recordCheck) bad(what string, i int, format string, args ...any) error {
	where := ""
	if c.place != nil {
		where = c.place(i)
	}
	return fmt.Errorf("%w %s: %s %d%s: %s", ErrBadBase, c.name, what, i, where, fmt.Sprintf(format, args...))
}

// topK checks plexbench record i: its NLL and its ids with their
// log-probabilities.
func (c *recordCheck) topK(i int, nll float64, ids []int32, lp []float32) error {
	// The comparisons are false for NaN; ±MaxFloat bound the finite.
	if !(nll >= -baseLogProbSlack && nll <= math.MaxFloat64) {
		return c.bad("record", i, "NLL %g (want a finite value >= 0)", nll)
	}
	for j, id := range ids {
		switch l := lp[j]; {
		case id < 0 || (c.vocab > 0 && int(id) >= c.vocab):
			return c.bad("record", i, "id %d outside the vocabulary (%d)", id, c.vocab)
		case !(l <= baseLogProbSlack && l >= -math.MaxFloat32):
			return c.bad("record", i, "log-probability %g of id %d (want a finite value <= 0)", lp[j], id)
		case j > 0 && lp[j] > lp[j-1]:
			return c.bad("record", i, "log-probabilities out of order at rank %d (%g after %g)", j, lp[j], lp[j-1])
		}
	}
	if j, k := c.duplicate(i, ids); j >= 0 {
		return c.bad("record", i, "id %d at ranks %d and %d", ids[k], j, k)
	}
	return nil
}

// duplicate finds two ranks j < k of record i holding the same id; j is
// −1 when the ids are distinct. The ids are inside the vocabulary.
func (c *recordCheck) duplicate(i int, ids []int32) (j, k int) {
	if c.seen != nil {
		stamp := uint32(i) + 1
		for k, id := range ids {
			if c.seen[id] == stamp {
				return slices.Index(ids, id), k
			}
			c.seen[id] = stamp
		}
		return -1, 0
	}
	c.ids = append(c.ids[:0], ids...)
	slices.Sort(c.ids)
	for n := 1; n < len(c.ids); n++ {
		if id := c.ids[n]; id == c.ids[n-1] {
			j := slices.Index(ids, id)
			return j, j + 1 + slices.Index(ids[j+1:], id)
		}
	}
	return -1, 0
}

// llamaRow checks row i of a llama.cpp base by its scale and minimum
// log-probability, which fix every log-probability it holds: a row
// llama-perplexity wrote from non-finite logits has a NaN in them.
func (c *recordCheck) llamaRow(i int, scale, minLP float32) error {
	s, m := float64(scale), float64(minLP)
	top := float64(float32(scale*llamaCodeScale) + minLP)
	if !(s >= 0) || math.IsInf(s, 1) || !(m <= baseLogProbSlack) || math.IsInf(m, -1) || !(top <= baseLogProbSlack) {
		return c.bad("row", i, "scale %g, min log-probability %g (want finite values, scale >= 0, log-probabilities <= 0): "+
			"llama-perplexity writes such a row for a model whose logits are not finite", s, m)
	}
	return nil
}

// checkTopKRecords reads every record of b (a plexbench base whose header
// and tokens are read) and checks them in order. bad is the first bad
// record; err a failure to read.
func checkTopKRecords(b *BaseReader, windows []Window) (bad, err error) {
	c := newRecordCheck(b, windows)
	k := b.Header.TopK
	ids, lp := make([]int32, k), make([]float32, k)
	for i := range b.Header.Scored {
		nll, err := b.Next(ids, lp)
		if err != nil {
			return nil, err
		}
		if bad := c.topK(i, nll, ids, lp); bad != nil {
			return bad, nil
		}
	}
	return nil, nil
}

// checkLlamaRows checks every row of the llama.cpp base b held by r,
// reading only each row's scale and minimum (8 bytes of 2·nv), so that a
// base of a large vocabulary is not read whole twice.
func checkLlamaRows(r io.ReaderAt, b *BaseReader) error {
	c := newRecordCheck(b, nil)
	h := &b.Header
	rowBytes := int64(2 * llamaRowWords(h.Meta.VocabSize))
	off := int64(llamaHeader) + 4*int64(h.Tokens)
	var head [8]byte
	for i := range h.Scored {
		if _, err := r.ReadAt(head[:], off+int64(i)*rowBytes); err != nil {
			return fmt.Errorf("%w %s: row %d: %v", ErrBadBase, b.Name, i, err)
		}
		scale, minLP := llamaRowHead(head[:])
		if err := c.llamaRow(i, scale, minLP); err != nil {
			return err
		}
	}
	return nil
}
