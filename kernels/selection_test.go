package kernels

// Tests of kernel selection for every CPU, on any CPU: resolve is a pure
// function of a feature set, so each set a machine can present (every
// combination of the feature bits, including ones no real CPU has) is
// resolved here and checked against the registry's own entries and
// priorities. An AVX2 machine thus checks what an AVX-512 or arm64 one
// would run, and the other way round.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// namedCPUs are the feature sets of real CPU classes, for the parse check
// and the log; the exhaustive check covers every other combination.
var namedCPUs = []struct {
	name string
	f    CPUFeatures
}{
	{"generic", 0},
	{"AVX2 (Haswell, Zen 1-3)", needAVX2},
	{"AVX2 + AVX-VNNI (Alder Lake)", needAVX2 | FeatAVXVNNI},
	{"AVX-512 F/BW/VL/DQ (Skylake-X)", needAVX512},
	{"AVX-512 + VNNI (Cascade Lake, Ice Lake)", needAVX512VNNI},
	{"AVX-512 + VNNI + BF16 (Zen 4)", needAVX512VNNI | FeatAVX512BF16},
	{"AVX-512 + VNNI + BF16 + AVX-VNNI + AMX (Sapphire Rapids)", needAVX512VNNI | FeatAVX512BF16 | FeatAVXVNNI | FeatAMX},
	{"arm64 without extensions", 0},
	{"arm64 + ASIMD", FeatASIMD},
	{"arm64 + ASIMD + dot product + FP16", FeatASIMD | FeatASIMDDP | FeatASIMDHP},
}

// checkSelection checks resolve's table for f: every op runs the
// registry's highest-priority variant that f supports (one, not a tie),
// its matmul implementation is the one bound, and every choice a bind
// made by CPU (choose) is the first of its options that f supports.
func checkSelection(t *testing.T, f CPUFeatures) {
	t.Helper()
	tab := resolve(nil, f)
	reg := registry()
	for _, op := range KernelOps() {
		var want *variant
		ties := 0
		for i := range reg {
			v := &reg[i]
			if v.op != op || !f.Has(v.needs) {
				continue
			}
			switch {
			case want == nil || v.prio > want.prio:
				want, ties = v, 0
			case v.prio == want.prio:
				ties++
			}
		}
		got := tab.choice[op]
		switch {
		case want == nil:
			t.Errorf("%v: op %s has no variant that runs here", f, op)
		case ties > 0:
			t.Errorf("%v: op %s: %d variants share the top priority %d", f, op, ties+1, want.prio)
		case got != want:
			t.Errorf("%v: default %s=%s, want %s (priority %d)", f, op, name(got), want.name, want.prio)
		}
		if got != nil && !f.Has(got.needs) {
			t.Errorf("%v: default %s=%s needs %v", f, op, got.name, got.needs&^f)
		}
		if got != nil && got.mm != nil {
			if typ := matMulTypeOf(op); tab.mm[typ] != got.mm {
				t.Errorf("%v: %s runs another implementation than its variant %s", f, op, got.name)
			}
			if k := got.mm.k; k != nil && k.vnni && !got.needs.Has(FeatAVX512VNNI) {
				t.Errorf("%s=%s: its kernel uses VNNI, the variant does not need it", op, got.name)
			}
		}
	}
	for _, h := range tab.helpers {
		first := slices.IndexFunc(h.options, f.Has)
		if !f.Has(h.needs) || first < 0 || h.options[first] != h.needs {
			t.Errorf("%v: %s chose %s (needs %v), not the first option that runs here", f, h.what, h.name, h.needs)
		}
		if h.options[len(h.options)-1] != 0 {
			t.Errorf("%s: the last option needs %v; some CPU gets none", h.what, h.options[len(h.options)-1])
		}
	}
}

func name(v *variant) string {
	if v == nil {
		return "(none)"
	}
	return v.name
}

func matMulTypeOf(op string) Type {
	for _, typ := range matMulTypes() {
		if MatMulOp(typ) == op {
			return typ
		}
	}
	return 0
}

// TestSelectionEveryCPU resolves every combination of the feature bits.
func TestSelectionEveryCPU(t *testing.T) {
	for f := range featEnd {
		checkSelection(t, f)
		if t.Failed() {
			return // one set's report is enough to go on
		}
	}
}

// TestSelectionNamedCPUs checks, on the real CPU classes, that an explicit
// choice of any variant is accepted exactly when the set supports it, and
// logs what each class runs.
func TestSelectionNamedCPUs(t *testing.T) {
	reg := registry()
	for _, c := range namedCPUs {
		for i := range reg {
			v := &reg[i]
			ks, err := parseKernels(v.op+"="+v.name, c.f)
			switch {
			case v.supported(c.f) && err != nil:
				t.Errorf("%s: %s=%s refused: %v", c.name, v.op, v.name, err)
			case v.supported(c.f) && ks.Variant(v.op) != v.name:
				t.Errorf("%s: %s=%s runs %s", c.name, v.op, v.name, ks.Variant(v.op))
			case !v.supported(c.f) && !errors.Is(err, ErrKernelSpec):
				t.Errorf("%s: %s=%s accepted without %v", c.name, v.op, v.name, v.needs&^c.f)
			}
		}
		t.Logf("%s: %s", c.name, selectionSummary(resolve(nil, c.f)))
	}
}

// selectionSummary groups a table's ops by the variant they run.
func selectionSummary(tab *kernelTable) string {
	byName := map[string][]string{}
	for op, v := range tab.choice {
		byName[v.name] = append(byName[v.name], op)
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		ops := byName[n]
		slices.Sort(ops)
		parts = append(parts, fmt.Sprintf("%s: %s", n, strings.Join(ops, " ")))
	}
	for _, h := range tab.helpers {
		parts = append(parts, fmt.Sprintf("%s: %s", h.what, h.name))
	}
	return strings.Join(parts, "; ")
}

// TestVariantLevels: a variant named after a PLEXBENCH_CPU level runs at
// that level (of a CPU with every feature) and not at the level below, so
// that a mislabelled requirement shows; everything else runs on any CPU
// or names what it needs.
func TestVariantLevels(t *testing.T) {
	all := featEnd - 1
	for _, v := range registry() {
		i := levelIndex(v.name)
		if i < 0 {
			continue
		}
		at, _ := all.mask(v.name)
		if !v.supported(at) {
			t.Errorf("%s=%s needs %v, more than the %s level keeps", v.op, v.name, v.needs&^at, v.name)
		}
		if i+1 < len(cpuLevels) {
			below, _ := all.mask(cpuLevels[i+1].name)
			if v.supported(below) {
				t.Errorf("%s=%s runs at the %s level: its needs (%v) are not %s's", v.op, v.name, cpuLevels[i+1].name, v.needs, v.name)
			}
		}
	}
	// The levels themselves: each keeps what it needs, and each below
	// keeps less.
	for i, l := range cpuLevels {
		if !(l.keep & all).Has(l.needs) {
			t.Errorf("level %s keeps %v but needs %v", l.name, l.keep&all, l.needs)
		}
		if i > 0 && !cpuLevels[i-1].keep.Has(l.keep) {
			t.Errorf("level %s keeps more than %s", l.name, cpuLevels[i-1].name)
		}
	}
}
