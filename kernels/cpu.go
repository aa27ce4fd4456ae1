package kernels

// This file owns run-time CPU feature detection for the kernel variants.
// The answer is read once from golang.org/x/sys/cpu, which already checks
// that the OS saves the wider register state (XCR0), and never changes.

import (
	"runtime"
	"strings"

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

// cpuFeatures is this machine's answer, computed once at start-up and only
// read afterwards.
var cpuFeatures = detectCPU()

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

// CPU returns the features of the machine the program runs on.
func CPU() CPUFeatures { return cpuFeatures }

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
