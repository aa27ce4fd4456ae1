package kernels

// This file owns the CPU feature sets the kernel registry selects from:
// the features as a bit set, PLEXBENCH_CPU's levels that mask them, and
// this process's answer, read once and never changed. What the hardware
// and the OS offer is decoded in cpuid.go (x86: CPUID and XCR0, AMX's
// permission); the registry (variants.go) sees only a CPUFeatures value,
// so any CPU's selection can be computed, and tested, on any machine.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// CPUFeatures is a set of instruction-set extensions, each present only
// when the CPU has it and the OS saves the register state it needs.
type CPUFeatures uint32

// The features. The x86 groups are the units the kernels need: FeatAVX512
// is F, BW, VL and DQ together. The arm64 ones are detected and reported;
// no kernel needs them yet (the Go kernels run there).
const (
	FeatAVX2       CPUFeatures = 1 << iota // AVX2 integer and float vectors (256-bit)
	FeatFMA                                // fused multiply-add
	FeatF16C                               // VCVTPH2PS / VCVTPS2PH
	FeatAVX512                             // AVX-512 F, BW, VL and DQ
	FeatAVX512VNNI                         // VPDPBUSD / VPDPWSSD at 512 bits
	FeatAVX512BF16                         // VDPBF16PS (no kernel uses it yet)
	FeatAVXVNNI                            // VEX-encoded VNNI (no kernel: the Go assembler encodes only EVEX forms)
	FeatAMX                                // AMX tiles with INT8, the tile state enabled by the OS and granted to this process (no kernel yet)
	FeatASIMD                              // arm64 Advanced SIMD
	FeatASIMDDP                            // arm64 SDOT/UDOT
	FeatASIMDHP                            // arm64 half-precision vector arithmetic

	featEnd // one past the last feature
)

// featX86 is every x86 feature: what a build without the amd64 assembly
// (purego, or another architecture) cannot use.
const featX86 = FeatAVX2 | FeatFMA | FeatF16C | FeatAVX512 | FeatAVX512VNNI | FeatAVX512BF16 | FeatAVXVNNI | FeatAMX

// What the kernel families need, for the registry's entries: the 256-bit
// kernels use AVX2, FMA and F16C; the 512-bit ones also call 256-bit
// helpers (repacks, converters), so they need those too.
const (
	needAVX2       = FeatAVX2 | FeatFMA | FeatF16C
	needAVX512     = needAVX2 | FeatAVX512
	needAVX512VNNI = needAVX512 | FeatAVX512VNNI
)

// featNames are the features' names in bit order, as String prints them.
var featNames = [...]string{"avx2", "fma", "f16c", "avx512", "avx512vnni", "avx512bf16", "avxvnni", "amx",
	"asimd", "asimddp", "asimdhp"}

// Has reports whether f has every feature of need.
func (f CPUFeatures) Has(need CPUFeatures) bool { return f&need == need }

// HasAVX2 reports whether the 256-bit kernels (AVX2 + FMA + F16C) can run.
func (f CPUFeatures) HasAVX2() bool { return f.Has(needAVX2) }

// String lists the present features, e.g. "avx2 fma f16c avx512 avx512vnni".
func (f CPUFeatures) String() string {
	var s []string
	for i, name := range featNames {
		if f.Has(1 << i) {
			s = append(s, name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// ParseCPUFeatures reads a feature list as String prints it ("avx2 fma
// f16c", commas allowed; "none" or "" for none).
func ParseCPUFeatures(s string) (CPUFeatures, error) {
	var f CPUFeatures
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ' ' || r == ',' }) {
		i := slices.Index(featNames[:], w)
		switch {
		case i >= 0:
			f |= 1 << i
		case w != "none":
			return 0, fmt.Errorf("unknown CPU feature %q (features: %s)", w, strings.Join(featNames[:], ", "))
		}
	}
	return f, nil
}

// CPUEnv is the environment variable that masks detected features down to
// a lesser level: "native" (or unset), "avx512", "avx2" or "generic".
const CPUEnv = "PLEXBENCH_CPU"

// cpuLevels are PLEXBENCH_CPU's values, best first, with what each keeps
// of a CPU's features and what a CPU must have to run as it.
var cpuLevels = []struct {
	name        string
	keep, needs CPUFeatures
}{
	{"avx512", ^CPUFeatures(0), needAVX512},
	{"avx2", needAVX2, needAVX2},
	{"generic", 0, 0},
}

// cpuState is this process's answer, computed once at start-up and only
// read afterwards: the detected features, the masked ones the registry
// uses, the level asked for, and why that ask was refused (if it was).
type cpuState struct {
	detected, used CPUFeatures
	level          string // "native" or one of cpuLevels
	err            error
}

// cpuInfo is read on first use, not at package initialisation, so that the
// test cache sees the PLEXBENCH_CPU lookup and keys results by it.
var cpuInfo = sync.OnceValue(func() cpuState { return newCPUState(detectCPU(), os.Getenv(CPUEnv), haveAsm) })

// newCPUState masks detected to the level env names, and drops the x86
// features when the build has no amd64 assembly (asm false). An unknown
// level, or one this CPU does not reach, is an error (reported by
// CPUError) and leaves the native features in use.
func newCPUState(detected CPUFeatures, env string, asm bool) cpuState {
	s := cpuState{detected: detected, used: detected, level: "native"}
	env = strings.ToLower(strings.TrimSpace(env))
	if env != "" && env != "native" {
		i := levelIndex(env)
		switch {
		case i < 0:
			names := make([]string, len(cpuLevels))
			for j, l := range cpuLevels {
				names[j] = l.name
			}
			s.err = fmt.Errorf("%s=%q: not one of native, %s", CPUEnv, env, strings.Join(names, ", "))
		case !detected.Has(cpuLevels[i].needs):
			s.err = fmt.Errorf("%s=%s: this CPU does not have it (it has: %s)", CPUEnv, env, detected)
		default:
			s.used, s.level = detected&cpuLevels[i].keep, env
		}
	}
	if !asm {
		s.used &^= featX86
	}
	return s
}

func levelIndex(name string) int {
	for i, l := range cpuLevels {
		if l.name == name {
			return i
		}
	}
	return -1
}

// mask returns f limited to level; ok is false for an unknown level.
func (f CPUFeatures) mask(level string) (CPUFeatures, bool) {
	i := levelIndex(level)
	if i < 0 {
		return f, false
	}
	return f & cpuLevels[i].keep, true
}

// CPU returns the features the kernels may use: the machine's, masked by
// PLEXBENCH_CPU.
func CPU() CPUFeatures { return cpuInfo().used }

// CPUDetected returns the machine's features before any mask.
func CPUDetected() CPUFeatures { return cpuInfo().detected }

// CPULevel is the PLEXBENCH_CPU level in force: "native" or a masked level.
func CPULevel() string { return cpuInfo().level }

// CPUError reports a PLEXBENCH_CPU value that was not applied (unknown, or
// above this CPU); nil when the mask is in force or none was asked for.
func CPUError() error { return cpuInfo().err }

// FeatureNames lists every feature's name, comma-separated.
func FeatureNames() string { return strings.Join(featNames[:], ", ") }
