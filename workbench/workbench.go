// Package workbench is the one way from a profile to a report: it turns a
// Job — a profile, the base to compare against, the base to record, where
// progress goes, where the run is kept — into a scored report and the
// record that describes it, kept in the results root (keep.go: the one
// record keeper). It owns the engine options a profile stands for, the
// scoring request, the record information, the run journal's whole life
// (named beside the outputs, opened and resumed by scoring, removed once a
// complete run's outputs are written) and the signal handling of headless
// runs.
//
// Every command that scores goes through it: `score`, `ab`, `floor`, the
// TUI's runner. The commands turn flags into a Job and write what comes
// back; scoring.Run is called here and nowhere else.
package workbench

import (
	"context"
	"errors"
	"time"

	"plexbench/engine"
	"plexbench/hip"
	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/scoring"
)

// Job is one run.
type Job struct {
	Profile profiles.Profile

	// Compare is the KLD base to compare against ("" for none): a
	// plexbench or llama.cpp base, told apart by the file. With
	// GeometryFromBase the run takes method, ctx, stride and chunk limit
	// from it, unless GeometryGiven names one the caller set (then it
	// must agree with the base).
	Compare          string
	GeometryFromBase bool
	GeometryGiven    map[string]bool // "method", "ctx", "stride", "chunks"
	// CoarsenTopK, against a llama.cpp base, also gives the top-k KLD a
	// plexbench base of this many ids would (kld.top_k_coarsened).
	CoarsenTopK int
	// CoarsenTopKs are more such k (kld.top_k_coarsened_by_k).
	CoarsenTopKs []int

	// BaseOut is where to record a KLD base ("" for none), in BaseFormat
	// (scoring.BaseFormatPlexbench when empty, or BaseFormatLlama).
	BaseOut    string
	BaseFormat string

	// Keep says where the run's record goes (the results root) and what
	// is kept beside it; its zero value keeps nothing (keep.go).
	Keep Keep

	// Shard scores only the windows of one shard i/n.
	Shard scoring.ShardSpec
	// TokenIDs puts the scored token ids in the report.
	TokenIDs bool

	// Journal keeps a run journal beside Report (else beside BaseOut) so
	// that a stopped or killed run continues with Resume. Report is where
	// the caller will write the report ("" or "-": stdout).
	Journal bool
	Resume  bool
	Report  string
	// JournalAt, when set, is the journal's path for a run that writes
	// neither its report nor a base to a file (a sweep's models).
	JournalAt string

	// Choice, when it names a task file, scores it instead of a text.
	Choice
	// taskFile is Choice's file as Run read it before the model loaded,
	// so that the run does not read and parse it again; nil: not read yet.
	taskFile *choiceFile

	// AllowTokenizerMismatch: a base (Compare) whose tokenizer or token
	// stream differs from this model's is not refused; the text is scored
	// without it and the two compare by bits per byte only.
	AllowTokenizerMismatch bool
	// Partner, for the first run of an A/B, is the other side: the pair is
	// refused before this run scores when their tokenizers or token
	// streams differ (CheckTokenizers), unless AllowTokenizerMismatch.
	Partner *profiles.Profile

	// Progress receives the run's events on the scoring goroutine.
	Progress func(scoring.Event)
	// KeepGoing, when set and true once the profile's stopping rule is
	// met, lets the run go on to its last window (scoring.Request).
	KeepGoing func() bool

	// hasher hashes the model for the record (nil: as runs do; tests
	// give their own).
	hasher *modelHasher
}

// Outcome is what a run gives back.
type Outcome struct {
	Report scoring.Report
	// Journal is the run journal's path ("" when the run kept none).
	Journal string
	// Record is where the run was kept: its record, or with
	// Keep.Unrecorded the report of a run that is no record ("" when
	// nothing was kept). KeepErr says why it could not be (also the run's
	// error when the run itself succeeded).
	Record  string
	KeepErr error
}

// Done ends a run once its outputs are written: a complete run's journal
// is removed; a partial run's stays for --resume.
func (o *Outcome) Done() error {
	if o.Journal == "" || o.Report.Partial {
		return nil
	}
	return scoring.RemoveJournal(o.Journal)
}

// Run loads what j's profile names, scores j on it and releases it.
func Run(ctx context.Context, j Job) (Outcome, error) {
	ls, err := j.begin(ctx)
	if err != nil {
		return Outcome{}, err
	}
	defer ls.release()
	if _, err := journalPath(j); err != nil {
		return Outcome{}, err // before the model loads
	}
	if _, err := StopRule(j.Profile); err != nil {
		return Outcome{}, err
	}
	kvLen, err := checkChoice(&j)
	if err != nil {
		return Outcome{}, err
	}
	if j.Partner != nil && !j.AllowTokenizerMismatch {
		if err := CheckTokenizers(j.Profile, *j.Partner); err != nil {
			return Outcome{}, err
		}
	}
	p := j.Profile
	if p.KVLen == 0 {
		p.KVLen = kvLen
	}
	b, err := Open(p)
	if err != nil {
		return Outcome{}, err
	}
	defer b.Close()
	return b.Score(ctx, j)
}

