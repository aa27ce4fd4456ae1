//go:build !purego

package kernels

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestDetectMatchesXSys: on this machine the features read through our own
// CPUID and XCR0 decoding agree with golang.org/x/sys/cpu's, which checks
// the OS state in its own way.
func TestDetectMatchesXSys(t *testing.T) {
	got := detectCPU()
	x := cpu.X86
	avx2 := x.HasAVX2 && x.HasFMA && x.HasF16C
	avx512 := avx2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512DQ
	for _, c := range []struct {
		name      string
		ours, sys bool
	}{
		{"avx2", got.Has(FeatAVX2), x.HasAVX2},
		{"fma", got.Has(FeatFMA), x.HasFMA},
		{"f16c", got.Has(FeatF16C), x.HasF16C},
		{"avx2 group", got.HasAVX2(), avx2},
		{"avx512", got.Has(FeatAVX512), avx512},
		{"avx512vnni", got.Has(FeatAVX512VNNI), avx512 && x.HasAVX512VNNI},
		{"avx512bf16", got.Has(FeatAVX512BF16), avx512 && x.HasAVX512BF16},
		{"avxvnni", got.Has(FeatAVXVNNI), avx2 && x.HasAVXVNNI},
	} {
		if c.ours != c.sys {
			t.Errorf("%s: ours %v, x/sys/cpu %v", c.name, c.ours, c.sys)
		}
	}
	t.Logf("detected: %v", got)
}
