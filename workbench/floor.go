package workbench

// floor.go owns the floor measurement: a model scored against its own
// bases, so the user knows what the KLD figures of a protocol can resolve.
//
//  1. the model records its compact top-k base, exactly as `score
//     --perplexity-kld-base-out` does (so the floor lands in the compare
//     group of every run against such a base);
//  2. it is compared with that base — the measured floor, 0 by
//     construction for a deterministic engine — while it records a
//     llama.cpp base (whole 16-bit rows);
//  3. it is compared with the llama.cpp base: the floor of a
//     full-vocabulary comparison and, on the same tokens, the top-k KLD
//     (kld.top_k_coarsened), also at k = 32, 64, 256 and 1024 (at most
//     the vocabulary: floor.coarsening);
//  4. with Against, a second model is compared with the llama.cpp base:
//     its full-vocabulary KLD and its top-k KLD on the same tokens, what
//     the top-k coarsening hides of a real difference.

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"plexbench/profiles"
	"plexbench/scoring"
)

// FloorJob is one floor measurement.
type FloorJob struct {
	Profile profiles.Profile
	// TopBase and FullBase are where the two bases are recorded;
	// TopBaseTemporary says TopBase is removed after the measurement, so
	// that the report names it by its file name only.
	TopBase, FullBase string
	TopBaseTemporary  bool
	// Against is a second model compared with the full base ("" none).
	Against string
	// Pass, when set, is told of each pass as it starts and returns where
	// that pass's progress goes (nil: nowhere).
	Pass func(pass, passes int, what string) func(scoring.Event)
	// Keep is where the self-compare's record goes (keep.go).
	Keep Keep

	// diskFree, when set, is the space free in a folder in place of what
	// the file system says (tests shrink the disk).
	diskFree func(dir string) int64
}

// Floor runs the passes of j and returns the self-compare against the
// top-k base carrying the floor object and its record information, kept
// as j.Keep says.
func Floor(ctx context.Context, j FloorJob) (Outcome, error) {
	return Kept(Job{Profile: j.Profile, Keep: j.Keep}, func(Job) (Outcome, error) {
		rep, err := floor(ctx, j)
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Report: *rep}, nil
	})
}

// floor is Floor without keeping.
func floor(ctx context.Context, j FloorJob) (*scoring.Report, error) {
	started := time.Now()
	ls, err := begin(ctx, "--perplexity-kld-base-out", j.TopBase, "--full-base-out", j.FullBase)
	if err != nil {
		return nil, err
	}
	defer ls.release()
	b, err := Open(j.Profile)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	f := floorRun{passes: passes{ctx: ctx, name: "floor", of: 3, tell: j.Pass}, j: j, b: b}
	if j.Against != "" {
		f.of = 4
	}
	rep, err := f.measure()
	if err != nil {
		return nil, err
	}
	describe(nil, j.Profile, b.model, rep, started)
	if j.TopBaseTemporary {
		rep.KLD.Base = filepath.Base(j.TopBase)
	}
	return rep, nil
}

// floorRun is a floor measurement in progress.
type floorRun struct {
	passes
	j FloorJob
	b *Bench
}

// measure runs the passes.
func (f *floorRun) measure() (*scoring.Report, error) {
	p := f.j.Profile
	k := p.KLDTopK
	if k == 0 {
		k = scoring.DefaultTopK
	}
	full, top := f.j.FullBase, f.j.TopBase
	ref, err := f.run(f.b, fmt.Sprintf("record the top-%d base", k), Job{BaseOut: top, BaseFormat: scoring.BaseFormatPlexbench})
	if err != nil {
		return nil, err
	}
	// The full base holds 16 bits per vocabulary entry per scored token:
	// gigabytes for a large vocabulary over a whole text.
	need := scoring.LlamaBaseSize(ref.Ctx, f.b.Info().VocabSize, ref.WindowsScored)
	spaceIn := diskFree
	if f.j.diskFree != nil {
		spaceIn = f.j.diskFree
	}
	if free := spaceIn(filepath.Dir(full)); free >= 0 && need > free {
		return nil, fmt.Errorf("floor: the full-vocabulary base needs %s in %s, which has %s free: score fewer windows (--perplexity-chunks) or put it elsewhere (--full-base-out)",
			HumanBytes(need), filepath.Dir(full), HumanBytes(free))
	}
	rep, err := f.run(f.b, fmt.Sprintf("compare with the top-%d base, record the full-vocabulary base (%s)", k, HumanBytes(need)),
		Job{Compare: top, BaseOut: full, BaseFormat: scoring.BaseFormatLlama})
	if err != nil {
		return nil, err
	}
	ks := scoring.FloorTopKs(f.b.Info().VocabSize)
	coarsen := Job{Compare: full, CoarsenTopK: k, CoarsenTopKs: ks}
	self, err := f.run(f.b, "compare with the full-vocabulary base", coarsen)
	if err != nil {
		return nil, err
	}
	fl := &scoring.FloorReport{TopK: k, SelfFull: *self.KLD.TopKCoarsened,
		SelfTopKMeanKLD: rep.KLD.MeanKLD, SelfTopKMaxKLD: rep.KLD.KLDMax, SelfTopKSameTop: rep.KLD.SameTop}
	fl.Floor = fl.SelfTopKMeanKLD
	for _, c := range self.KLD.TopKCoarsenedByK {
		fl.Coarsening = append(fl.Coarsening, scoring.FloorCoarsening{TopK: c.TopK, SelfFull: c})
	}
	if a := f.j.Against; a != "" {
		other := p
		other.Model = a
		ag, err := f.runOn(other, "compare "+filepath.Base(a)+" with the full-vocabulary base", coarsen)
		if err != nil {
			return nil, err
		}
		fl.AgainstModel, fl.Against = filepath.Base(a), ag.KLD.TopKCoarsened
		for i, c := range ag.KLD.TopKCoarsenedByK {
			fl.Coarsening[i].Against = &c
		}
	}
	rep.KLDBaseOut, rep.KLDBaseTopK, rep.KLDBaseFormat = "", 0, "" // the full base is the floor's own
	rep.Floor = fl
	return &rep, nil
}

// HumanBytes is n in binary units, as `inspect` and `floor` print sizes.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
