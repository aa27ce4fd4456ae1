package workbench

// sweep.go owns a sweep: a base model records its base once, then every
// other model is scored against it, one model in memory at a time, each
// kept as a record the moment it finishes. A stopped or killed sweep
// continues with Resume: a model whose record is there (this base, this
// model file's hash, these settings) and whose journal is not is
// skipped, the interrupted one resumes from its journal, the rest run. A
// base that records in the root point to is never written over: a sweep
// that would is refused. The base run takes no stopping rule (every
// model's rule needs every window of the base); the models take the
// profile's.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
)

// SweepJob is one sweep.
type SweepJob struct {
	// Job is what every run shares: the profile's settings (each run's
	// model is its own), whether comparisons take the base's geometry,
	// token ids in the reports.
	Job       Job
	BaseModel string
	Models    []string
	// Base is where the base model's base is kept; the journals of the
	// sweep's runs live beside it.
	Base string
	// Root is the results root the records are written to.
	Root   string
	Resume bool
	// Progress receives the sweep's events on the scoring goroutine.
	Progress func(SweepEvent)
}

// SweepEventKind says what a SweepEvent reports.
type SweepEventKind int

const (
	SweepModelStarted SweepEventKind = iota // a model's run starts
	SweepModelRun                           // Run: an event of the model's run
	SweepModelDone                          // Report, Record: the model's record is written
	SweepModelSkipped                       // Report, Record: resuming, the model's record was there
)

// SweepEvent is one step of a sweep. Index 0 is the base model, 1… the
// models in order; Models counts them all.
type SweepEvent struct {
	Kind          SweepEventKind
	Index, Models int
	Model         string
	Run           *scoring.Event
	Report        *scoring.Report
	Record        string
}

// SweepOutcome is a finished sweep's records, the base model's first.
type SweepOutcome struct {
	Reports []scoring.Report
	Records []string // their paths
}

// Sweep runs j.
func Sweep(ctx context.Context, j SweepJob) (SweepOutcome, error) {
	if err := checkSweep(j); err != nil {
		return SweepOutcome{}, err
	}
	s := &sweepRun{ctx: ctx, j: j}
	jobs := []Job{s.baseJob()}
	for _, m := range j.Models {
		jobs = append(jobs, s.modelJob(m))
	}
	ls, err := begin(ctx, sweepWrites(j.Base, jobs)...)
	if err != nil {
		return s.out, err
	}
	defer ls.release()
	if !j.Resume {
		if err := noJournals(jobs); err != nil {
			return s.out, err
		}
	}
	for i, job := range jobs {
		if err := s.step(i, job); err != nil {
			return s.out, err
		}
	}
	return s.out, nil
}

// noJournals refuses to start a sweep over an unfinished one's journals.
func noJournals(jobs []Job) error {
	for _, job := range jobs {
		p, err := journalPath(job)
		if err != nil {
			return err
		}
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sweep: %s: an unfinished sweep's journal is there: continue it with --resume, or remove it", p)
		}
	}
	return nil
}

// checkSweep refuses a sweep that cannot run, before any model loads.
func checkSweep(j SweepJob) error {
	if _, err := StopRule(j.Job.Profile); err != nil {
		return err
	}
	names := map[string]string{}
	for _, m := range append([]string{j.BaseModel}, j.Models...) {
		if _, err := os.Stat(m); err != nil && !IsServerURL(m) {
			return fmt.Errorf("sweep: model: %w", err)
		}
		n := filepath.Base(m)
		if prev, ok := names[n]; ok {
			return fmt.Errorf("sweep: %s and %s share a file name, which names their records and journals: rename one", prev, m)
		}
		names[n] = m
	}
	return nil
}

// sweepRun is a sweep in progress.
type sweepRun struct {
	ctx  context.Context
	j    SweepJob
	out  SweepOutcome
	recs []results.Entry // the root's records, read once the base is there (resuming)
}

// baseJob records the base with the base model.
func (s *sweepRun) baseJob() Job {
	return Job{Profile: baseProfile(s.j.Job.Profile, s.j.BaseModel), BaseOut: s.j.Base, BaseFormat: scoring.BaseFormatPlexbench,
		TokenIDs: s.j.Job.TokenIDs, Journal: true, Resume: s.j.Resume, hasher: s.j.Job.hasher, Keep: Keep{Root: s.j.Root}}
}

// baseProfile is the settings p's sweep records its base with on model:
// no stopping rule.
func baseProfile(p profiles.Profile, model string) profiles.Profile {
	p.StopAtPrecision, p.StopWhenDecided, p.Sweep = 0, "", nil
	return withModel(p, model)
}

// SweepBaseSettings is the digest of the settings a sweep of p records
// its base with on model (profiles.Profile.Digest), which names the
// sweep's default base (results.SweepBase): a sweep of other settings
// records another file.
func SweepBaseSettings(p profiles.Profile, model string) string {
	return baseProfile(p, model).Digest()
}

// modelJob compares model with the base.
func (s *sweepRun) modelJob(model string) Job {
	t := s.j.Job
	p := t.Profile
	p = withModel(p, model) // each run's profile, as its record keeps it
	p.Sweep = nil
	return Job{Profile: p, Compare: s.j.Base, GeometryFromBase: t.GeometryFromBase, GeometryGiven: t.GeometryGiven,
		TokenIDs: t.TokenIDs, Journal: true, Resume: s.j.Resume, hasher: t.hasher, Keep: Keep{Root: s.j.Root},
		JournalAt: s.j.Base + "." + results.SafeName(strings.TrimSuffix(filepath.Base(model), filepath.Ext(model))) + ".journal"}
}

