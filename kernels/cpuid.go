package kernels

// This file decodes what an x86 CPU and its OS offer into CPUFeatures. A
// CPUID flag is not enough: an instruction that touches register state the
// OS does not save (XCR0) traps, and so does AMX's tile state until Linux
// grants it to the process (arch_prctl ARCH_REQ_XCOMP_PERM); hypervisors
// are known to pass the flags through without either. x86Features is a
// pure function of the raw values, so the rules are tested with injected
// ones (cpuid_test.go); readX86 (cpuid_amd64.go) reads them on amd64.

// x86Raw is what detection reads: the CPUID leaves the features live in,
// XCR0, and whether the OS granted this process the AMX tile data state.
type x86Raw struct {
	maxLeaf          uint32 // CPUID.0:EAX
	ecx1             uint32 // CPUID.1:ECX
	maxSub7          uint32 // CPUID.(7,0):EAX, the highest subleaf of leaf 7
	ebx7, ecx7, edx7 uint32 // CPUID.(7,0)
	eax71            uint32 // CPUID.(7,1):EAX
	xcr0             uint64 // XGETBV(0); read only when CPUID.1:ECX.OSXSAVE is set
	amxGranted       bool   // arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) succeeded
}

// CPUID bits (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E).
const (
	cpuid1FMA     = 1 << 12 // CPUID.1:ECX
	cpuid1OSXSAVE = 1 << 27
	cpuid1AVX     = 1 << 28
	cpuid1F16C    = 1 << 29

	cpuid7AVX2     = 1 << 5 // CPUID.(7,0):EBX
	cpuid7AVX512F  = 1 << 16
	cpuid7AVX512DQ = 1 << 17
	cpuid7AVX512BW = 1 << 30
	cpuid7AVX512VL = 1 << 31

	cpuid7AVX512VNNI = 1 << 11 // CPUID.(7,0):ECX

	cpuid7AMXTile = 1 << 24 // CPUID.(7,0):EDX
	cpuid7AMXInt8 = 1 << 25

	cpuid71AVXVNNI    = 1 << 4 // CPUID.(7,1):EAX
	cpuid71AVX512BF16 = 1 << 5
)

// XCR0 state components: what the OS saves and restores on a context
// switch. AVX needs SSE and the upper YMM halves; AVX-512 also the opmask
// registers and the upper ZMM state; AMX the tile configuration and data.
const (
	xcr0SSE       = 1 << 1
	xcr0YMM       = 1 << 2
	xcr0Opmask    = 1 << 5
	xcr0ZMMHi256  = 1 << 6
	xcr0Hi16ZMM   = 1 << 7
	xcr0TileCfg   = 1 << 17
	xcr0TileData  = 1 << 18
	xcr0AVX       = xcr0SSE | xcr0YMM
	xcr0AVX512    = xcr0AVX | xcr0Opmask | xcr0ZMMHi256 | xcr0Hi16ZMM
	xcr0AMX       = xcr0TileCfg | xcr0TileData
	xfeatTileData = 18 // the XTILEDATA component's number, for arch_prctl
)

// x86Features decodes r. A group is present only when every flag it needs
// is set and XCR0 enables its state; every 512-bit group also needs the
// 256-bit one (its kernels call 256-bit helpers), and AMX needs the OS's
// grant as well as XCR0.
func x86Features(r x86Raw) CPUFeatures {
	var xcr0 uint64
	if r.ecx1&cpuid1OSXSAVE != 0 {
		xcr0 = r.xcr0
	}
	var ebx7, ecx7, edx7, eax71 uint32
	if r.maxLeaf >= 7 {
		ebx7, ecx7, edx7 = r.ebx7, r.ecx7, r.edx7
		if r.maxSub7 >= 1 {
			eax71 = r.eax71
		}
	}
	all := func(reg, bits uint32) bool { return reg&bits == bits }
	var f CPUFeatures
	if xcr0&xcr0AVX == xcr0AVX && r.ecx1&cpuid1AVX != 0 {
		if ebx7&cpuid7AVX2 != 0 {
			f |= FeatAVX2
		}
		if r.ecx1&cpuid1FMA != 0 {
			f |= FeatFMA
		}
		if r.ecx1&cpuid1F16C != 0 {
			f |= FeatF16C
		}
		if f.HasAVX2() && eax71&cpuid71AVXVNNI != 0 {
			f |= FeatAVXVNNI
		}
	}
	if f.HasAVX2() && xcr0&xcr0AVX512 == xcr0AVX512 &&
		all(ebx7, cpuid7AVX512F|cpuid7AVX512DQ|cpuid7AVX512BW|cpuid7AVX512VL) {
		f |= FeatAVX512
		if ecx7&cpuid7AVX512VNNI != 0 {
			f |= FeatAVX512VNNI
		}
		if eax71&cpuid71AVX512BF16 != 0 {
			f |= FeatAVX512BF16
		}
	}
	if all(edx7, cpuid7AMXTile|cpuid7AMXInt8) && xcr0&xcr0AMX == xcr0AMX && r.amxGranted {
		f |= FeatAMX
	}
	return f
}

// wantsAMX reports whether r's CPUID and XCR0 offer AMX, so that asking
// the OS for the tile state is worth a system call.
func (r x86Raw) wantsAMX() bool {
	r.amxGranted = true
	return x86Features(r)&FeatAMX != 0
}
