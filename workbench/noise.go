package workbench

// noise.go owns the engine's noise floor: the model scored under changes
// that must not change quality, each against the default run's base.
//
//  1. the default settings record a top-k base (as `score
//     --perplexity-kld-base-out` does, so the measurement lands in the
//     compare group of every run against such a base);
//  2. each change — threads 1 and N, other pass plans (ubatch sizes), the
//     assembly kernels' Go twins, the exact `go` variants, and the CPU
//     for a device backend — is scored against it on its own bench (the
//     engine fixes threads, passes and kernels when it loads), one model
//     in memory at a time;
//  3. the change with the largest mean KLD is kept as the record, with
//     every change in its noise object (scoring/noise.go).
//
// Stopping rules are off: every change scores every window of the base.

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"plexbench/engine"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/scoring"
)

// NoiseJob is one noise measurement.
type NoiseJob struct {
	Profile profiles.Profile
	// Base is where the default run's base is recorded; BaseTemporary
	// says it is removed after the measurement, so that the report names
	// it by its file name only.
	Base          string
	BaseTemporary bool
	// Pass, when set, is told of each pass as it starts and returns where
	// that pass's progress goes (nil: nowhere).
	Pass func(pass, passes int, what string) func(scoring.Event)
	// Keep is where the measurement's record goes (keep.go).
	Keep Keep
}

// Noise runs the passes of j and returns the report of the change with
// the largest mean KLD, carrying the noise object and its record
// information, kept as j.Keep says.
func Noise(ctx context.Context, j NoiseJob) (Outcome, error) {
	return Kept(Job{Profile: j.Profile, Keep: j.Keep}, func(Job) (Outcome, error) {
		rep, err := noise(ctx, j)
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Report: *rep}, nil
	})
}

// noise is Noise without keeping.
func noise(ctx context.Context, j NoiseJob) (*scoring.Report, error) {
	started := time.Now()
	p := j.Profile
	p.StopAtPrecision, p.StopWhenDecided = 0, ""
	ls, err := begin(ctx, "--perplexity-kld-base-out", j.Base)
	if err != nil {
		return nil, err
	}
	defer ls.release()
	b, err := Open(p)
	if err != nil {
		return nil, err
	}
	model := b.model
	changes, skipped := noiseChanges(p, b.eng.Config(), runtime.NumCPU())
	if len(changes) == 0 {
		b.Close()
		return nil, fmt.Errorf("noise: no change applies to these settings (%v)", skipped)
	}
	ps := &passes{ctx: ctx, name: "noise", of: 1 + len(changes), tell: j.Pass}
	_, err = ps.run(b, "record the default run's base", Job{BaseOut: j.Base, BaseFormat: scoring.BaseFormatPlexbench})
	b.Close()
	if err != nil {
		return nil, err
	}
	var worst *scoring.Report
	var done []scoring.NoiseChange
	for _, c := range changes {
		rep, err := ps.runOn(c.profile, c.Change, Job{Compare: j.Base})
		if err != nil {
			return nil, err
		}
		k := rep.KLD
		done = append(done, scoring.NoiseChange{Change: c.Change, Settings: c.Settings,
			MeanKLD: k.MeanKLD, MaxKLD: k.KLDMax, SameTop: k.SameTop})
		if worst == nil || k.MeanKLD > worst.KLD.MeanKLD {
			worst = &rep
		}
	}
	worst.Noise = scoring.NewNoiseReport(done, skipped)
	describe(nil, p, model, worst, started)
	if j.BaseTemporary {
		worst.KLD.Base = filepath.Base(worst.KLD.Base)
	}
	return worst, nil
}

// noiseChange is one change: the default profile with it applied.
type noiseChange struct {
	scoring.NoiseChange // its names; the figures come from the run
	profile             profiles.Profile
}