func (s *sweepRun) emit(e SweepEvent) {
	if s.j.Progress != nil {
		e.Models = 1 + len(s.j.Models)
		s.j.Progress(e)
	}
}

// step runs job (model i's), unless resuming finds it done, and keeps its
// record.
func (s *sweepRun) step(i int, job Job) error {
	model := sweptModel(job.Profile)
	name := filepath.Base(model)
	if rep, path, err := s.finished(job); err != nil || path != "" {
		if err == nil {
			s.keep(rep, path)
			s.emit(SweepEvent{Kind: SweepModelSkipped, Index: i, Model: model, Report: rep, Record: path})
		}
		return err
	}
	if i == 0 {
		if err := s.baseFree(job); err != nil {
			return err
		}
	}
	s.emit(SweepEvent{Kind: SweepModelStarted, Index: i, Model: model})
	job.Progress = func(e scoring.Event) { s.emit(SweepEvent{Kind: SweepModelRun, Index: i, Model: model, Run: &e}) }
	if err := loading(s.ctx); err != nil {
		return err
	}
	b, err := Open(job.Profile)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	defer b.Close()
	out, err := b.Score(s.ctx, job)
	if err != nil {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	rep := &out.Report
	if rep.Record == nil {
		return fmt.Errorf("sweep %s: %s", name, strings.Join(rep.Warnings, "; "))
	}
	if err := out.Done(); err != nil {
		return fmt.Errorf("sweep %s: %w", name, err)
	}
	s.recs = nil // the base may be new: read the root again
	s.keep(rep, out.Record)
	s.emit(SweepEvent{Kind: SweepModelDone, Index: i, Model: model, Report: rep, Record: out.Record})
	return nil
}

// baseFree refuses to record the base (job) over a base file that records
// in the root point to (their protocol names its identity): they would be
// left naming a base that is gone. A base whose recording was interrupted
// (its journal is there) is the run's to continue.
func (s *sweepRun) baseFree(job Job) error {
	if _, err := os.Stat(s.j.Base); err != nil {
		return nil
	}
	if jp, err := journalPath(job); err != nil || jp == "" {
		return err
	} else if _, err := os.Stat(jp); err == nil {
		return nil
	}
	base, err := scoring.IdentifyBase(s.j.Base)
	if err != nil {
		return nil // not a base: nothing can point to it
	}
	recs, err := rootRecords(s.j.Root)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range recs {
		if e.Run.Record.Protocol.Base == base.Identity {
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case s.j.Resume:
		return fmt.Errorf("sweep --resume: %s is the base of %d records in %s made with other settings than these (or by an older plexbench): give this sweep another --perplexity-kld-base-out, or remove the file", s.j.Base, n, s.j.Root)
	}
	return fmt.Errorf("sweep: %s is already the base of %d records in %s: --resume continues the sweep that recorded it; to start another, give --perplexity-kld-base-out another file, or remove it", s.j.Base, n, s.j.Root)
}

func (s *sweepRun) keep(rep *scoring.Report, path string) {
	s.out.Reports = append(s.out.Reports, *rep)
	s.out.Records = append(s.out.Records, path)
}

// finished is, when resuming, the record of a run of job that is done:
// its journal is gone, the base is there, and a record in the root was
// made with this model file and these settings (job's profile: its
// geometry, chunk limit, engine settings, stopping rule) against (or, for
// the base model, recording) that base. path is "" when there is none.
func (s *sweepRun) finished(job Job) (rep *scoring.Report, path string, err error) {
	if !s.j.Resume {
		return nil, "", nil
	}
	jp, err := journalPath(job)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(jp); !errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil // interrupted (or unreadable): the run decides
	}
	if _, err := os.Stat(s.j.Base); errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	base, err := scoring.IdentifyBase(s.j.Base)
	if err != nil {
		return nil, "", err
	}
	if job.Profile.Server != "" {
		return nil, "", nil // a server's model has no file to know its record by: its journal decides
	}
	sum, err := job.hasher.hash(job.Profile.Model)
	if err != nil {
		return nil, "", err
	}
	settings := job.Profile.Digest()
	if s.recs == nil {
		if s.recs, err = rootRecords(s.j.Root); err != nil {
			return nil, "", err
		}
	}
	for i := range s.recs {
		r := &s.recs[i].Run
		ri := r.Record
		if ri.Protocol.Base == base.Identity && ri.Model.SHA256Prefix == sum[:16] && (r.KLD != nil) == (job.Compare != "") &&
			ri.ProfileDigest == settings {
			return r, s.recs[i].Report, nil
		}
	}
	return nil, "", nil
}

// rootRecords are the complete records under root (none when it is empty
// or missing), measurements (floor, noise) left out.
func rootRecords(root string) ([]results.Entry, error) {
	ents, err := results.History(root)
	if err != nil {
		return nil, err
	}
	recs := []results.Entry{}
	for _, e := range ents {
		if r := &e.Run; e.Err == nil && r.Record != nil && !r.Partial && r.Noise == nil && r.Floor == nil {
			recs = append(recs, e)
		}
	}
	return recs, nil
}
