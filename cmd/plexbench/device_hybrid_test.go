package main

// device_hybrid_test.go: the Gated DeltaNet hybrids (qwen35, qwen35moe,
// qwen3next) scored wholly on the emulated CUDA device against the CPU,
// and a run of one that a launch fault stops mid-way, resumed.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/kernels"
	"plexbench/scoring"
)

// hybridModel writes synth's tiny preset of arch with weights of typ
// (r = 2 value heads per key head; the MoE archs 6 experts of 64, as Q8_0
// needs rows of whole blocks, 2 used, and a shared expert), cut to two
// layers (a GDN one, then gated attention) unless full: the preset's 6,
// attention at layers 2 and 5. qwen35's RoPE sections leave one pair of
// the four on IMROPE's position stream e, which does not turn.
func hybridModel(t *testing.T, dir, arch string, typ kernels.Type, full bool) string {
	t.Helper()
	h, err := synth.HybridPreset(arch + "-tiny")
	if err != nil {
		t.Fatal(err)
	}
	h.Vocab, h.Seed, h.Types = synth.PlaceholderVocab(64), 5, synth.AllOf(typ)
	if h.ExpertFF > 0 {
		h.ExpertFF = 64
	}
	if arch == "qwen35" {
		h.Sections = [4]int{1, 1, 1, 1}
	}
	if !full {
		h.Layers, h.Interval = 2, 2
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.gguf", arch, strings.ToLower(typ.String()), h.Layers))
	if err := synth.WriteHybrid(path, h); err != nil {
		t.Fatal(err)
	}
	return path
}

// hybridTokens writes n token ids of the 64-token vocabulary to a file for
// --perplexity-tokens.
func hybridTokens(t *testing.T, dir string, n int) string { return tokenFile(t, dir, n, 64, 37, 11) }

// tokenFile writes n token ids (i·step + offset mod vocab) to dir's
// tokens.json for --perplexity-tokens.
func tokenFile(t *testing.T, dir string, n, vocab, step, offset int) string {
	t.Helper()
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32((i*step + offset) % vocab)
	}
	ids, _ := json.Marshal(tokens)
	path := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(path, ids, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeviceHybrid scores tiny qwen35, qwen35moe and qwen3next models on
// the emulated CUDA device with --no-cpu-fallback and on the CPU (cpuTwin
// kernels): nothing ran on the CPU, the GDN (and MoE) ran on the device,
// and the PPL agrees within 1e-5 relative for the 6-layer F32 files (sums
// in another order only), 1e-4 for F16 and q8Spread for Q8_0. Those take
// two layers, as TestDeviceQwen3 takes one: deeper random stacks amplify
// one activation's f16 rounding (or 8-bit code) flipped by an ulp
// upstream past those bounds; the CPU's own F16 kernels (go against
// avx2) differ by 2–3e-4 on the 6-layer files.
func TestDeviceHybrid(t *testing.T) {
	emulatedDevice(t, nil)
	dir := t.TempDir()
	tokFile := hybridTokens(t, dir, 64)
	for _, arch := range []string{"qwen35", "qwen35moe", "qwen3next"} {
		for _, c := range []struct {
			typ  kernels.Type
			full bool
			tol  float64
		}{{kernels.F32, true, 1e-5}, {kernels.F16, false, 1e-4}, {kernels.Q8_0, false, q8Spread}} {
			typ, tol := c.typ, c.tol
			model := hybridModel(t, dir, arch, typ, c.full)
			args := []string{"--model", model, "--perplexity-tokens", tokFile, "--perplexity-ctx", "32", "--kv-cache-dtype", "f32"}
			cpu := deviceScore(t, append(args, "--kernels", cpuTwin)...)
			dev := deviceScore(t, append(args, "--backend", "cuda", "--no-cpu-fallback", "--kernels", cpuTwin)...)
			c := dev.Config
			rel := math.Abs(dev.Perplexity/cpu.Perplexity - 1)
			if rel > tol || dev.ScoredTokens != cpu.ScoredTokens || !(dev.Perplexity > 1) {
				t.Errorf("%s %v: PPL %v on the device, %v on the CPU (%.2g relative)", arch, typ, dev.Perplexity, cpu.Perplexity, rel)
			}
			moe := arch != "qwen35"
			if len(c.CPUFallbackOps) != 0 || !slices.Contains(c.DeviceOps, "gdn") || moe != slices.Contains(c.DeviceOps, "moe") {
				t.Errorf("%s %v: device ops %v, CPU %v", arch, typ, c.DeviceOps, c.CPUFallbackOps)
			}
			t.Logf("%s on the emulated cuda device: PPL %.6f (CPU %.6f, %.2g relative); device ops %v",
				filepath.Base(model), dev.Perplexity, cpu.Perplexity, rel, c.DeviceOps)
		}
	}
}

// TestDeviceHybridResume: a launch fault in a later window of a qwen35moe
// run on the device stops it with one line naming the window; --resume on
// a working device finishes it with the PPL of a run never stopped.
func TestDeviceHybridResume(t *testing.T) {
	dir := t.TempDir()
	model := hybridModel(t, dir, "qwen35moe", kernels.F16, true)
	tokFile := hybridTokens(t, dir, 128)
	emulatedDevice(t, nil)
	args := []string{"score", "--quiet", "--model", model, "--perplexity-tokens", tokFile, "--perplexity-ctx", "32",
		"--backend", "cuda", "--no-cpu-fallback", "--kv-cache-dtype", "f32", "--results", dir}
	whole := deviceScore(t, args[2:]...)

	out := filepath.Join(dir, "report.json")
	args = append(args, "--perplexity-output", out)
	emulatedDevice(t, map[string]string{"PLEXBENCH_EMU_FAIL_LAUNCH": "1100"})
	code, stdout, stderr := runCLI(t, args...)
	if code == 0 || stdout != "" || !strings.Contains(stderr, "window") || strings.Contains(stderr, "window 0 ") ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q: want one line naming a later window", code, stdout, stderr)
	}
	t.Logf("emulated launch fault: %s", strings.TrimSpace(stderr))
	emulatedDevice(t, nil)
	if code, _, stderr := runCLI(t, append(args, "--resume")...); code != 0 {
		t.Fatalf("--resume after the fault: exit %d, %q", code, stderr)
	}
	var rep scoring.Report
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &rep); err != nil || rep.Partial || rep.WindowsScored != whole.WindowsScored {
		t.Fatalf("resumed report: %v, %+v", err, rep)
	}
	if rep.Perplexity != whole.Perplexity {
		t.Errorf("resumed PPL %v, uninterrupted %v", rep.Perplexity, whole.Perplexity)
	}
	t.Logf("qwen35moe resumed on the device: %d windows, PPL %.6f (uninterrupted %.6f)", rep.WindowsScored, rep.Perplexity, whole.Perplexity)
}
