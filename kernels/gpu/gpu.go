// Package gpu holds plexbench's device kernel sources, written once in the
// dialect of dialect.h for both nvrtc (CUDA) and hiprtc (HIP), embedded in
// the binary, and their manifest: which entry points each file defines,
// the CPU twin each is checked against and the tolerance it must meet.
// Loading and compiling them is the hip package's job.
package gpu

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed dialect.h *.cu
var files embed.FS

// Kernel is one source file of the manifest.
type Kernel struct {
	File      string   // e.g. "rmsnorm.cu"
	Entries   []string // extern "C" kernels it defines
	Twin      string   // the CPU function it must agree with
	Tolerance string   // what "agree" means, as the file's comment states it
	// Exact marks kernels whose results must equal the twin's bit for bit.
	Exact bool
}

// Manifest lists every device source. It returns a fresh slice.
func Manifest() []Kernel {
	return []Kernel{
		{File: "rmsnorm.cu", Entries: []string{"rms_norm_f32"}, Twin: "kernels.KernelSet.RMSNorm (also the q/k head norms: one row per head)", Tolerance: "1 ulp"},
		{File: "rope.cu", Entries: []string{"rope_f32"}, Twin: "kernels.KernelSet.RoPE (IMROPE: NEOX over the pass's table, whose still pairs are cos 1, sin 0)", Tolerance: "exact", Exact: true},
		{File: "swiglu.cu", Entries: []string{"swiglu_f32"}, Twin: "kernels.KernelSet.SwiGLU", Tolerance: "1e-6 relative"},
		{File: "kvstore.cu", Entries: []string{"kv_store_f32", "kv_store_f16", "kv_store_bf16", "kv_store_q8_0"}, Twin: "kernels.KernelSet.QuantizeActivation (the engine's KV store)", Tolerance: "exact", Exact: true},
		{File: "pick.cu", Entries: []string{"pick_f32"}, Twin: "kernels.Pick", Tolerance: "max/argmax/picked exact; Σexp 3e-7 relative"},
		{File: "topk.cu", Entries: []string{"topk_f32"}, Twin: "kernels.TopK", Tolerance: "exact", Exact: true},
		{File: "matmul.cu", Entries: []string{"matmul_f32", "matmul_f16"}, Twin: "kernels.KernelSet.MatMul (ref)", Tolerance: "1e-5·Σ|w·x|"},
		{File: "add.cu", Entries: []string{"add_f32", "add_rows_f32"}, Twin: "the engine's residual and bias adds (f32)", Tolerance: "exact", Exact: true},
		{File: "attention.cu", Entries: []string{"attn_f32", "attn_f16"}, Twin: "the engine's dense attention (kernels.KernelSet.Softmax over the MatMul of the cached keys and values)", Tolerance: "1e-5·Σ p·|v| (f32 cache), 2e-3 (f16)"},
		{File: "q8_0.cu", Entries: []string{"quantize_q8_0", "mm_q8_0"}, Twin: "kernels.QuantizeActivation (Q8_0); kernels.KernelSet.MatMul (Q8_0)", Tolerance: "quantize exact; product 1e-5·Σ|d·isum|"},
		{File: "gdn.cu", Entries: []string{"gdn_gates", "gdn_split_ba", "gdn_conv", "gdn_conv_state", "gdn_l2norm", "gdn_delta"},
			Twin:      "kernels.GDNGates, the engine's β|α split and conv state, kernels.ConvRow then SwiGLU(x, 1), kernels.L2Norm, kernels.DeltaRule",
			Tolerance: "delta, split, state and the conv's sums exact; gates and silu 1e-6 relative; l2norm 1 ulp"},
		{File: "gated.cu", Entries: []string{"gated_split", "gated_mul"}, Twin: "the engine's gated attention (qwen35.go: the q|gate split, out ·= kernels.Sigmoid(gate))", Tolerance: "split exact; gate 1e-6 relative"},
		{File: "moe.cu", Entries: []string{"moe_route", "moe_gather", "moe_combine", "moe_shared"},
			Twin:      "kernels.KernelSet.Softmax (softmaxTwin) then kernels.Route; the engine's MoE gather, combine and shared expert (moe.go)",
			Tolerance: "route, gather and combine exact; shared 1e-6 relative"},
		{File: "embed.cu", Entries: []string{"get_rows_f32", "get_rows_f16", "get_rows_q8_0"}, Twin: "kernels.DequantizeRow (the engine's token embedding)", Tolerance: "exact", Exact: true},
	}
}

// Dialect is the shared header every source is compiled behind.
func Dialect() string {
	b, err := files.ReadFile("dialect.h")
	if err != nil {
		panic("kernels/gpu: dialect.h not embedded") // a build error, not a run-time one
	}
	return string(b)
}

// Source is the compile unit for file: the dialect header, then the file.
func Source(file string) (string, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("kernels/gpu: %s: %w", file, err)
	}
	return Dialect() + "\n#line 1 \"" + file + "\"\n" + string(b), nil
}

// Files lists the embedded .cu files, sorted.
func Files() []string {
	ents, _ := fs.Glob(files, "*.cu")
	return ents
}

// HasEntry reports whether src defines an extern "C" kernel named name.
func HasEntry(src, name string) bool {
	for _, l := range strings.Split(src, "\n") {
		if strings.Contains(l, name+"(") && !strings.HasPrefix(strings.TrimSpace(l), "//") {
			return true
		}
	}
	return false
}
