package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/internal/emubuild"
	"plexbench/internal/shareddata"
	"plexbench/internal/testtier"
	"plexbench/kernels"
	"plexbench/scoring"
)

// emulatedDevice points the GPU runtimes' override variables at a fresh
// copy of the emulated CUDA and HIP runtimes (hip/emu) with env set for
// it (faults, memory): a fresh copy reads its environment afresh. Kernels
// compile into a test cache folder.
func emulatedDevice(t *testing.T, env map[string]string) {
	t.Helper()
	for k, v := range emubuild.Env(emubuild.FreshForTest(t, "../../hip/emu")) {
		t.Setenv(k, v)
	}
	t.Setenv("PLEXBENCH_EMU_WARP", "")
	// No vendor BLAS unless a test selects the emulated one (device_blas_test.go).
	for _, k := range []string{"PLEXBENCH_CUBLAS_LIB", "PLEXBENCH_ROCBLAS_LIB", "PLEXBENCH_NO_BLAS", "PLEXBENCH_EMU_BLAS_FAIL_GEMM", "PLEXBENCH_EMU_BLAS_SUM"} {
		t.Setenv(k, "")
	}
	for _, k := range []string{"PLEXBENCH_EMU_FAIL_ALLOC_AFTER", "PLEXBENCH_EMU_FAIL_LAUNCH", "PLEXBENCH_EMU_FAIL_COMPILE", "PLEXBENCH_EMU_LOST_AFTER"} {
		t.Setenv(k, env[k])
	}
	t.Setenv("XDG_CACHE_HOME", deviceCache) // plexbench's kernel cache, shared by the device tests
}

// deviceCache is the device tests' kernel cache folder.
var deviceCache = filepath.Join(os.TempDir(), "plexbench-device-test-cache")

// deviceScore runs score with args and returns its report.
func deviceScore(t *testing.T, args ...string) scoring.Report {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"score", "--quiet", "--results", t.TempDir()}, args...)...)
	if code != 0 {
		t.Fatalf("score %v: exit %d, stderr %q", args, code, stderr)
	}
	var rep scoring.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// cpuTwin is the CPU kernel selection the device kernels follow: ggml's
// per-block arithmetic for the quantized products (matmul=go). The CPU's
// fastest kernels give the same float results and, on quantized files,
// PPLs that differ from it by up to ~2e-3 on this 64-wide model: an
// ulp-level difference upstream moves an activation's 8-bit code (the
// spread llama.cpp's own AVX2 and AVX-512 builds show, 1.4e-3).
const cpuTwin = "matmul=go"

// q8Spread bounds the relative PPL difference when quantized products run
// on the device: their sums run in another order than any CPU kernel's,
// and an ulp upstream moves an 8-bit activation code; the CPU's own
// variants (matmul=go against the default) differ by ~2e-3 on these files.
const q8Spread = 3e-3

// bf16Spread bounds the relative PPL difference when activations round to
// bf16 (BF16 weights) or probabilities do (a bf16 KV cache): a value on a
// rounding boundary takes the neighbouring bf16 (2^-8 relative) when an
// ulp upstream differs; measured 2.6e-4 and 9.4e-5 on the Qwen3 shapes.
const bf16Spread = 1e-3

// quantizedProducts reports whether a run's kernel selection (the
// report's config.kernels) multiplied by quantized weights.
func quantizedProducts(sel map[string]string) bool {
	for op := range sel {
		typ, ok := strings.CutPrefix(op, "matmul.")
		if ok && typ != "f32" && typ != "f16" && typ != "bf16" {
			return true
		}
	}
	return false
}

// TestDeviceScoreMatchesCPU: on the emulated CUDA and HIP devices, the
// F32 and Q8_0 stories260K files run wholly on the device
// (--no-cpu-fallback) and score the PPL the CPU backend does with the
// kernels the device's follow (within 1e-4 relative, f32 KV; q8Spread
// with quantized products), the report says what ran where, and the F32
// file's device run against a CPU-recorded base has a mean KLD below
// 1e-6. TestLongDeviceScoreMatchesCPU runs every other file on CUDA.
func TestDeviceScoreMatchesCPU(t *testing.T) {
	common := deviceFileArgs(t)
	some := []string{shareddata.Path(t, "models/stories260K-f32.gguf"), shareddata.Path(t, "models/stories260K-q8_0.gguf")}
	for _, backend := range []string{"cuda", "hip"} {
		t.Run(backend, func(t *testing.T) {
			emulatedDevice(t, nil)
			checkDeviceFiles(t, backend, some)
			f32 := shareddata.Path(t, "models/stories260K-f32.gguf")
			base := filepath.Join(t.TempDir(), "cpu.kld")
			deviceScore(t, append([]string{"--model", f32, "--perplexity-kld-base-out", base}, common...)...)
			dev := deviceScore(t, "--model", f32, "--backend", backend, "--no-cpu-fallback", "--perplexity-kld", base, "--kv-cache-dtype", "f32")
			if c := dev.Config; len(c.CPUFallbackOps) != 0 || c.CPUFallbackAllowed {
				t.Errorf("--no-cpu-fallback: config %+v", c)
			}
			k := dev.KLD
			if k == nil || !(k.MeanKLD < 1e-6) || k.SameTop != 1 {
				t.Fatalf("the F32 device run against the CPU base: %+v", k)
			}
			t.Logf("F32 on %s against the CPU base: mean KLD %.3g, same top %.4f", backend, k.MeanKLD, k.SameTop)
		})
	}
}

