package workbench

// corpora.go owns runs of several corpora: each text of a profile's
// corpora scored as its own run of the job on one loaded model, the
// report a section per text (scoring/corpora.go).

import (
	"context"
	"fmt"
	"time"

	"plexbench/scoring"
)

// RunCorpora is Run for a profile that may list several corpora: with
// more than one, the model loads once and each text is scored as its own
// run of j (its windows, its report, its record), in order; the report
// holds them and their averages and is itself a record. With one or none
// it is Run.
func RunCorpora(ctx context.Context, j Job) (Outcome, error) {
	if len(j.Profile.Corpora) <= 1 {
		return Run(ctx, j)
	}
	if err := checkCorpora(j); err != nil {
		return Outcome{}, err // before the model loads
	}
	if err := loading(ctx); err != nil {
		return Outcome{}, err
	}
	b, err := Open(j.Profile)
	if err != nil {
		return Outcome{}, err
	}
	defer b.Close()
	return b.ScoreCorpora(ctx, j)
}

// checkCorpora refuses, in one line, what a run of several corpora cannot
// do rightly: bases, which hold one text's tokens; a journal to resume;
// shards, stopping rules and task files, which are about one run.
func checkCorpora(j Job) error {
	bad := ""
	switch {
	case j.BaseOut != "":
		bad = "--perplexity-kld-base-out: a KLD base holds one text's tokens"
	case j.Compare != "":
		bad = "--perplexity-kld: a KLD base holds one text's tokens"
	case j.CoarsenTopK > 0 || len(j.CoarsenTopKs) > 0:
		bad = "--kld-coarsen-top-k: it compares against one text's llama.cpp base"
	case j.Resume:
		bad = "--resume: a run of several corpora keeps no journal"
	case j.Shard.N > 1:
		bad = "--perplexity-shard: a shard is a slice of one text's windows"
	case j.Profile.StopAtPrecision > 0 || j.Profile.StopWhenDecided != "":
		bad = "--stop-at-precision, --stop-when-decided: a stopping rule watches one run"
	case len(j.choices()) > 0:
		bad = j.choices()[0].Flag + ": it scores a task file, not texts"
	case j.Partner != nil:
		bad = "an A/B pairs two runs of one text"
	}
	if bad != "" {
		return fmt.Errorf("%s; with %d corpora, score each text in its own run", bad, len(j.Profile.Corpora))
	}
	return nil
}

// ScoreCorpora scores each of j.Profile's corpora as its own job on the
// loaded model, as Score would alone (no journal: a stopped run of
// several corpora is rerun), and returns the report of them all, kept as
// j.Keep says (one record). Each event of a corpus's run carries which
// corpus it is. A stopped run returns the corpora scored so far and the
// stopped one's partial report.
func (b *Bench) ScoreCorpora(ctx context.Context, j Job) (Outcome, error) {
	if err := checkCorpora(j); err != nil {
		return Outcome{}, err
	}
	return Kept(j, func(j Job) (Outcome, error) { return b.scoreCorpora(ctx, j) })
}

// scoreCorpora is ScoreCorpora without keeping.
func (b *Bench) scoreCorpora(ctx context.Context, j Job) (Outcome, error) {
	started := time.Now()
	texts := j.Profile.Corpora
	sections := make([]scoring.Report, 0, len(texts))
	for i, text := range texts {
		cj := j
		cj.Profile.Text, cj.Profile.Corpora = text, nil
		cj.Journal, cj.JournalAt, cj.Report, cj.Keep = false, "", "", Keep{}
		if j.Progress != nil {
			step := &scoring.CorpusStep{Index: i + 1, Of: len(texts), Text: text}
			cj.Progress = func(e scoring.Event) {
				e.Corpus = step
				j.Progress(e)
			}
		}
		out, err := b.score(ctx, cj)
		if err != nil {
			if out.Report.Partial {
				sections = append(sections, out.Report)
			}
			rep := scoring.CorporaReport(sections)
			if !rep.Partial {
				rep.Partial, rep.PartialReason = true, err.Error()
			}
			return Outcome{Report: rep}, err
		}
		sections = append(sections, out.Report)
	}
	rep := scoring.CorporaReport(sections)
	describe(j.hasher, j.Profile, b.model, &rep, started)
	return Outcome{Report: rep}, nil
}
