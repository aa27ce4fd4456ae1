package kernels

import (
	"strings"
	"testing"
)

// TestCPUMask checks PLEXBENCH_CPU's levels against a fixed set of
// detected features (an AVX-512 VNNI machine and an AVX2-only one), and
// that the registry built from a masked set picks no variant it masked.
func TestCPUMask(t *testing.T) {
	zen4 := CPUFeatures{AVX2: true, FMA: true, F16C: true, AVX512: true, AVX512VNNI: true, AVX512BF16: true, AVXVNNI: true}
	zen1 := CPUFeatures{AVX2: true, FMA: true, F16C: true}
	for _, c := range []struct {
		have      CPUFeatures
		env       string
		want      CPUFeatures
		level     string
		errSubstr string
	}{
		{zen4, "", zen4, "native", ""},
		{zen4, "native", zen4, "native", ""},
		{zen4, "AVX512", zen4, "avx512", ""},
		{zen4, "avx2", zen1, "avx2", ""},
		{zen4, "generic", CPUFeatures{}, "generic", ""},
		{zen1, "avx512", zen1, "native", "does not have it"},
		{zen1, "avx2", zen1, "avx2", ""},
		{zen1, "sse9", zen1, "native", "not one of"},
		{CPUFeatures{}, "avx2", CPUFeatures{}, "native", "does not have it"},
	} {
		s := newCPUState(c.have, c.env)
		if s.used != c.want || s.level != c.level || s.detected != c.have {
			t.Errorf("%v with %q: used %v level %s, want %v %s", c.have, c.env, s.used, s.level, c.want, c.level)
		}
		if got := s.err != nil; got != (c.errSubstr != "") || (got && !strings.Contains(s.err.Error(), c.errSubstr)) {
			t.Errorf("%v with %q: error %v, want one containing %q", c.have, c.env, s.err, c.errSubstr)
		}
	}
	// Resolving against the masked features picks nothing that needs more.
	for _, f := range []CPUFeatures{zen1, {}} {
		tab := resolve(nil, f)
		for op, v := range tab.choice {
			if !v.supported(f) {
				t.Errorf("features %v: default %s=%s is not supported", f, op, v.name)
			}
		}
	}
}
