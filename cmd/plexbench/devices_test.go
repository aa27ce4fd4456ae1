package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/hip"
	"plexbench/internal/emubuild"
)

// noGPU points both runtimes' override variables at files that do not
// exist, so the tests see a machine without a driver whatever this one has.
func noGPU(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(hip.EnvCUDALib, filepath.Join(dir, "libcuda.so.1"))
	t.Setenv(hip.EnvHIPLib, filepath.Join(dir, "libamdhip64.so.6"))
}

// TestDevicesNoGPU: one line per runtime naming what is missing, one
// error line, exit 1.
func TestDevicesNoGPU(t *testing.T) {
	noGPU(t)
	code, stdout, stderr := runCLI(t, "devices")
	if code == 0 {
		t.Fatalf("exit 0 without a GPU; stdout %q", stdout)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "cuda: ") || !strings.HasPrefix(lines[1], "hip: ") {
		t.Fatalf("stdout %q: want a cuda line and a hip line", stdout)
	}
	for _, l := range lines {
		if !strings.Contains(l, "not found") {
			t.Errorf("%q: want the missing library named", l)
		}
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "no usable GPU") {
		t.Errorf("stderr %q", stderr)
	}
}

// TestScoreGPUBackendNoGPU: a GPU backend on a machine without one is one
// clear line, a non-zero exit and no report file, in each spelling.
func TestScoreGPUBackendNoGPU(t *testing.T) {
	noGPU(t)
	out := filepath.Join(t.TempDir(), "report.json")
	for _, args := range [][]string{
		{"--backend", "cuda"},
		{"--backend", "hip", "--device", "1"},
		{"--pool", "hip:0"},
		{"--pool", "cuda"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"score", "--quiet", "--perplexity-output", out}, args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "not found") {
			t.Errorf("%v: exit %d stdout %q stderr %q", args, code, stdout, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: a report was written", args)
		}
	}
}

// TestScoreGPUBackendThisMachine: whatever this machine has, a GPU backend
// does not (yet) score: one line, non-zero.
func TestScoreGPUBackendThisMachine(t *testing.T) {
	for _, b := range []string{"cuda", "hip"} {
		code, stdout, stderr := runCLI(t, "score", "--quiet", "--backend", b)
		if code == 0 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s: exit %d stdout %q stderr %q", b, code, stdout, stderr)
		}
		t.Logf("%s: %s", b, strings.TrimSpace(stderr))
	}
}

func TestBackendFlagsBad(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "metal"}, "metal"},
		{[]string{"--backend", "hip", "--device", "-1"}, "device"},
		{[]string{"--pool", "hip:x"}, "device"},
		{[]string{"--pool", "cpu:0"}, "cpu backend has no devices"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"score"}, c.args...)...)
		if code == 0 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q: want one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestDevicesEmulated: with the override variables pointed at the emulated
// runtimes of hip/emu, devices lists one CUDA and one HIP device, with the
// memory size PLEXBENCH_EMU_MEM_MIB sets, and exits 0.
func TestDevicesEmulated(t *testing.T) {
	dir, err := emubuild.Build("../../hip/emu")
	if errors.Is(err, emubuild.ErrNoCompiler) {
		t.Skipf("skipped: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mib, gib string
	}{{"8192", "8.0 GiB"}, {"3072", "3.0 GiB"}} {
		fresh := t.TempDir() // a fresh copy reads PLEXBENCH_EMU_* afresh
		if err := emubuild.Fresh(dir, fresh); err != nil {
			t.Fatal(err)
		}
		for k, v := range emubuild.Env(fresh) {
			t.Setenv(k, v)
		}
		t.Setenv("PLEXBENCH_EMU_MEM_MIB", c.mib)
		t.Setenv("PLEXBENCH_EMU_WARP", "")
		code, stdout, stderr := runCLI(t, "devices")
		t.Logf("plexbench devices on the emulated runtime (PLEXBENCH_EMU_MEM_MIB=%s):\n%s", c.mib, stdout)
		if code != 0 || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		want := []string{
			"cuda: " + filepath.Join(fresh, emubuild.CUDALib) + ", driver 13000, nvrtc 13.0 (" + filepath.Join(fresh, emubuild.NVRTCLib) + "): 1 device(s)",
			`  cuda:0  sm_90  "plexbench emulated sm_90"  `,
			"hip: " + filepath.Join(fresh, emubuild.HIPLib) + ", driver 60400000, hiprtc 6.4 (HIP runtime 60400000) (" + filepath.Join(fresh, emubuild.HIPRTCLib) + "): 1 device(s)",
			`  hip:0  gfx90a:sramecc+:xnack-  "plexbench emulated gfx90a"  `,
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d", len(lines), len(want))
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("line %d %q: want it to start %q", i, lines[i], w)
			}
		}
		for i, w := range map[int]string{1: "warp 32, " + c.gib, 3: "warp 64, " + c.gib} {
			if !strings.HasSuffix(lines[i], w) {
				t.Errorf("line %d %q: want it to end %q", i, lines[i], w)
			}
		}
	}
}