// Bench is a loaded model with a profile's engine settings: several jobs
// of that profile (the passes of `floor`, a sweep) score on it in turn.
type Bench struct {
	profile profiles.Profile
	model   string // the model file (the embedded demo's cache copy when the profile names none; "" for a server)
	eng     benchEngine
	rt      *hip.Runtime // the GPU runtime of a device backend; nil on the CPU
}

// Open loads the model p names (the embedded demo when none) with p's
// engine settings, once p's input files are known to be readable.
func Open(p profiles.Profile) (*Bench, error) {
	if err := checkInputs(p); err != nil {
		return nil, err
	}
	if p.Server != "" {
		eng, err := openServed(p)
		if err != nil {
			return nil, err
		}
		return &Bench{profile: p, eng: eng}, nil
	}
	path, err := modelPath(p)
	if err != nil {
		return nil, err
	}
	eng, rt, err := loadEngine(p, path)
	if err != nil {
		return nil, err
	}
	return &Bench{profile: p, model: path, eng: eng, rt: rt}, nil
}

// Info is the loaded model's description.
func (b *Bench) Info() engine.ModelInfo { return b.eng.Info() }

// Engine is the loaded model, for a command that drives it itself
// (`plexbench serve`); the bench still owns and closes it. It is nil
// when the profile names a server: there is no model here to drive.
func (b *Bench) Engine() *engine.Model {
	m, _ := b.eng.(*engine.Model)
	return m
}

// Close releases the model.
func (b *Bench) Close() error {
	err := b.eng.Close()
	if b.rt != nil {
		b.rt.Close()
	}
	return err
}

// Score runs j on the loaded model (j.Profile's engine settings must be
// the bench's; its text, windows and base may differ) and keeps it as
// j.Keep says. A complete run's report carries its record information; a
// run whose record cannot be described still returns its report, with a
// warning saying why.
func (b *Bench) Score(ctx context.Context, j Job) (Outcome, error) {
	return Kept(j, func(j Job) (Outcome, error) { return b.score(ctx, j) })
}

// score is Score without keeping.
func (b *Bench) score(ctx context.Context, j Job) (Outcome, error) {
	started := time.Now()
	run := b.run
	if len(j.choices()) > 0 {
		run = b.runChoice
	}
	out, err := watched(ctx, j, run)
	if err != nil || out.Report.Partial {
		return out, err
	}
	describe(j.hasher, j.Profile, b.model, &out.Report, started)
	return out, nil
}

// run scores j without describing a record.
func (b *Bench) run(ctx context.Context, j Job) (Outcome, error) {
	req, err := request(j)
	if err != nil {
		return Outcome{}, err
	}
	if j.Compare != "" {
		req.BaseDecode = baseDecoder(j.Compare, b.eng.Info().TokenizerSHA256)
	}
	var out Outcome
	if req.Journal, err = journalPath(j); err != nil {
		return out, err
	}
	out.Journal = req.Journal
	out.Report, err = scoring.Run(ctx, b.eng, req)
	servedWarnings(j.Profile, &out.Report)
	return out, err
}

// journalPath is where j's journal lives: beside the report when it goes
// to a file, else beside the base being recorded; "" when j keeps none
// (a coarsening or a shard never does: they are rerun), or writes
// neither to a file (a report on stdout or into a FIFO), and then Resume
// is refused.
func journalPath(j Job) (string, error) {
	var none string
	switch {
	case len(j.choices()) > 0:
		none = "--resume: a " + j.choices()[0].Flag + " run keeps no journal; rerun it"
	case j.CoarsenTopK > 0 || len(j.CoarsenTopKs) > 0:
		none = "--resume: a --kld-coarsen-top-k run keeps no journal; rerun it"
	case j.Shard.N > 1:
		// A shard is a slice of a run; merge combines finished shards.
		none = "--resume: a shard (--perplexity-shard) is not resumable; rerun it"
	case !j.Journal:
		none = "--resume: this run keeps no journal"
	}
	if none != "" {
		if j.Resume {
			return "", errors.New(none)
		}
		return "", nil
	}
	if j.JournalAt != "" {
		return j.JournalAt, nil
	}
	for _, out := range []string{j.Report, j.BaseOut} {
		if outfile.Atomic(out) {
			p, err := outfile.Resolve(out)
			if err != nil {
				return "", err
			}
			return p + ".journal", nil
		}
	}
	if j.Resume {
		return "", errors.New("--resume: the journal lives beside --perplexity-output FILE or --perplexity-kld-base-out FILE, and this run writes neither to a file")
	}
	return "", nil
}