// TestLongDeviceScoreMatchesCPU is TestDeviceScoreMatchesCPU's comparison
// for every other stories260K file, on the emulated CUDA device.
func TestLongDeviceScoreMatchesCPU(t *testing.T) {
	testtier.SkipUnlessLong(t)
	all, _ := filepath.Glob(shareddata.Path(t, "models") + "/*.gguf")
	all = slices.DeleteFunc(all, func(m string) bool {
		return slices.Contains([]string{"stories260K-f32.gguf", "stories260K-q8_0.gguf"}, filepath.Base(m))
	})
	emulatedDevice(t, nil)
	checkDeviceFiles(t, "cuda", all)
}

// deviceFileArgs are the device file comparisons' text and geometry:
// four windows of 64 of the TinyStories excerpt over an f32 KV cache.
func deviceFileArgs(t *testing.T) []string {
	text := shareddata.Path(t, "tinystories/tinystories-16k.txt")
	return []string{"--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "4", "--kv-cache-dtype", "f32"}
}

// checkDeviceFiles scores each model on the CPU (cpuTwin) and wholly on
// backend's emulated device, and compares the PPLs and what the reports
// say ran where.
func checkDeviceFiles(t *testing.T, backend string, models []string) {
	t.Helper()
	common := deviceFileArgs(t)
	for _, m := range models {
		cpu := deviceScore(t, append([]string{"--model", m, "--kernels", cpuTwin}, common...)...)
		// Every file runs wholly on the device: the F32 file with the
		// fallback allowed (and none taken), the others refusing it.
		strict := filepath.Base(m) != "stories260K-f32.gguf"
		args := append([]string{"--model", m, "--backend", backend, "--kernels", cpuTwin}, common...)
		if strict {
			args = append(args, "--no-cpu-fallback")
		}
		dev := deviceScore(t, args...)
		c := dev.Config
		tol := 1e-4
		if quantizedProducts(cpu.Config.Kernels) {
			tol = q8Spread
		}
		if rel := math.Abs(dev.Perplexity/cpu.Perplexity - 1); rel > tol || dev.ScoredTokens != cpu.ScoredTokens {
			t.Errorf("%s: PPL %v on %s, %v on the CPU (%.2g relative)", filepath.Base(m), dev.Perplexity, backend, cpu.Perplexity, rel)
		}
		if c.Backend != backend || c.DeviceArch == "cpu" || !slices.Contains(c.DeviceOps, "matmul") || len(c.CPUFallbackOps) != 0 || c.CPUFallbackAllowed == strict {
			t.Errorf("%s: config %+v does not say what ran where", filepath.Base(m), c)
		}
		t.Logf("%s on the emulated %s device %s: PPL %.6f (CPU %.6f); device ops %v, CPU %v",
			filepath.Base(m), backend, c.DeviceArch, dev.Perplexity, cpu.Perplexity, c.DeviceOps, c.CPUFallbackOps)
	}
}

// TestDeviceFaults: a refused CPU fallback, an allocation failure at
// load, a failed compile, a launch failure mid-run and a device lost
// between windows each end the run with one clear line and a non-zero
// exit, write no report, and a run that failed mid-way continues with
// --resume on a working device.
func TestDeviceFaults(t *testing.T) {
	model := shareddata.Path(t, "models/stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories/tinystories-16k.txt")
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"strict", nil, []string{"--no-cpu-fallback", "--model", withOutputBias(t, model)}, "--strict-device-kernels: no device kernel in the engine yet for op head (output bias)"},
		{"alloc", map[string]string{"PLEXBENCH_EMU_FAIL_ALLOC_AFTER": "4096"}, nil, "OUT_OF_MEMORY"},
		{"compile", map[string]string{"PLEXBENCH_EMU_FAIL_COMPILE": "1"}, []string{"--perplexity-ctx", "32"}, "compil"},
		{"launch", map[string]string{"PLEXBENCH_EMU_FAIL_LAUNCH": "300"}, nil, "window"},
		{"lost", map[string]string{"PLEXBENCH_EMU_LOST_AFTER": "500"}, nil, "window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			emulatedDevice(t, c.env)
			if c.name == "compile" {
				t.Setenv("XDG_CACHE_HOME", t.TempDir()) // nothing compiled before
			}
			dir := t.TempDir()
			out := filepath.Join(dir, "report.json")
			args := append([]string{"score", "--quiet", "--model", model, "--perplexity", text, "--perplexity-ctx", "64",
				"--perplexity-chunks", "8", "--backend", "cuda", "--perplexity-output", out, "--results", dir}, c.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code == 0 || stdout != "" || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q: want one line saying %q", code, stdout, stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatal("a failed run wrote its report")
			}
			if (c.name == "launch" || c.name == "lost") && strings.Contains(stderr, "window 0 ") {
				t.Fatalf("the fault hit the first window, not mid-run: %s", stderr)
			}
			t.Logf("emulated fault %s: %s", c.name, strings.TrimSpace(stderr))
			if c.name != "launch" && c.name != "lost" {
				return
			}
			emulatedDevice(t, nil) // a working device: the journal continues
			args = append(args, "--resume")
			if code, _, stderr := runCLI(t, args...); code != 0 {
				t.Fatalf("--resume after the fault: exit %d, %q", code, stderr)
			}
			var rep scoring.Report
			data, _ := os.ReadFile(out)
			if err := json.Unmarshal(data, &rep); err != nil || rep.Partial || rep.WindowsScored != 8 {
				t.Fatalf("resumed report: %v, %+v", err, rep)
			}
		})
	}
}

