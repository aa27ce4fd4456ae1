//go:build !purego

package kernels

// This file reads the raw x86 values x86Features decodes: CPUID, XCR0
// (only when the OS has set OSXSAVE: XGETBV faults otherwise), and, only
// when CPUID and XCR0 offer AMX, the OS's grant of the tile state.

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

func cpuidex(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
func xgetbv0() (eax, edx uint32)

func detectCPU() CPUFeatures { return x86Features(readX86()) }

func readX86() x86Raw {
	var r x86Raw
	r.maxLeaf, _, _, _ = cpuidex(0, 0)
	if r.maxLeaf < 1 {
		return r
	}
	_, _, r.ecx1, _ = cpuidex(1, 0)
	if r.maxLeaf >= 7 {
		r.maxSub7, r.ebx7, r.ecx7, r.edx7 = cpuidex(7, 0)
		if r.maxSub7 >= 1 {
			r.eax71, _, _, _ = cpuidex(7, 1)
		}
	}
	if r.ecx1&cpuid1OSXSAVE != 0 {
		lo, hi := xgetbv0()
		r.xcr0 = uint64(hi)<<32 | uint64(lo)
		// macOS enables the AVX-512 state on first use, so XCR0 shows it
		// clear until then; x/sys/cpu asks the kernel instead.
		if runtime.GOOS == "darwin" && cpu.X86.HasAVX512F {
			r.xcr0 |= xcr0AVX512
		}
	}
	if r.wantsAMX() {
		r.amxGranted = requestAMX()
	}
	return r
}
