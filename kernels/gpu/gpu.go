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

//go:embed *.h *.cu
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
		{File: "topk.cu", Entries: []string{"topk_f32", "topk_radix_f32"}, Twin: "kernels.TopK", Tolerance: "exact", Exact: true},
		{File: "matmul.cu", Entries: []string{"matmul_f32", "matmul_f16", "matmul_bf16", "to_f16", "to_bf16"}, Twin: "kernels.KernelSet.MatMul (ref); to_: kernels.RoundF16, RoundBF16 (the vec_dot_type)", Tolerance: "1e-5·Σ|w·x|; to_ exact"},
		{File: "add.cu", Entries: []string{"add_f32", "add_rows_f32"}, Twin: "the engine's residual and bias adds (f32)", Tolerance: "exact", Exact: true},
		{File: "attention.cu", Entries: []string{"attn_f32", "attn_f16", "attn_bf16", "attn_q8_0", "attn_fp_f32", "attn_fp_f16", "attn_fp_bf16", "attn_fp_q8_0"},
			Twin:      "the engine's dense attention (kernels.KernelSet.Softmax over the MatMul of the cached keys and values); attn_fp_: the same over FlashPrefill's kept blocks (the engine's FlashPrefill attention)",
			Tolerance: "relative to Σ p·|v|: 1e-5 (f32, q8_0 cache), 2e-3 (f16), 1.6e-2 (bf16)"},
		{File: "flashprefill.cu", Entries: []string{"fp_pool_f32", "fp_pool_f16", "fp_pool_bf16", "fp_pool_q8_0", "fp_select"},
			Twin: "kernels.FlashPrefill.Pool, .BlockScores and .SelectRow", Tolerance: "exact", Exact: true},
		{File: "quant.cu", Entries: append(append([]string{"quantize_q8_0", "quantize_q8_1", "quantize_q8_k"}, prefixed("mm_", quantTypes())...), prefixed("mmq_", quantTypes())...), Twin: "kernels.QuantizeActivation (Q8_0, Q8_1, Q8_K); kernels.KernelSet.MatMul per weight type (its vecDot); mmq_: mm_ to the bit", Tolerance: "quantize exact; product 1e-5·Σ|terms| (32-element types), 1e-6·Σ|terms| (K-quants)"},
		{File: "embed.cu", Entries: prefixed("get_rows_", append([]string{"f32", "f16", "bf16"}, quantTypes()...)), Twin: "kernels.DequantizeRow (the engine's token embedding)", Tolerance: "exact", Exact: true},
		{File: "gdn.cu", Entries: []string{"gdn_gates", "gdn_split_ba", "gdn_conv", "gdn_conv_state", "gdn_l2norm", "gdn_delta"},
			Twin:      "kernels.GDNGates, the engine's β|α split and conv state, kernels.ConvRow then SwiGLU(x, 1), kernels.L2Norm, kernels.DeltaRule",
			Tolerance: "delta, split, state and the conv's sums exact; gates and silu 1e-6 relative; l2norm 1 ulp"},
		{File: "gated.cu", Entries: []string{"gated_split", "gated_mul"}, Twin: "the engine's gated attention (qwen35.go: the q|gate split, out ·= kernels.Sigmoid(gate))", Tolerance: "split exact; gate 1e-6 relative"},
		{File: "moe.cu", Entries: []string{"moe_route", "moe_gather", "moe_combine", "moe_shared"},
			Twin:      "kernels.KernelSet.Softmax (softmaxTwin) then kernels.Route; the engine's MoE gather, combine and shared expert (moe.go)",
			Tolerance: "route, gather and combine exact; shared 1e-6 relative"},
	}
}

// quantTypes are the quantized weight types blocks.h decodes, by their
// lower-case ggml names: each has an mm_ and a get_rows_ entry.
func quantTypes() []string {
	return []string{"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "mxfp4", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_xs"}
}

// prefixed returns p + each of names.
func prefixed(p string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = p + n
	}
	return out
}

// Dialect is the shared header every source is compiled behind.
func Dialect() string {
	b, err := files.ReadFile("dialect.h")
	if err != nil {
		panic("kernels/gpu: dialect.h not embedded") // a build error, not a run-time one
	}
	return string(b)
}

// Source is the compile unit for file: the dialect header, then the file
// with each `#include "NAME.h"` line replaced by that embedded header
// (once per unit; nvrtc and hiprtc are given no include paths).
func Source(file string) (string, error) {
	body, err := inline(file, map[string]bool{})
	if err != nil {
		return "", err
	}
	return Dialect() + "\n" + body, nil
}

// inline is file's text behind a #line marker, its includes of embedded
// headers not yet in seen expanded in place.
func inline(file string, seen map[string]bool) (string, error) {
	b, err := files.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("kernels/gpu: %s: %w", file, err)
	}
	seen[file] = true
	var out strings.Builder
	fmt.Fprintf(&out, "#line 1 \"%s\"\n", file)
	for i, l := range strings.SplitAfter(string(b), "\n") {
		name, ok := includeOf(l)
		if !ok {
			out.WriteString(l)
			continue
		}
		if !seen[name] {
			h, err := inline(name, seen)
			if err != nil {
				return "", fmt.Errorf("kernels/gpu: %s:%d: %w", file, i+1, err)
			}
			out.WriteString(h)
		}
		fmt.Fprintf(&out, "\n#line %d \"%s\"\n", i+2, file)
	}
	return out.String(), nil
}

// includeOf returns NAME for a line `#include "NAME"`.
func includeOf(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "#include")
	rest = strings.TrimSpace(rest)
	if !ok || len(rest) < 2 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return "", false
	}
	return rest[1 : len(rest)-1], true
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
