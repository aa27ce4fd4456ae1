package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestKernelsCPU: `kernels --cpu` lists what another CPU would run, from
// the registry: a CPU without features defaults to the Go twins, an AVX2
// one to the avx2 kernels, and an unknown feature is one line, exit 2.
func TestKernelsCPU(t *testing.T) {
	t.Parallel()
	def := regexp.MustCompile(`(?m)^matmul\.q8_0\s+(\S+)\s+yes\s+\*`)
	for _, c := range []struct{ cpu, want string }{
		{"none", "gotile"},
		{"avx2 fma f16c", "avx2"},
		{"avx2,fma,f16c,avx512,avx512vnni", "avx512"},
		{"avx2 fma f16c avx512", "avx2"}, // the Q8_0 avx512 kernel needs VNNI
	} {
		code, out, errOut := runCLI(t, "kernels", "--cpu", c.cpu)
		if code != 0 {
			t.Fatalf("--cpu %q: exit %d: %s", c.cpu, code, errOut)
		}
		m := def.FindStringSubmatch(out)
		if m == nil || m[1] != c.want {
			t.Errorf("--cpu %q: default matmul.q8_0 %v, want %s", c.cpu, m, c.want)
		}
	}
	code, out, errOut := runCLI(t, "kernels", "--cpu", "avx2 sse9")
	if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, `"sse9"`) {
		t.Errorf("bad feature: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