// withOutputBias copies the llama model at path as a qwen2 one (the keys
// renamed) with a zero output.bias: a head the device does not run yet,
// for the refused fallback.
func withOutputBias(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		key := kv.Key
		if rest, ok := strings.CutPrefix(key, "llama."); ok {
			key = "qwen2." + rest
		}
		w.Set(key, kv.Value)
	}
	w.Set("general.architecture", "qwen2")
	vocab := 0
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == "output.weight" {
			vocab = int(ti.Dims[1])
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddTensor("output.bias", kernels.F32, []int64{int64(vocab)}, make([]byte, 4*vocab)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "qwen2-output-bias.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeviceQwen3 scores one-layer random models of Qwen3-0.6B's shapes
// (q/k head norms, NEOX RoPE, GQA 16/8, head dim 128) on the emulated CUDA
// device and on the CPU (cpuTwin kernels), wholly on the device
// (--no-cpu-fallback): llama.cpp's Q4_K_M mix (Q4_K and Q6_K products)
// over an f32 KV cache, and F16 weights over a bf16 and a q8_0 cache. The
// PPL agrees within q8Spread where activations (or a q8_0 cache's
// queries) take 8-bit codes, and within bf16Spread where they (or a bf16
// cache's probabilities) round to bf16. TestLongDeviceQwen3 runs every
// other weight type; hip's TestDeviceMatMulQuant checks each type's
// product kernel against float64.
func TestDeviceQwen3(t *testing.T) { checkDeviceQwen3(t, false) }

// TestLongDeviceQwen3 is TestDeviceQwen3 with every matrix F16 (within
// 1e-4 relative over an f32 cache), BF16, Q8_0, or each K-quant type and
// IQ4_XS.
func TestLongDeviceQwen3(t *testing.T) {
	testtier.SkipUnlessLong(t)
	checkDeviceQwen3(t, true)
}

// checkDeviceQwen3 runs TestDeviceQwen3's cases of the long tier or of
// the default one.
func checkDeviceQwen3(t *testing.T, long bool) {
	emulatedDevice(t, nil)
	dir := t.TempDir()
	tokFile := hybridTokens(t, dir, 96)
	for _, c := range []struct {
		name  string
		types func(int, string) kernels.Type
		kv    string
		tol   float64
		long  bool
	}{
		{"f16", synth.AllOf(kernels.F16), "f32", 1e-4, true},
		{"bf16", synth.AllOf(kernels.BF16), "f32", bf16Spread, true},
		{"q8_0", synth.AllOf(kernels.Q8_0), "f32", q8Spread, true},
		{"q4_k_m", synth.Q4KM(1), "f32", q8Spread, false},
		{"q4_k", synth.AllOf(kernels.Q4_K), "f32", q8Spread, true},
		{"q5_k", synth.AllOf(kernels.Q5_K), "f32", q8Spread, true},
		{"q6_k", synth.AllOf(kernels.Q6_K), "f32", q8Spread, true},
		{"q2_k", synth.AllOf(kernels.Q2_K), "f32", q8Spread, true},
		{"q3_k", synth.AllOf(kernels.Q3_K), "f32", q8Spread, true},
		{"iq4_xs", synth.AllOf(kernels.IQ4_XS), "f32", q8Spread, true},
		{"f16", synth.AllOf(kernels.F16), "bf16", bf16Spread, false},
		{"f16", synth.AllOf(kernels.F16), "q8_0", q8Spread, false},
	} {
		if c.long != long {
			continue
		}
		model := filepath.Join(dir, c.name+".gguf")
		if _, err := os.Stat(model); err != nil {
			if err := synth.Write(model, synth.Config{Layers: 1, Types: c.types, Vocab: synth.PlaceholderVocab(64)}); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"--model", model, "--perplexity-tokens", tokFile, "--perplexity-ctx", "32", "--kv-cache-dtype", c.kv, "--kernels", cpuTwin}
		cpu := deviceScore(t, args...)
		dev := deviceScore(t, append(args, "--backend", "cuda", "--no-cpu-fallback")...)
		if rel := math.Abs(dev.Perplexity/cpu.Perplexity - 1); rel > c.tol || len(dev.Config.CPUFallbackOps) != 0 {
			t.Errorf("qwen3 %s, %s KV: PPL %v on the device, %v on the CPU (%.2g relative); CPU ops %v", c.name, c.kv, dev.Perplexity, cpu.Perplexity, rel, dev.Config.CPUFallbackOps)
		}
		t.Logf("qwen3 shapes, 1 layer, %s weights, %s KV on the emulated cuda device: PPL %.6f (CPU %.6f, %.2g relative)",
			c.name, c.kv, dev.Perplexity, cpu.Perplexity, math.Abs(dev.Perplexity/cpu.Perplexity-1))
	}
}

// TestDeviceNoise: on the emulated CUDA device, `noise` (default kernels
// and KV cache, two windows: each change is a run on the device) adds the
// device against the CPU as one more change; on the F32 file it moves the
// distributions by no more than the device's other summation order does
// (mean KLD < 1e-6, the same top token at 99% of positions), within the
// engine's noise floor.
func TestDeviceNoise(t *testing.T) {
	emulatedDevice(t, nil)
	n := runNoiseJSON(t, "f32", append(sweepGeometry(t, "64", "2"), "--backend", "cuda", "--results", t.TempDir())...)
	i := slices.IndexFunc(n.Changes, func(c scoring.NoiseChange) bool { return c.Settings == "backend=cpu" })
	if i < 0 {
		t.Fatalf("no device-vs-CPU change in %+v", n.Changes)
	}
	c := n.Changes[i]
	t.Logf("device vs CPU: mean KLD %.3g, max %.3g, same top %g, floor %.3g", c.MeanKLD, c.MaxKLD, c.SameTop, n.Floor)
	if c.MeanKLD > 1e-6 || c.SameTop < 0.99 || n.Floor < c.MeanKLD {
		t.Errorf("device vs CPU: %+v, floor %g", c, n.Floor)
	}
}

// TestDeviceTopK1024: the device head's top-k beyond the 32 of topk_f32
// (topk_radix_f32): a one-layer qwen3-shaped model of 2048 tokens records
// a base of the top 1024 on the emulated CUDA device (--no-cpu-fallback),
// the CPU scores against it and the other way round; each sees a mean
// KLD below 1e-6 and the same top token everywhere.
func TestDeviceTopK1024(t *testing.T) {
	emulatedDevice(t, nil)
	dir := t.TempDir()
	model := filepath.Join(dir, "qwen3-v2048.gguf")
	if err := synth.Write(model, synth.Config{Layers: 1, Types: synth.AllOf(kernels.F32), Vocab: synth.PlaceholderVocab(2048)}); err != nil {
		t.Fatal(err)
	}
	tokFile := tokenFile(t, dir, 64, 2048, 389, 7)
	common := []string{"--model", model, "--perplexity-tokens", tokFile, "--perplexity-ctx", "32", "--kv-cache-dtype", "f32", "--kernels", cpuTwin}
	device := []string{"--backend", "cuda", "--no-cpu-fallback"}
	for _, c := range []struct{ record, score []string }{{device, nil}, {nil, device}} {
		base := filepath.Join(t.TempDir(), "top1024.kld")
		deviceScore(t, slices.Concat(common, c.record, []string{"--perplexity-kld-base-out", base, "--perplexity-kld-top-k", "1024"})...)
		rep := deviceScore(t, slices.Concat(common, c.score, []string{"--perplexity-kld", base})...)
		k := rep.KLD
		if k == nil || !(k.MeanKLD < 1e-6) || k.SameTop != 1 {
			t.Fatalf("recorded with %v, scored with %v: %+v", c.record, c.score, k)
		}
		t.Logf("top 1024 recorded with %v, scored with %v: mean KLD %.3g, same top %.4f", c.record, c.score, k.MeanKLD, k.SameTop)
	}
}
