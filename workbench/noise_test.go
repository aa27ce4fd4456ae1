package workbench

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"plexbench/engine"
	"plexbench/kernels"
	"plexbench/profiles"
)

// TestNoiseChanges: the threads tried differ from the default's; each
// ubatch gives another plan of passes; the twins change every op running
// assembly (what a featureless CPU cannot run) to a variant a featureless
// CPU runs, and nothing else; the go change moves every op to go; a
// change the profile refuses is skipped with its reason; a device
// backend adds the CPU.
func TestNoiseChanges(t *testing.T) {
	t.Parallel()
	plain := map[string]bool{}
	for _, v := range kernels.KernelVariantsFor(kernels.CPUFeatures(0)) {
		if v.Supported {
			plain[v.Op+"="+v.Name] = true
		}
	}
	used := map[string]string{}
	for _, v := range kernels.KernelVariants() {
		if v.Default {
			used[v.Op] = v.Name
		}
	}
	used["rmsnorm"] = "generic" // already plain Go, not go
	p := profiles.Default()
	p.Ctx = 64
	cfg := engine.Config{Threads: 4, BatchSize: 2048, UBatchSize: 512, Kernels: used}
	changes, skipped := noiseChanges(p, cfg, 4)
	var plans []int
	for _, c := range changes {
		q, set := c.profile, c.Settings
		switch {
		case strings.HasPrefix(set, "threads="):
			if q.Threads == cfg.Threads || q.Threads < 1 {
				t.Errorf("%s: the default's thread count", c.Change)
			}
		case strings.HasPrefix(set, "ubatch_size="):
			plan := min(q.UBatchSize, q.BatchSize, p.Ctx)
			if plan == min(cfg.UBatchSize, cfg.BatchSize, p.Ctx) || slices.Contains(plans, plan) {
				t.Errorf("%s: pass plan %d is not another one (%v)", c.Change, plan, plans)
			}
			plans = append(plans, plan)
		case strings.Contains(c.Change, "twins"):
			for op, v := range used {
				got := q.Kernels[op]
				if plain[op+"="+v] != (got == "") || got != "" && !plain[op+"="+got] {
					t.Errorf("twins: %s=%s became %q", op, v, got)
				}
			}
		case strings.Contains(c.Change, "go variants"):
			for op, v := range used {
				if want := map[bool]string{true: "", false: "go"}[v == "go"]; q.Kernels[op] != want {
					t.Errorf("go: %s=%s became %q", op, v, q.Kernels[op])
				}
			}
		default:
			t.Errorf("unexpected change %q", c.Change)
		}
	}
	asm := slices.ContainsFunc(slices.Collect(maps.Keys(used)), func(op string) bool { return !plain[op+"="+used[op]] })
	if want := map[bool]int{true: 6, false: 5}[asm]; len(changes) != want || len(skipped) != 6-want || len(plans) != 2 {
		t.Errorf("changes %+v, skipped %v", changes, skipped)
	}

	flash := p
	flash.PrefillAttention, flash.FlashPrefill.BlockSize = profiles.FlashPrefillV2, 32
	_, skipped = noiseChanges(flash, cfg, 4)
	plansSkipped := slices.ContainsFunc(skipped, func(s string) bool { return strings.Contains(s, "ubatch 22") && strings.Contains(s, "block_size") })
	if want := map[bool]int{true: 1, false: 2}[asm]; len(skipped) != want || !plansSkipped {
		t.Errorf("FlashPrefill blocks of 32: skipped %v, want the 22-token passes", skipped)
	}
	p.Backend = "cuda"
	changes, _ = noiseChanges(p, cfg, 4)
	if !slices.ContainsFunc(changes, func(c noiseChange) bool { return c.Settings == "backend=cpu" && c.profile.Backend == "cpu" }) {
		t.Errorf("a cuda profile's changes %v lack the CPU", changes)
	}
}

// TestThreadCounts: 1 and N and 2N, the first two unlike the default
// (one on a single CPU, where 1 is N).
func TestThreadCounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ def, cpus int }{{2, 2}, {1, 2}, {8, 8}, {1, 1}, {3, 8}} {
		got := threadCounts(c.def, c.cpus)
		if len(got) != min(2, c.cpus) || slices.Contains(got, c.def) || len(got) == 2 && got[0] == got[1] {
			t.Errorf("threadCounts(%d, %d) = %v", c.def, c.cpus, got)
		}
	}
}
