package main

import (
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/kernels"
)

// trafficShape is a one-layer qwen3 whose matrices every device product
// type takes (256 wide: whole Q4_K/Q6_K blocks), small enough that the
// emulator's per-load hooks stay fast.
var trafficShape = synth.Shape{Name: "qwen3-traffic", Arch: "qwen3", Embd: 256, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512, Layers: 1, Sigma: 0.06}

// TestDeviceTraffic: under PLEXBENCH_EMU_TRAFFIC=1 the emulated CUDA
// device's report carries config.device_traffic for F32, Q8_0 and Q4_K_M
// files: W exactly the layer matrices' stored bytes, P the passes (one
// window of 512 in one ubatch of 512), and R the bytes the kernels loaded
// from them. R/(W·P), the times a weight byte is read per pass, is the
// tiled products' design (matmul.cu, quant.cu's mmq_; docs/gpu-numbers.md):
// each weight read once per tile of 64 tokens, ceil(512/64) = 8 times a
// pass, within the bound of 12 (the per-token products read it 512
// times).
func TestDeviceTraffic(t *testing.T) {
	emulatedDevice(t, nil)
	t.Setenv("PLEXBENCH_EMU_TRAFFIC", "1")
	dir := t.TempDir()
	tokFile := hybridTokens(t, dir, 1100)
	const ctx, ub = 512, 512
	for _, c := range []struct {
		name  string
		types func(int, string) kernels.Type
	}{
		{"f32", synth.AllOf(kernels.F32)},
		{"q8_0", synth.AllOf(kernels.Q8_0)},
		{"q4_k_m", synth.Q4KM(1)},
	} {
		model := filepath.Join(dir, c.name+".gguf")
		if err := synth.Write(model, synth.Config{Shape: trafficShape, Layers: 1, Types: c.types, Vocab: synth.PlaceholderVocab(64)}); err != nil {
			t.Fatal(err)
		}
		rep := deviceScore(t, "--model", model, "--perplexity-tokens", tokFile, "--perplexity-ctx", "512", "--perplexity-chunks", "1",
			"--ubatch-size", "512", "--kv-cache-dtype", "f32", "--backend", "cuda", "--no-cpu-fallback")
		tr := rep.Config.DeviceTraffic
		if tr == nil {
			t.Fatalf("%s: no config.device_traffic", c.name)
		}
		perPass := tr.ReadsPerPass()
		t.Logf("%s: W %d bytes, R %d, P %d: R/(W·P) = %.3f", c.name, tr.WeightBytes, tr.WeightReadBytes, tr.Passes, perPass)
		if w := layerMatrixBytes(t, model); tr.WeightBytes != w || tr.Passes != ctx/ub {
			t.Errorf("%s: W %d (the file's layer matrices: %d), P %d (want %d)", c.name, tr.WeightBytes, w, tr.Passes, ctx/ub)
		}
		if tiles := (ub + 63) / 64; tr.WeightReadBytes != uint64(tiles)*tr.WeightBytes*uint64(tr.Passes) || perPass > 12 {
			t.Errorf("%s: R/(W·P) = %.3f, want %d (each weight once per 64-token tile) and at most 12", c.name, perPass, tiles)
		}
	}
}

// layerMatrixBytes is the stored size of path's block matrices.
func layerMatrixBytes(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n uint64
	for _, ti := range f.Tensors {
		if strings.HasPrefix(ti.Name, "blk.") && strings.HasSuffix(ti.Name, ".weight") && len(ti.Dims) == 2 {
			n += uint64(ti.Size)
		}
	}
	return n
}
