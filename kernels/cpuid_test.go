package kernels

import "testing"

// TestX86Features decodes injected CPUID, XCR0 and AMX-grant values: a
// feature counts only when its flags are set, XCR0 enables its register
// state and, for AMX, the OS granted the tile state.
func TestX86Features(t *testing.T) {
	const (
		ecxAVX2 = cpuid1FMA | cpuid1OSXSAVE | cpuid1AVX | cpuid1F16C
		ebx512  = cpuid7AVX2 | cpuid7AVX512F | cpuid7AVX512DQ | cpuid7AVX512BW | cpuid7AVX512VL
		xcrAll  = 1 | xcr0AVX512 | xcr0AMX
	)
	// A Sapphire Rapids-class CPU: every flag the kernels look at.
	spr := x86Raw{maxLeaf: 0x20, ecx1: ecxAVX2, maxSub7: 1, ebx7: ebx512, ecx7: cpuid7AVX512VNNI,
		edx7: cpuid7AMXTile | cpuid7AMXInt8, eax71: cpuid71AVXVNNI | cpuid71AVX512BF16, xcr0: xcrAll, amxGranted: true}
	with := func(r x86Raw, edit func(*x86Raw)) x86Raw { edit(&r); return r }
	avx512All := needAVX512VNNI | FeatAVX512BF16 | FeatAVXVNNI
	for _, c := range []struct {
		name string
		raw  x86Raw
		want CPUFeatures
	}{
		{"everything", spr, avx512All | FeatAMX},
		{"AMX flags, tile state not in XCR0 (a VM that passes the flags through)",
			with(spr, func(r *x86Raw) { r.xcr0 &^= xcr0AMX; r.amxGranted = false }), avx512All},
		{"AMX in XCR0, arch_prctl refused", with(spr, func(r *x86Raw) { r.amxGranted = false }), avx512All},
		{"AMX granted, tile data only in XCR0", with(spr, func(r *x86Raw) { r.xcr0 &^= xcr0TileCfg }), avx512All},
		{"AMX-TILE without AMX-INT8", with(spr, func(r *x86Raw) { r.edx7 &^= cpuid7AMXInt8 }), avx512All},
		{"AVX-512 flags, the OS saves no opmask/ZMM state",
			with(spr, func(r *x86Raw) { r.xcr0 = 1 | xcr0AVX }), needAVX2 | FeatAVXVNNI},
		{"AVX-512 flags, upper 16 ZMM registers not saved",
			with(spr, func(r *x86Raw) { r.xcr0 &^= xcr0Hi16ZMM }), needAVX2 | FeatAVXVNNI | FeatAMX},
		{"OSXSAVE clear: XCR0 not readable, whatever it holds",
			with(spr, func(r *x86Raw) { r.ecx1 &^= cpuid1OSXSAVE }), 0},
		{"no YMM state", with(spr, func(r *x86Raw) { r.xcr0 = 1 | xcr0SSE }), 0},
		{"AVX flag clear (AMX needs no AVX state)", with(spr, func(r *x86Raw) { r.ecx1 &^= cpuid1AVX }), FeatAMX},
		{"leaf 7 beyond the maximum leaf", with(spr, func(r *x86Raw) { r.maxLeaf = 6 }), FeatFMA | FeatF16C},
		{"no subleaf 1 of leaf 7", with(spr, func(r *x86Raw) { r.maxSub7 = 0 }), needAVX512VNNI | FeatAMX},
		{"AVX-512 without BW (Knights Landing)", with(spr, func(r *x86Raw) { r.ebx7 &^= cpuid7AVX512BW }),
			needAVX2 | FeatAVXVNNI | FeatAMX},
		{"AVX-512 without FMA", with(spr, func(r *x86Raw) { r.ecx1 &^= cpuid1FMA }), FeatAVX2 | FeatF16C | FeatAMX},
		{"Zen 4", x86Raw{maxLeaf: 0x10, ecx1: ecxAVX2, maxSub7: 1, ebx7: ebx512, ecx7: cpuid7AVX512VNNI,
			eax71: cpuid71AVX512BF16, xcr0: 1 | xcr0AVX512}, needAVX512VNNI | FeatAVX512BF16},
		{"Haswell", x86Raw{maxLeaf: 0xd, ecx1: ecxAVX2, ebx7: cpuid7AVX2, xcr0: 1 | xcr0AVX}, needAVX2},
		{"nothing", x86Raw{}, 0},
	} {
		if got := x86Features(c.raw); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		// AMX is asked of the OS only when CPUID and XCR0 offer it.
		if got, want := c.raw.wantsAMX(), c.raw.edx7&(cpuid7AMXTile|cpuid7AMXInt8) == cpuid7AMXTile|cpuid7AMXInt8 &&
			c.raw.maxLeaf >= 7 && c.raw.ecx1&cpuid1OSXSAVE != 0 && c.raw.xcr0&xcr0AMX == xcr0AMX; got != want {
			t.Errorf("%s: wantsAMX %v, want %v", c.name, got, want)
		}
	}
}