// noiseChanges are the changes of p, whose default run the engine
// describes as cfg, on a machine of cpus CPUs; skipped says which could
// not run on these settings, and why.
func noiseChanges(p profiles.Profile, cfg engine.Config, cpus int) (changes []noiseChange, skipped []string) {
	add := func(change, settings string, apply func(q *profiles.Profile)) {
		q := p
		q.Kernels = maps.Clone(p.Kernels)
		apply(&q)
		if err := q.Validate(); err != nil {
			skipped = append(skipped, change+": "+err.Error())
			return
		}
		changes = append(changes, noiseChange{scoring.NoiseChange{Change: change, Settings: settings}, q})
	}
	for _, n := range threadCounts(cfg.Threads, cpus) {
		add(fmt.Sprintf("threads %d", n), fmt.Sprintf("threads=%d", n), func(q *profiles.Profile) { q.Threads = n })
	}
	ctx := p.Ctx
	if ctx == 0 {
		ctx = scoring.DefaultCtx
	}
	for _, u := range passPlans(ctx, cfg.BatchSize, cfg.UBatchSize) {
		per := (ctx + min(u, cfg.BatchSize) - 1) / min(u, cfg.BatchSize)
		add(fmt.Sprintf("ubatch %d (%d passes a window)", u, per), fmt.Sprintf("ubatch_size=%d", u),
			func(q *profiles.Profile) { q.UBatchSize = u })
	}
	for _, k := range []struct {
		change, none string
		set          map[string]string
	}{
		{"kernels: the assembly's Go twins", "no assembly kernel runs on this CPU", goTwins(cfg.Kernels)},
		{"kernels: the exact go variants", "every op already runs its go variant", goVariants(cfg.Kernels)},
	} {
		if len(k.set) == 0 {
			skipped = append(skipped, k.change+": "+k.none)
			continue
		}
		add(k.change, "kernels="+kernels.FormatSpec(k.set), func(q *profiles.Profile) {
			if q.Kernels == nil {
				q.Kernels = map[string]string{}
			}
			maps.Copy(q.Kernels, k.set)
		})
	}
	if p.Backend != "" && p.Backend != "cpu" {
		add("backend cpu (the device against the CPU)", "backend=cpu", func(q *profiles.Profile) {
			q.Backend, q.Device, q.StrictDeviceKernels = "cpu", "", false
		})
	}
	return changes, skipped
}

// threadCounts are the thread counts a noise run tries beside the
// default's: 1, one per CPU and twice that (more workers than cores
// split the rows another way), the first two that differ from it.
func threadCounts(def, cpus int) []int {
	var out []int
	for _, n := range []int{1, cpus, 2 * cpus} {
		if n != def && !slices.Contains(out, n) && len(out) < 2 {
			out = append(out, n)
		}
	}
	return out
}

// passPlans are the ubatch sizes a noise run tries: half a window and
// about a third (an odd split), each a plan of passes other than the
// default's (a pass holds min(batch, ubatch, window) tokens).
func passPlans(ctx, batch, ubatch int) []int {
	plan := func(u int) int { return min(batch, u, ctx) }
	var out []int
	for _, u := range []int{(ctx + 1) / 2, ctx/3 + 1} {
		if plan(u) != plan(ubatch) && !slices.ContainsFunc(out, func(o int) bool { return plan(o) == plan(u) }) {
			out = append(out, u)
		}
	}
	return out
}

// goTwins maps each op of used (op → variant that ran) running assembly
// to its Go twin: the variant a CPU without SIMD features picks by
// default (the same tiles and order in plain Go).
func goTwins(used map[string]string) map[string]string {
	plain, twin := map[string]bool{}, map[string]string{}
	for _, v := range kernels.KernelVariantsFor(kernels.CPUFeatures(0)) {
		if v.Supported {
			plain[v.Op+"="+v.Name] = true
		}
		if v.Default {
			twin[v.Op] = v.Name
		}
	}
	out := map[string]string{}
	for op, v := range used {
		if !plain[op+"="+v] && twin[op] != "" {
			out[op] = twin[op]
		}
	}
	return out
}

// goVariants maps each op of used not running its go variant (ggml's
// arithmetic order in plain Go, the bit-exact reference) to it.
func goVariants(used map[string]string) map[string]string {
	has := map[string]bool{}
	for _, v := range kernels.KernelVariantsFor(kernels.CPUFeatures(0)) {
		has[v.Op+"="+v.Name] = true
	}
	out := map[string]string{}
	for op, v := range used {
		if v != "go" && has[op+"=go"] {
			out[op] = "go"
		}
	}
	return out
}
