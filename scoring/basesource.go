package scoring

// basesource.go owns what a run compares against: a base read record by
// record in the order the run scores tokens, one implementation per base
// format (a plexbench top-k base, a llama.cpp full-vocabulary base). A
// run without a base has none.

import (
	"fmt"
	"slices"

	"plexbench/kernels"
)

// scoredRow is one scored token's reductions, as a base source compares
// them and a base sink records them.
type scoredRow struct {
	target int32
	nll    float64
	lnSum  float64    // ln Σ exp(logit − max)
	res    *RowResult // the head's reductions; nil for a RowsEngine's row
	vocab  []float32  // the run's logits over the whole vocabulary, when a full base needs them

	argMax int32   // the run's most probable id
	topP   float32 // and its probability
	// atBaseLP is the run's log-probabilities at the base's top-k ids
	// (NaN where a RowsEngine returned none); topIDs and topLP its own
	// top ids and their log-probabilities, as many as a base recorded
	// needs.
	atBaseLP []float32
	topIDs   []int32
	topLP    []float32
}

// baseSource is the base a run compares against. Records are staged per
// head slot (0..HeadRows−1): next reads the following record into a slot
// before the head runs, compare uses it once the head has.
type baseSource interface {
	// file is the open base: its header, tokens and identity.
	file() *BaseReader
	// topK is how many of the base's ids each row asks the head to pick
	// (the ids next writes); fullVocab whether it needs the whole row.
	topK() int
	fullVocab() bool
	// next reads the next record into slot, writing its ids into ids
	// (topK long).
	next(slot int, ids []int32) error
	// skip reads past n records (windows another shard scores, or that a
	// journal replays).
	skip(n int) error
	compare(slot int, row *scoredRow) TokenComparison
	// finish fills the report's KLD object with the base's identity and,
	// with a coarsening, its top-k figures.
	finish(k *KLDReport)
}

// openSource opens req's base for a run on a model of the given
// vocabulary; nil when the request compares against none.
func openSource(req *Request, vocab int) (baseSource, error) {
	if req.KLDBase == "" {
		if req.coarsening() {
			return nil, badRequest("kld_coarsen_top_k needs a llama.cpp base to compare against (its rows hold the whole vocabulary)")
		}
		return nil, nil
	}
	b, err := OpenBase(req.KLDBase)
	if err != nil {
		return nil, err
	}
	if b.Format != BaseFormatLlama {
		if req.coarsening() {
			b.Close()
			return nil, badRequest("kld_coarsen_top_k needs a llama.cpp base to compare against (its rows hold the whole vocabulary)")
		}
		return newTopKSource(b, vocab), nil
	}
	if v := b.Header.Meta.VocabSize; vocab > 0 && v != vocab {
		b.Close()
		return nil, fmt.Errorf("%w: %s: the llama.cpp base has a vocabulary of %d entries, this model %d: %w",
			ErrBaseMismatch, b.Name, v, vocab, tokenMismatch("another tokenizer's; compare by bits per byte only (--allow-tokenizer-mismatch)"))
	}
	s := &llamaSource{readerSource: readerSource{b}, rows: make([]LlamaRow, HeadRows)}
	if req.coarsening() {
		if req.Journal != "" || req.Shard.N > 0 {
			b.Close()
			return nil, badRequest("kld_coarsen_top_k is kept by neither journals nor shards: run it whole, without a journal")
		}
		s.coarseK, s.coarseByK = req.CoarsenTopK, req.CoarsenTopKs
		s.coarse = NewCoarseningSet(append([]int{req.CoarsenTopK}, req.CoarsenTopKs...)...)
	}
	return s, nil
}

// readerSource is what both formats share: the open file.
type readerSource struct{ b *BaseReader }

func (s readerSource) file() *BaseReader { return s.b }

// sourceFile is s's open base; nil for none.
func sourceFile(s baseSource) *BaseReader {
	if s == nil {
		return nil
	}
	return s.file()
}

// topKSource compares against a plexbench base: each record holds the
// base's NLL and its top k ids with their log-probabilities.
type topKSource struct {
	readerSource
	vocab     int
	restEmpty bool      // the base's top k is the whole vocabulary: its rest holds no mass
	ids       [][]int32 // per slot: the base's top-k ids (slices of the head requests)
	baseLP    [][]float32
	baseNLL   []float64
	overlap   kldOverlap // of a RowsEngine's rows
}

