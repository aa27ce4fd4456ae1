package main

import (
	"math"
	"testing"
	"time"

	"plexbench/internal/shareddata"
	"plexbench/internal/testtier"
)

// longCtx is TestLongDeviceContext's window: past the 12,032 tokens at
// which an attention asking 4 bytes of shared memory per key would need
// more than the 48 KB a CUDA block gets without opting in.
const longCtx = "16384"

// TestLongDeviceContext: stories260K-f32 scored on one window of longCtx
// tokens, dense and with FlashPrefill V2 (blocks of 128), on the emulated
// CUDA and HIP devices wholly (--no-cpu-fallback, f32 KV cache), gives the
// CPU's PPL (cpuTwin kernels) within 1e-4 relative, and FlashPrefill keeps
// the CPU's blocks. Measured (AMD EPYC, 2 shared vCPUs): dense PPL
// 978.5557 on the CPU (196 s), 1.8e-6 relative on CUDA (348 s), 2.3e-6
// on HIP (739 s); FlashPrefill 777.8673 (30 s), kept 0.142418 on all,
// 1.8e-6 on CUDA (70 s), 1.2e-6 on HIP (110 s): 25 minutes in all.
func TestLongDeviceContext(t *testing.T) {
	testtier.SkipUnlessLongContext(t)
	emulatedDevice(t, nil)
	model := shareddata.Path(t, "models/stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories/tinystories_val.txt")
	base := []string{"--model", model, "--perplexity", text, "--perplexity-ctx", longCtx, "--perplexity-chunks", "1",
		"--kv-cache-dtype", "f32", "--kernels", cpuTwin}
	for _, mode := range []struct {
		name string
		args []string
	}{{"dense", nil}, {"FlashPrefill V2", []string{"--FlashPrefillV2=on", "--flashprefill-block-size", "128"}}} {
		args := append(append([]string(nil), base...), mode.args...)
		start := time.Now()
		cpu := deviceScore(t, args...)
		cpuS := time.Since(start).Seconds()
		for _, backend := range []string{"cuda", "hip"} {
			start := time.Now()
			dev := deviceScore(t, append(args, "--backend", backend, "--no-cpu-fallback")...)
			rel := math.Abs(dev.Perplexity/cpu.Perplexity - 1)
			if rel > 1e-4 || dev.ScoredTokens != cpu.ScoredTokens || len(dev.Config.CPUFallbackOps) != 0 {
				t.Errorf("%s, ctx %s on %s: PPL %v over %d tokens, the CPU %v over %d (%.2g relative)",
					mode.name, longCtx, backend, dev.Perplexity, dev.ScoredTokens, cpu.Perplexity, cpu.ScoredTokens, rel)
			}
			if dev.PrefillAttentionKept != cpu.PrefillAttentionKept {
				t.Errorf("%s, ctx %s on %s: kept %v of the blocks, the CPU %v", mode.name, longCtx, backend, dev.PrefillAttentionKept, cpu.PrefillAttentionKept)
			}
			t.Logf("%s, ctx %s on the emulated %s device: PPL %.6f (CPU %.6f, %.2g relative), kept %.6f; %.1f s (CPU %.1f s)",
				mode.name, longCtx, backend, dev.Perplexity, cpu.Perplexity, rel, dev.PrefillAttentionKept, time.Since(start).Seconds(), cpuS)
		}
	}
}
