package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/internal/emubuild"
	"plexbench/internal/shareddata"
	"plexbench/internal/testtier"
	"plexbench/kernels"
)

// emulatedBLAS is emulatedDevice with the emulated vendor BLAS of the same
// fresh copy selected (cuBLAS beside CUDA, rocBLAS beside HIP) and env set
// for it (its faults).
func emulatedBLAS(t *testing.T, env map[string]string) {
	t.Helper()
	emulatedDevice(t, nil)
	for k, v := range emubuild.BLASEnv(filepath.Dir(os.Getenv("PLEXBENCH_CUDA_LIB"))) {
		t.Setenv(k, v)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// TestDeviceBLAS: stories260K-f16 on each emulated backend with the
// emulated vendor BLAS taking its F16 products at prefill sizes. Summing
// as matmul.cu does (PLEXBENCH_EMU_BLAS_SUM=f32) it scores our own device
// kernels' PPL to the bit: the layout and the activations' rounding are
// theirs. Summing in float64 (its default, another order as a real BLAS
// has) it scores the CPU's (matmul=go) within 1e-4 relative, as our own
// kernels do, so the two device runs agree within twice that: an f32
// ulp's difference moves an activation to the neighbouring f16 (2^-11
// relative), and this 64-wide model's PPL follows (own kernels and CPU
// differ by 9e-5 here). The report names the BLAS (config.device_blas,
// and the product in device_ops); without the override, or with
// PLEXBENCH_NO_BLAS=1, it has no BLAS field at all. A BLAS call that fails
// ends the run with one line naming the call and its status.
func TestDeviceBLAS(t *testing.T) {
	model := shareddata.Path(t, "models/stories260K-f16.gguf")
	text := shareddata.Path(t, "tinystories/tinystories-16k.txt")
	common := []string{"--model", model, "--perplexity", text, "--perplexity-ctx", "64", "--perplexity-chunks", "4",
		"--kv-cache-dtype", "f32", "--kernels", cpuTwin}
	cpu := deviceScore(t, common...)
	for _, c := range []struct{ backend, blas, op string }{
		{"cuda", "cublas 12.0.0", "matmul.f16 (cublas)"},
		{"hip", "rocblas 4.0.0-plexbench-emulated", "matmul.f16 (rocblas)"},
	} {
		t.Run(c.backend, func(t *testing.T) {
			args := append([]string{"--backend", c.backend, "--no-cpu-fallback"}, common...)
			emulatedDevice(t, nil)
			code, stdout, stderr := runCLI(t, append([]string{"score", "--quiet", "--results", t.TempDir()}, args...)...)
			if code != 0 || strings.Contains(stdout, "device_blas") {
				t.Fatalf("without a BLAS: exit %d, stderr %q; the report names one: %v", code, stderr, strings.Contains(stdout, "device_blas"))
			}
			own := deviceScore(t, args...)

			emulatedBLAS(t, map[string]string{"PLEXBENCH_NO_BLAS": "1"})
			if off := deviceScore(t, args...); off.Config.DeviceBLAS != "" || off.Perplexity != own.Perplexity {
				t.Errorf("PLEXBENCH_NO_BLAS=1: device_blas %q, PPL %v (own kernels %v)", off.Config.DeviceBLAS, off.Perplexity, own.Perplexity)
			}

			emulatedBLAS(t, map[string]string{"PLEXBENCH_EMU_BLAS_SUM": "f32"})
			if same := deviceScore(t, args...); same.Perplexity != own.Perplexity || same.Config.DeviceBLAS != c.blas {
				t.Errorf("summing as matmul.cu: PPL %v with %q, %v on our own kernels; want the same to the bit", same.Perplexity, same.Config.DeviceBLAS, own.Perplexity)
			}

			emulatedBLAS(t, nil)
			dev := deviceScore(t, args...)
			cfg := dev.Config
			if cfg.DeviceBLAS != c.blas || !slices.Contains(cfg.DeviceOps, c.op) || len(cfg.CPUFallbackOps) != 0 {
				t.Errorf("config: device_blas %q, device_ops %v, cpu_fallback_ops %v; want %q and %q", cfg.DeviceBLAS, cfg.DeviceOps, cfg.CPUFallbackOps, c.blas, c.op)
			}
			for _, ref := range []struct {
				name string
				ppl  float64
				tol  float64
			}{{"our own device kernels", own.Perplexity, 2e-4}, {"the CPU", cpu.Perplexity, 1e-4}} {
				if rel := math.Abs(dev.Perplexity/ref.ppl - 1); rel > ref.tol || dev.ScoredTokens != cpu.ScoredTokens {
					t.Errorf("PPL %v with %s, %v with %s (%.2g relative)", dev.Perplexity, c.blas, ref.ppl, ref.name, rel)
				}
			}
			t.Logf("stories260K-f16 on the emulated %s device: PPL %.8f with %s, %.8f on its own kernels, %.8f on the CPU (%.2g, %.2g relative)",
				c.backend, dev.Perplexity, cfg.DeviceBLAS, own.Perplexity, cpu.Perplexity,
				math.Abs(dev.Perplexity/own.Perplexity-1), math.Abs(dev.Perplexity/cpu.Perplexity-1))

			// The first GEMM fails: the run ends with one line naming it.
			emulatedBLAS(t, map[string]string{"PLEXBENCH_EMU_BLAS_FAIL_GEMM": "1"})
			code, _, stderr = runCLI(t, append([]string{"score", "--quiet", "--results", t.TempDir()}, args...)...)
			want := map[string]string{"cuda": "cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED (13)", "hip": "rocblas_gemm_ex: rocblas_status_internal_error (6)"}[c.backend]
			if line := strings.TrimSpace(stderr); code == 0 || !strings.Contains(line, want) || strings.Count(line, "\n") != 0 {
				t.Errorf("a failing GEMM: exit %d, stderr %q; want one line naming %q", code, stderr, want)
			}
		})
	}
}

// TestDeviceBLASShapes: on the emulated CUDA device with the emulated
// cuBLAS summing as matmul.cu does, a one-layer Qwen3-shaped F16 and BF16
// model score our own kernels' PPL to the bit, and the report names the
// product of each type. TestLongDeviceBLASShapes runs a two-layer
// qwen35moe F16 one (its experts' few rows stay on our kernel, the rest
// take the BLAS).
func TestDeviceBLASShapes(t *testing.T) {
	dir := t.TempDir()
	checkBLASShapes(t, dir, "qwen3 f16", kernels.F16, denseModel(t, dir, kernels.F16))
	checkBLASShapes(t, dir, "qwen3 bf16", kernels.BF16, denseModel(t, dir, kernels.BF16))
}

// TestLongDeviceBLASShapes is TestDeviceBLASShapes on a two-layer
// qwen35moe F16 model.
func TestLongDeviceBLASShapes(t *testing.T) {
	testtier.SkipUnlessLong(t)
	dir := t.TempDir()
	checkBLASShapes(t, dir, "qwen35moe f16", kernels.F16, hybridModel(t, dir, "qwen35moe", kernels.F16, false))
}

// checkBLASShapes scores model (typ products) on the emulated CUDA device
// with our own kernels and with the emulated cuBLAS summing as they do.
func checkBLASShapes(t *testing.T, dir, name string, typ kernels.Type, model string) {
	t.Helper()
	args := []string{"--model", model, "--perplexity-tokens", hybridTokens(t, dir, 96), "--perplexity-ctx", "32", "--kv-cache-dtype", "f32",
		"--kernels", cpuTwin, "--backend", "cuda", "--no-cpu-fallback"}
	emulatedDevice(t, nil)
	own := deviceScore(t, args...)
	emulatedBLAS(t, map[string]string{"PLEXBENCH_EMU_BLAS_SUM": "f32"})
	dev := deviceScore(t, args...)
	op := kernels.MatMulOp(typ) + " (cublas)"
	if dev.Perplexity != own.Perplexity || dev.Config.DeviceBLAS == "" || !slices.Contains(dev.Config.DeviceOps, op) {
		t.Errorf("%s: PPL %v with %q (ops %v), %v on our own kernels; want the same to the bit, and %q", name, dev.Perplexity,
			dev.Config.DeviceBLAS, dev.Config.DeviceOps, own.Perplexity, op)
	}
	t.Logf("%s: PPL %.8f with %s, %.8f on our own kernels", name, dev.Perplexity, dev.Config.DeviceBLAS, own.Perplexity)
}

// denseModel writes a one-layer Qwen3-shaped random model of typ weights.
func denseModel(t *testing.T, dir string, typ kernels.Type) string {
	t.Helper()
	path := filepath.Join(dir, "qwen3-"+strings.ToLower(typ.String())+".gguf")
	if err := synth.Write(path, synth.Config{Layers: 1, Types: synth.AllOf(typ), Vocab: synth.PlaceholderVocab(64)}); err != nil {
		t.Fatal(err)
	}
	return path
}
