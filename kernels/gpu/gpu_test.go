package gpu

import (
	"slices"
	"strings"
	"testing"
)

// TestManifest: every embedded file is in the manifest and the reverse;
// every entry point is defined in its file; every file names its CPU twin
// and tolerance in its opening comment.
func TestManifest(t *testing.T) {
	var listed []string
	for _, k := range Manifest() {
		listed = append(listed, k.File)
		src, err := Source(k.File)
		if err != nil {
			t.Fatal(err)
		}
		body := strings.TrimPrefix(src, Dialect())
		for _, e := range k.Entries {
			if !strings.Contains(body, "PB_KERNEL") || !HasEntry(body, e) {
				t.Errorf("%s: entry %s not defined", k.File, e)
			}
		}
		if !strings.Contains(body, "CPU twin:") || !strings.Contains(body, "Tolerance:") {
			t.Errorf("%s: the opening comment must name the CPU twin and the tolerance", k.File)
		}
		if k.Twin == "" || k.Tolerance == "" {
			t.Errorf("%s: manifest lacks twin or tolerance", k.File)
		}
	}
	slices.Sort(listed)
	if files := Files(); !slices.Equal(files, listed) {
		t.Errorf("embedded %v, manifest %v", files, listed)
	}
}

// TestDialectHeaderless: the dialect works without any include and avoids
// what one of the two compilers lacks (../shared/spec/gpu-runtime.md §4).
func TestDialectHeaderless(t *testing.T) {
	for _, f := range append(Files(), "dialect.h") {
		b, _ := files.ReadFile(f)
		src := string(b)
		for _, bad := range []string{"#include", "INFINITY", "__half", "__nv_bfloat16", "hip_bfloat16", "__shfl_xor_sync(0xffffffffu, v, m, width)", "warpSize", "-ffast-math", "__launch_bounds__(RMS_THREADS, "} {
			if strings.Contains(src, bad) {
				t.Errorf("%s: contains %q", f, bad)
			}
		}
	}
}
