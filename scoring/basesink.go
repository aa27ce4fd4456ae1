package scoring

// basesink.go owns the base a run records: one implementation per format
// (a plexbench top-k base, a llama.cpp full-vocabulary base), written
// token by token as the run scores them and closed once the loop ends —
// complete, or for a stopped run kept partial where the format allows.

import (
	"fmt"
	"path/filepath"
)

// baseSink is the base a run records.
type baseSink interface {
	// topK is how many top ids each row's head request returns for the
	// base (0: none); fullVocab whether the sink needs the whole row.
	topK() int
	fullVocab() bool
	// append records one scored token; jw, when not nil, is the journal
	// record of the window in flight, which keeps what replay needs.
	append(row *scoredRow, jw *journalWindow) error
	// replay records a token taken from a journal.
	replay(nll float64, ids []int32, lp []float32) error
	// finish closes the base after the loop: a complete run's whole, a
	// partial run's (rep.Partial) or one a stopping rule ended
	// (rep.StoppedEarly) complete windows where the format keeps them. It fills rep's kld_base_* fields and, for a partial run, adds
	// to its reason what became of the base.
	finish(rep *Report, windows, scored int) error
	// abort discards the base; a no-op after finish.
	abort()
}

// openSink starts req's base for a run of plan over tokens; nil when the
// request records none.
func openSink(req *Request, plan Plan, tokens []int32, info ModelInfo, cfg EngineConfig) (baseSink, error) {
	switch {
	case req.KLDBaseOut == "":
		return nil, nil
	case req.KLDBaseFormat == BaseFormatLlama:
		if plan.Method != MethodChunks {
			return nil, badRequest("a llama.cpp base holds chunks only, not the %s method", plan.Method)
		}
		if info.VocabSize <= 0 {
			return nil, badRequest("a llama.cpp base needs the vocabulary size, which the engine does not report")
		}
		w, err := CreateLlamaBase(req.KLDBaseOut, plan.Ctx, info.VocabSize, len(plan.Windows), tokens)
		if err != nil {
			return nil, err
		}
		return &llamaSink{w: w, path: req.KLDBaseOut, vocab: info.VocabSize}, nil
	}
	k := req.topK()
	if info.VocabSize > 0 && k > info.VocabSize {
		return nil, badRequest("kld_top_k %d exceeds the vocabulary size %d", k, info.VocabSize)
	}
	h := BaseHeader{
		Method: plan.Method, Ctx: plan.Ctx, Stride: plan.Stride, ChunkLimit: plan.ChunkLimit,
		TopK: k, Windows: len(plan.Windows), Scored: plan.Scored, ModelSize: info.Size,
		Meta: BaseMeta{ModelFile: filepath.Base(info.Path), ModelArchitecture: info.Architecture,
			VocabSize: info.VocabSize, Config: cfg, WindowsPlanned: len(plan.Windows)},
	}
	w, err := CreateBase(req.KLDBaseOut, h, tokens)
	if err != nil {
		return nil, err
	}
	return &topKSink{w: w, path: req.KLDBaseOut, k: k}, nil
}

// topKSink records a plexbench base: each token's NLL and the run's top k
// ids with their log-probabilities.
type topKSink struct {
	w    *BaseWriter
	path string
	k    int
}

func (s *topKSink) topK() int       { return s.k }
func (s *topKSink) fullVocab() bool { return false }
func (s *topKSink) abort()          { s.w.Abort() }

func (s *topKSink) append(row *scoredRow, jw *journalWindow) error {
	ids, lp := row.topIDs[:s.k], row.topLP[:s.k]
	if err := s.w.Append(row.nll, ids, lp); err != nil {
		return err
	}
	if jw != nil {
		jw.IDs, jw.LP = append(jw.IDs, ids...), append(jw.LP, lp...)
	}
	return nil
}

func (s *topKSink) replay(nll float64, ids []int32, lp []float32) error {
	return s.w.Append(nll, ids, lp)
}

func (s *topKSink) finish(rep *Report, windows, scored int) error {
	switch {
	case rep.StoppedEarly != nil && !rep.Partial:
		// Complete over the windows scored, and kept so: a comparison
		// against it must ask for no more windows than it holds.
		if err := s.w.ClosePartial(windows, scored); err != nil {
			return err
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"the KLD base holds the %d windows scored before the stop rule was met (marked partial: compare against it with --perplexity-chunks %s)", windows, chunksUpTo(windows)))
	case !rep.Partial:
		if err := s.w.Close(); err != nil {
			return err
		}
	case windows == 0:
		s.w.Abort()
		rep.PartialReason += "; the KLD base was not written (no complete window)"
		return nil
	default:
		if err := s.w.ClosePartial(windows, scored); err != nil {
			rep.PartialReason += "; " + err.Error()
			return nil
		}
		rep.PartialReason += fmt.Sprintf("; the KLD base holds the %d complete windows (marked partial)", windows)
	}
	rep.KLDBaseOut, rep.KLDBaseTopK = s.path, s.k
	return nil
}

// llamaSink records a base llama-perplexity --kl-divergence reads: every
// token's whole vocabulary as 16-bit codes. It is kept whole or not at all.
type llamaSink struct {
	w     *LlamaBaseWriter
	path  string
	vocab int
}

func (s *llamaSink) topK() int       { return 0 }
func (s *llamaSink) fullVocab() bool { return true }
func (s *llamaSink) abort()          { s.w.Abort() }

func (s *llamaSink) append(row *scoredRow, _ *journalWindow) error {
	return s.w.Append(row.vocab, row.res.Max, row.res.SumExp)
}

// replay refuses: a journal keeps no full-vocabulary rows, so a resumed
// run could not write the windows it replays.
func (s *llamaSink) replay(float64, []int32, []float32) error {
	return badRequest("a llama.cpp base (%s) is recorded whole, and the journal does not keep its rows: rerun without --resume", s.path)
}

func (s *llamaSink) finish(rep *Report, _, _ int) error {
	if rep.Partial {
		s.w.Abort()
		rep.PartialReason += "; the KLD base was not written"
		return nil
	}
	if err := s.w.Close(); err != nil {
		return err
	}
	rep.KLDBaseOut, rep.KLDBaseTopK, rep.KLDBaseFormat = s.path, s.vocab, BaseFormatLlama
	return nil
}
