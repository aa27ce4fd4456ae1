package engine

// This file owns what the device runs for each weight type: the one table
// (deviceTypeOf) naming a type's activation quantizer, product and
// embedding lookup in kernels/gpu (quant.cu, matmul.cu, embed.cu), read by
// the stack's linear and embed, the head's product, canRunStack and the
// fallback report; the queueing of one product, on our own kernels or, for
// F16/BF16 weights at prefill sizes, the vendor BLAS when one is loaded;
// and the compiling of the files that define a set of entries.

import (
	"fmt"
	"slices"
	"strings"

	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// deviceType is one weight type's device kernels, by entry name.
type deviceType struct {
	quant string // quant.cu's quantizer to the type's vec_dot type; "" for float weights (f32 activations)
	mm    string // the product: matmul.cu's tiled one for floats, quant.cu's block dots otherwise
	mmq   string // quant.cu's tiled product for prefill-sized passes (gpu.QuantMatMul); "" for floats
	rows  string // embed.cu's lookup of token_embd rows
	// half is matmul.cu's rounding of f32 activations to F16 or BF16 (the
	// vec_dot type), the operand the vendor BLAS takes; "" for other types.
	half string
}

// deviceWeightTypes are the weight types the device multiplies by and
// looks embedding rows up in.
func deviceWeightTypes() []kernels.Type {
	return []kernels.Type{kernels.F32, kernels.F16, kernels.BF16,
		kernels.Q4_0, kernels.Q4_1, kernels.Q5_0, kernels.Q5_1, kernels.Q8_0, kernels.IQ4_NL, kernels.MXFP4,
		kernels.Q2_K, kernels.Q3_K, kernels.Q4_K, kernels.Q5_K, kernels.Q6_K, kernels.IQ4_XS}
}

// deviceTypeOf is the table: t's device kernels, named after t and its
// vec_dot type; ok is false for a type the device has no product for.
func deviceTypeOf(t kernels.Type) (dt deviceType, ok bool) {
	if !slices.Contains(deviceWeightTypes(), t) {
		return deviceType{}, false
	}
	name := strings.ToLower(t.String())
	dt = deviceType{mm: "mm_" + name, rows: "get_rows_" + name}
	switch t {
	case kernels.F32, kernels.F16, kernels.BF16:
		dt.mm = "matmul_" + name
		if t != kernels.F32 {
			dt.half = "to_" + name
		}
	default:
		dt.quant = "quantize_" + strings.ToLower(kernels.VecDotType(t).String())
		dt.mmq = "mmq_" + name
	}
	return dt, true
}

// deviceTypeEntries are every entry of the table.
func deviceTypeEntries() []string {
	var names []string
	for _, t := range deviceWeightTypes() {
		dt, _ := deviceTypeOf(t)
		names = append(names, dt.mm, dt.rows)
		if dt.quant != "" && !slices.Contains(names, dt.quant) {
			names = append(names, dt.quant)
		}
		if dt.mmq != "" {
			names = append(names, dt.mmq)
		}
		if dt.half != "" {
			names = append(names, dt.half)
		}
	}
	return names
}

// onDevice reports whether the device has a product for t.
func onDevice(t kernels.Type) bool {
	_, ok := deviceTypeOf(t)
	return ok
}

// productEntries are the entries a product of t launches.
func productEntries(t kernels.Type) []string {
	dt, _ := deviceTypeOf(t)
	switch {
	case dt.half != "":
		return []string{dt.mm, dt.half}
	case dt.quant == "":
		return []string{dt.mm}
	}
	return []string{dt.quant, dt.mm, dt.mmq}
}

// actBytes is the bytes one row of cols activations takes in xq for
// weights of type t: the quantized row, or with a vendor BLAS (blas) the
// F16/BF16 row; 0 when the product reads the f32 rows themselves.
func actBytes(t kernels.Type, cols int, blas bool) int {
	dt, _ := deviceTypeOf(t)
	switch {
	case dt.half != "" && blas:
		return 2 * cols
	case dt.quant == "":
		return 0
	}
	return kernels.VecDotType(t).RowBytes(cols)
}

// blasType reports whether products of t may take a vendor BLAS.
func blasType(t kernels.Type) bool {
	dt, _ := deviceTypeOf(t)
	return dt.half != ""
}

// blasMinRows is the fewest activation rows a product hands to the vendor
// BLAS. Below it matmul.cu's tiles (16 rows by 64 tokens) read W once
// already (one tile covers every activation row): the product is a
// matrix-vector one, bound by W's bandwidth, where a vendor GEMM gains
// nothing and costs a conversion launch. From 16 rows on, our kernel has no
// tensor cores, which the vendor's GEMM uses: prefill passes (ubatch rows)
// and the head's 128-row chunks take it, the decode-sized products (an MoE
// expert's few rows) stay on our kernel.
const blasMinRows = 16

// productQueue queues products: the launcher and the args it reads, the
// device's warp, and the vendor BLAS (nil: none, or disabled) with the
// stream its GEMMs go on.
type productQueue struct {
	launch launcher
	args   *hip.Args
	warp   int
	blas   *hip.BLAS
	stream *hip.Stream
}

// blasOp names the product of t on the vendor BLAS b, for the report.
func blasOp(t kernels.Type, b *hip.BLAS) string { return kernels.MatMulOp(t) + " (" + b.Name + ")" }

// launcher queues one kernel by entry name with the args already set.
type launcher func(name string, grid, block hip.Dim3) error

// product queues out = W·in for n rows of in: for a quantized type in is
// quantized into xq first (one thread per activation block), then the
// tiled product (mmq_: each weight block read once per 64 tokens) or, for
// decode sizes, the plain one (mm_: one warp per output), which give the
// same bits; float types run the 16-row by 64-token tiled product on in
// itself, or, for F16/BF16 weights and at least
// blasMinRows rows with a vendor BLAS, its GEMM (blasProduct).
func (q *productQueue) product(w devMatrix, in, xq, out hip.Buffer, n int) error {
	dt, _ := deviceTypeOf(w.typ)
	a := q.args
	if dt.half != "" && q.blas != nil && n >= blasMinRows {
		return q.blasProduct(dt, w, in, xq, out, n)
	}
	if dt.quant == "" {
		a.Reset()
		a.Ptr(w.b, 0).Ptr(in, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
		g := gpu.MatMul(w.rows, n)
		return q.launch(dt.mm, hip.Dim3(g.Grid), hip.Dim3(g.Block))
	}
	nb := n * w.cols / kernels.VecDotType(w.typ).BlockSize()
	a.Reset()
	a.Ptr(in, 0).Ptr(xq, 0).U64(uint64(nb))
	if err := q.launch(dt.quant, hip.Dim3{X: (nb + 255) / 256}, hip.Dim3{X: 256}); err != nil {
		return err
	}
	a.Reset()
	a.Ptr(w.b, 0).Ptr(xq, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
	g, prefix := gpu.QuantMatMul(w.rows, n, q.warp)
	name := dt.mmq // the tiled product; the plain one (to the bit the same) for decode sizes
	if prefix == "mm_" {
		name = dt.mm
	}
	return q.launch(name, hip.Dim3(g.Grid), hip.Dim3(g.Block))
}

// blasProduct is product on the vendor BLAS. The activations are rounded
// to the weight's type first (dt.half into xq), as our own kernel and the
// CPU round them (ggml's vec_dot_type for F16 and BF16 weights); the
// products of two F16 or two BF16 values are exact in f32, so only the
// order of the f32 sums differs from our kernel's.
//
// Layout. The GGUF stores W (N = w.rows outputs by K = w.cols inputs)
// row-major: output r's K weights are contiguous, W[r·K + k]. The vendor
// BLAS reads every matrix column-major, so those bytes are Wᵀ, a K×N
// matrix with leading dimension K. Likewise the activations x (n rows of
// K, row-major) are the column-major K×n matrix xᵀ (ld K), and the output
// y (n rows of N, row-major) is the column-major N×n yᵀ (ld N). y = x·Wᵀ
// is yᵀ = W·xᵀ: C = op(A)·op(B) with m = N, n = n, k = K, A the stored Wᵀ
// transposed back (Trans, lda K), B the stored xᵀ as it is (NoTrans, ldb
// K), C = yᵀ (ldc N). ggml's cuBLAS path makes the same call.
func (q *productQueue) blasProduct(dt deviceType, w devMatrix, in, xq, out hip.Buffer, n int) error {
	nk := n * w.cols
	a := q.args
	a.Reset()
	a.Ptr(in, 0).Ptr(xq, 0).U64(uint64(nk))
	if err := q.launch(dt.half, hip.Dim3{X: (nk + 255) / 256}, hip.Dim3{X: 256}); err != nil {
		return err
	}
	bt := hip.BLASF16
	if w.typ == kernels.BF16 {
		bt = hip.BLASBF16
	}
	if err := q.blas.GemmEx(q.stream, hip.Trans, hip.NoTrans, w.rows, n, w.cols, w.b, bt, w.cols, xq, bt, w.cols, out, w.rows); err != nil {
		return errDevice(blasOp(w.typ, q.blas), err)
	}
	return nil
}

// compileEntries compiles on d each kernels/gpu file that defines one of
// names (found in the manifest), once per file, and returns the entries'
// functions and the modules.
func compileEntries(d *hip.Device, names []string) (map[string]*hip.Function, []*hip.Module, error) {
	fn := map[string]*hip.Function{}
	var mods []*hip.Module
	for _, k := range gpu.Manifest() {
		var want []string
		for _, e := range k.Entries {
			if slices.Contains(names, e) && fn[e] == nil {
				want = append(want, e)
			}
		}
		if len(want) == 0 {
			continue
		}
		mod, err := compileFile(d, k.File)
		if err != nil {
			return fn, mods, err
		}
		mods = append(mods, mod)
		for _, e := range want {
			if fn[e], err = mod.Function(e); err != nil {
				return fn, mods, err
			}
		}
	}
	for _, e := range names {
		if fn[e] == nil {
			return fn, mods, fmt.Errorf("%w: no device kernel %s in kernels/gpu", ErrUnsupported, e)
		}
	}
	return fn, mods, nil
}

// compileFile compiles one kernels/gpu file on d.
func compileFile(d *hip.Device, file string) (*hip.Module, error) {
	src, err := gpu.Source(file)
	if err != nil {
		return nil, err
	}
	return d.Compile(hip.Program{Name: file, Source: src})
}
