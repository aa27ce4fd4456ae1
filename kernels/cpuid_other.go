//go:build purego || !amd64

package kernels

// This file reports the features of a build without the amd64 assembly:
// the arm64 extensions (no kernel needs them yet), and on amd64 purego
// builds the x86 ones as golang.org/x/sys/cpu sees them, for the report
// only (newCPUState drops them from what the kernels may use).

import "golang.org/x/sys/cpu"

func detectCPU() CPUFeatures {
	var f CPUFeatures
	set := func(on bool, bit CPUFeatures) {
		if on {
			f |= bit
		}
	}
	a := cpu.ARM64
	set(a.HasASIMD, FeatASIMD)
	set(a.HasASIMDDP, FeatASIMDDP)
	set(a.HasASIMDHP, FeatASIMDHP)
	x := cpu.X86
	if x.HasAVX2 && x.HasFMA && x.HasF16C {
		f |= needAVX2
		if x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ {
			f |= FeatAVX512
			set(x.HasAVX512VNNI, FeatAVX512VNNI)
			set(x.HasAVX512BF16, FeatAVX512BF16)
		}
		set(x.HasAVXVNNI, FeatAVXVNNI)
	}
	return f
}
