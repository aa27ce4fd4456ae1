package gpu

import (
	"fmt"
	"io/fs"
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
// what one of the two compilers lacks (../shared/spec/gpu-runtime.md §4):
// a file includes only embedded headers, and its compile unit (Source,
// those inlined) includes nothing.
func TestDialectHeaderless(t *testing.T) {
	headers, _ := fs.Glob(files, "*.h")
	for _, f := range append(Files(), headers...) {
		b, _ := files.ReadFile(f)
		src := string(b)
		for _, l := range strings.Split(src, "\n") {
			if name, ok := includeOf(l); ok && !slices.Contains(headers, name) {
				t.Errorf("%s: includes %q, not an embedded header", f, name)
			}
		}
		if strings.HasSuffix(f, ".cu") {
			var err error
			if src, err = Source(f); err != nil {
				t.Fatal(err)
			}
		}
		for _, bad := range []string{"#include", "INFINITY", "__half", "__nv_bfloat16", "hip_bfloat16", "__shfl_xor_sync(0xffffffffu, v, m, width)", "warpSize", "-ffast-math", "__launch_bounds__(RMS_THREADS, "} {
			if strings.Contains(src, bad) && (bad != "#include" || strings.HasSuffix(f, ".cu")) {
				t.Errorf("%s: contains %q", f, bad)
			}
		}
	}
}

// TestSourceInlines: an included header's text lands once in the unit,
// between #line markers that keep the file's own line numbers.
func TestSourceInlines(t *testing.T) {
	src, err := Source("quant.cu")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := files.ReadFile("blocks.h")
	if n := strings.Count(src, string(h)); n != 1 {
		t.Fatalf("blocks.h inlined %d times", n)
	}
	raw, _ := files.ReadFile("quant.cu")
	lines := strings.Split(string(raw), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { _, ok := includeOf(l); return ok })
	want := fmt.Sprintf("#line %d \"quant.cu\"\n%s\n", at+2, lines[at+1])
	if !strings.Contains(src, want) {
		t.Errorf("no %q after the header", want)
	}
}
