package kernels

import (
	"math/bits"
	"strings"
	"testing"
)

// TestCPUMask checks PLEXBENCH_CPU's levels against a fixed set of
// detected features (an AVX-512 VNNI machine and an AVX2-only one), and
// that a build without the amd64 assembly keeps no x86 feature.
func TestCPUMask(t *testing.T) {
	zen4 := needAVX512VNNI | FeatAVX512BF16 | FeatAVXVNNI
	spr := zen4 | FeatAMX
	zen1 := CPUFeatures(needAVX2)
	arm := FeatASIMD | FeatASIMDDP
	for _, c := range []struct {
		have      CPUFeatures
		env       string
		asm       bool
		want      CPUFeatures
		level     string
		errSubstr string
	}{
		{zen4, "", true, zen4, "native", ""},
		{zen4, "native", true, zen4, "native", ""},
		{zen4, "AVX512", true, zen4, "avx512", ""},
		{spr, "avx512", true, spr, "avx512", ""},
		{zen4, "avx2", true, zen1, "avx2", ""},
		{spr, "avx2", true, zen1, "avx2", ""},
		{zen4, "generic", true, 0, "generic", ""},
		{zen1, "avx512", true, zen1, "native", "does not have it"},
		{zen1, "avx2", true, zen1, "avx2", ""},
		{zen1, "sse9", true, zen1, "native", "not one of"},
		{0, "avx2", true, 0, "native", "does not have it"},
		{zen4, "", false, 0, "native", ""},          // purego on amd64
		{arm, "", false, arm, "native", ""},         // arm64
		{arm, "generic", false, 0, "generic", ""},   // arm64 masked
		{arm, "avx2", false, arm, "native", "does"}, // not an x86 level there
	} {
		s := newCPUState(c.have, c.env, c.asm)
		if s.used != c.want || s.level != c.level || s.detected != c.have {
			t.Errorf("%v with %q (asm %v): used %v level %s, want %v %s", c.have, c.env, c.asm, s.used, s.level, c.want, c.level)
		}
		if got := s.err != nil; got != (c.errSubstr != "") || (got && !strings.Contains(s.err.Error(), c.errSubstr)) {
			t.Errorf("%v with %q: error %v, want one containing %q", c.have, c.env, s.err, c.errSubstr)
		}
	}
}

// TestCPUInUse: the process's features are the detected ones masked by the
// level, never one more, and none of x86 in a build without assembly.
func TestCPUInUse(t *testing.T) {
	if !CPUDetected().Has(CPU()) {
		t.Errorf("in use %v is not within detected %v", CPU(), CPUDetected())
	}
	if !haveAsm && CPU()&featX86 != 0 {
		t.Errorf("a build without assembly uses x86 features: %v", CPU())
	}
	if CPUError() != nil {
		t.Logf("%s not applied: %v", CPUEnv, CPUError())
	}
	t.Logf("detected %v; in use %v (level %s)", CPUDetected(), CPU(), CPULevel())
}

func TestCPUFeaturesString(t *testing.T) {
	if n := bits.TrailingZeros32(uint32(featEnd)); len(featNames) != n {
		t.Fatalf("%d names for %d features", len(featNames), n)
	}
	if got := (needAVX2 | FeatAVX512VNNI | FeatASIMD).String(); got != "avx2 fma f16c avx512vnni asimd" {
		t.Errorf("String: %q", got)
	}
	if got := CPUFeatures(0).String(); got != "none" {
		t.Errorf("String of none: %q", got)
	}
}
