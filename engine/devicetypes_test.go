package engine

import (
	"slices"
	"strings"
	"testing"

	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// TestDeviceTypeTable: every weight type the CPU multiplies by (and looks
// embedding rows up in) has a device quantizer, product and lookup in the
// table, each an entry of the kernels/gpu manifest, and the quantizer is
// to the type's vec_dot type.
func TestDeviceTypeTable(t *testing.T) {
	entries := map[string]bool{}
	for _, k := range gpu.Manifest() {
		for _, e := range k.Entries {
			entries[e] = true
		}
	}
	for ty := kernels.Type(0); ty < 64; ty++ {
		dt, ok := deviceTypeOf(ty)
		if kernels.CanMatMul(ty) != ok {
			t.Errorf("%v: CPU product %v, device product %v", ty, kernels.CanMatMul(ty), ok)
		}
		if !ok {
			continue
		}
		for _, e := range append(productEntries(ty), dt.rows) {
			if !entries[e] {
				t.Errorf("%v: %s is not in the kernels/gpu manifest", ty, e)
			}
		}
		vt := kernels.VecDotType(ty)
		if float := ty.BlockSize() == 1; float != (dt.quant == "") || !float && (actBytes(ty, 256, true) != vt.RowBytes(256) || dt.quant != "quantize_"+strings.ToLower(vt.String())) {
			t.Errorf("%v: quantizer %q for vec_dot type %v", ty, dt.quant, vt)
		}
		// The vendor BLAS takes F16 and BF16 products, their activations
		// rounded to the weight's own type (its vec_dot type).
		if want := ty == kernels.F16 || ty == kernels.BF16; blasType(ty) != want ||
			want && (vt != ty || actBytes(ty, 256, true) != vt.RowBytes(256) || actBytes(ty, 256, false) != 0) {
			t.Errorf("%v: BLAS product %v (rounding %q, %d bytes a row)", ty, blasType(ty), dt.half, actBytes(ty, 256, true))
		}
	}
	if names := deviceTypeEntries(); len(names) != len(slices.Compact(slices.Sorted(slices.Values(names)))) {
		t.Errorf("deviceTypeEntries lists an entry twice: %v", names)
	}
}
