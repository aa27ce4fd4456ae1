package kernels

// This file owns run-time CPU feature detection for the kernel variants.
// The answer is read once from golang.org/x/sys/cpu, which already checks
// that the OS saves the wider register state (XCR0), then masked down to
// the level PLEXBENCH_CPU names (so one machine can run as a lesser one),
// and never changes.

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/cpu"
)

// CPUFeatures lists the instruction-set extensions the fast kernels use.
type CPUFeatures struct {
	AVX2       bool // AVX2 integer and float vectors (256-bit)
	FMA        bool // fused multiply-add
	F16C       bool // VCVTPH2PS / VCVTPS2PH
	AVX512     bool // AVX-512 F, BW, VL and DQ together (x/sys's HasAVX512 means F only)
	AVX512VNNI bool // VPDPBUSD / VPDPWSSD at 512 bits
	AVX512BF16 bool // VDPBF16PS (not used by any kernel yet; listed for reports)
	AVXVNNI    bool // VEX-encoded VNNI (not used: the Go assembler only encodes EVEX forms)
}

// CPUEnv is the environment variable that masks detected features down to
// a lesser level: "native" (or unset), "avx512", "avx2" or "generic".
const CPUEnv = "PLEXBENCH_CPU"

// cpuLevels are PLEXBENCH_CPU's values, best first.
var cpuLevels = []string{"avx512", "avx2", "generic"}

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
var cpuInfo = sync.OnceValue(func() cpuState { return newCPUState(detectCPU(), os.Getenv(CPUEnv)) })

func detectCPU() CPUFeatures {
	if runtime.GOARCH != "amd64" {
		return CPUFeatures{}
	}
	x := cpu.X86
	f := CPUFeatures{
		AVX2: x.HasAVX2,
		FMA:  x.HasFMA,
		F16C: x.HasF16C,
		AVX512: x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ &&
			x.HasAVX2 && x.HasFMA && x.HasF16C,
		AVXVNNI: x.HasAVXVNNI,
	}
	f.AVX512VNNI = f.AVX512 && x.HasAVX512VNNI
	f.AVX512BF16 = f.AVX512 && x.HasAVX512BF16
	return f
}

// newCPUState masks detected to the level env names. An unknown level, or
// one this CPU does not reach, is an error (reported by CPUError) and
// leaves the native features in use.
func newCPUState(detected CPUFeatures, env string) cpuState {
	s := cpuState{detected: detected, used: detected, level: "native"}
	env = strings.ToLower(strings.TrimSpace(env))
	if env == "" || env == "native" {
		return s
	}
	masked, ok := detected.mask(env)
	switch {
	case !ok:
		s.err = fmt.Errorf("%s=%q: not one of native, %s", CPUEnv, env, strings.Join(cpuLevels, ", "))
	case !detected.reaches(env):
		s.err = fmt.Errorf("%s=%s: this CPU does not have it (it has: %s)", CPUEnv, env, detected)
	default:
		s.used, s.level = masked, env
	}
	return s
}

// mask returns f limited to level; ok is false for an unknown level.
// avx512 keeps f as it is, avx2 drops every AVX-512 (and VEX VNNI)
// feature, generic drops all.
func (f CPUFeatures) mask(level string) (CPUFeatures, bool) {
	switch level {
	case "avx512":
		return f, true
	case "avx2":
		return CPUFeatures{AVX2: f.AVX2, FMA: f.FMA, F16C: f.F16C}, true
	case "generic":
		return CPUFeatures{}, true
	}
	return f, false
}

// reaches reports whether f has what level's kernels need.
func (f CPUFeatures) reaches(level string) bool {
	switch level {
	case "avx512":
		return f.AVX512
	case "avx2":
		return f.hasAVX2()
	}
	return true
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

// String lists the present features, e.g. "avx2 fma f16c avx512 avx512vnni".
func (f CPUFeatures) String() string {
	var s []string
	for _, p := range []struct {
		on   bool
		name string
	}{
		{f.AVX2, "avx2"}, {f.FMA, "fma"}, {f.F16C, "f16c"}, {f.AVX512, "avx512"},
		{f.AVX512VNNI, "avx512vnni"}, {f.AVX512BF16, "avx512bf16"}, {f.AVXVNNI, "avxvnni"},
	} {
		if p.on {
			s = append(s, p.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}

// hasAVX2 reports whether the 256-bit kernels (AVX2 + FMA + F16C) can run.
func (f CPUFeatures) hasAVX2() bool { return f.AVX2 && f.FMA && f.F16C }

// HasAVX2 is hasAVX2 for other packages' tests and benchmarks.
func (f CPUFeatures) HasAVX2() bool { return f.hasAVX2() }