func newTopKSource(b *BaseReader, vocab int) *topKSource {
	k := b.Header.TopK
	s := &topKSource{readerSource: readerSource{b}, vocab: vocab, restEmpty: vocab > 0 && k >= vocab,
		ids: make([][]int32, HeadRows), baseLP: make([][]float32, HeadRows), baseNLL: make([]float64, HeadRows)}
	for i := range HeadRows {
		s.baseLP[i] = make([]float32, k)
	}
	return s
}

// grow gives the source at least n slots (a RowsEngine run stages the
// records of every window in flight).
func (s *topKSource) grow(n int) {
	for len(s.ids) < n {
		s.ids, s.baseLP, s.baseNLL = append(s.ids, nil), append(s.baseLP, make([]float32, s.topK())), append(s.baseNLL, 0)
	}
}

func (s *topKSource) topK() int       { return s.b.Header.TopK }
func (s *topKSource) fullVocab() bool { return false }

func (s *topKSource) next(slot int, ids []int32) error {
	nll, err := s.b.Next(ids, s.baseLP[slot])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id < 0 || (s.vocab > 0 && int(id) >= s.vocab) {
			return fmt.Errorf("%w %s: record %d holds token id %d outside the vocabulary (%d)",
				ErrBadBase, s.b.Name, s.b.read-1, id, s.vocab)
		}
	}
	s.ids[slot], s.baseNLL[slot] = ids, nll
	return nil
}

func (s *topKSource) skip(n int) error {
	ids := make([]int32, s.topK())
	for range n {
		if _, err := s.b.Next(ids, s.baseLP[0]); err != nil {
			return err
		}
	}
	return nil
}

func (s *topKSource) compare(slot int, row *scoredRow) TokenComparison {
	if row.res != nil {
		return CompareToken(row.nll, s.baseNLL[slot], row.argMax, s.ids[slot], s.baseLP[slot], row.atBaseLP, s.restEmpty)
	}
	c, known := CompareTokenKnown(row.nll, s.baseNLL[slot], row.argMax, s.ids[slot], s.baseLP[slot], row.atBaseLP, s.restEmpty)
	s.overlap.named += len(row.atBaseLP)
	s.overlap.known += known
	return c
}

func (s *topKSource) finish(k *KLDReport) { k.Base, k.TopK = s.b.Name, s.topK() }

// llamaSource compares against a base llama-perplexity wrote: each row
// holds the base's whole vocabulary as 16-bit codes. With a coarsening it
// also gives each token the KLD a top-k plexbench base would.
type llamaSource struct {
	readerSource
	rows   []LlamaRow
	coarse *CoarseningSet
	// coarseK is the k reported as kld.top_k_coarsened (0: none),
	// coarseByK those in kld.top_k_coarsened_by_k.
	coarseK   int
	coarseByK []int
}

func (s *llamaSource) topK() int       { return 0 }
func (s *llamaSource) fullVocab() bool { return true }

func (s *llamaSource) next(slot int, _ []int32) error { return s.b.NextLlama(&s.rows[slot]) }

func (s *llamaSource) skip(n int) error {
	for range n {
		if err := s.b.NextLlama(&s.rows[0]); err != nil {
			return err
		}
	}
	return nil
}

func (s *llamaSource) compare(slot int, row *scoredRow) TokenComparison {
	r := row.res
	c := CompareFull(row.target, row.vocab, r.Max, r.ArgMax, r.SumExp, &s.rows[slot])
	if s.coarse != nil {
		s.coarse.AddRow(c, row.vocab, r.Max, r.ArgMax, r.SumExp, &s.rows[slot])
	}
	return c
}

func (s *llamaSource) finish(k *KLDReport) {
	k.Base, k.BaseFormat, k.TopK = s.b.Name, BaseFormatLlama, s.b.Header.Meta.VocabSize
	if s.coarse == nil {
		return
	}
	if c, ok := s.coarse.Result(s.coarseK); ok {
		k.TopKCoarsened = &c
	}
	for _, st := range s.coarse.Stats {
		if slices.Contains(s.coarseByK, st.TopK) {
			k.TopKCoarsenedByK = append(k.TopKCoarsenedByK, st.Result())
		}
	}
}

// logProbs writes the log-probabilities of logits into lp (grown when
// too short) and returns it.
func logProbs(lp, logits []float32, max float32, lnSum float64) []float32 {
	lp = kernels.Grow(lp, len(logits))
	for j, l := range logits {
		lp[j] = LogProb(l, max, lnSum)
	}
	return lp
}
