package engine

// This file owns what the device runs for each weight type: the one table
// (deviceTypeOf) naming a type's activation quantizer, product and
// embedding lookup in kernels/gpu (quant.cu, matmul.cu, embed.cu), read by
// the stack's linear and embed, the head's product, canRunStack and the
// fallback report; the queueing of one product; and the compiling of the
// files that define a set of entries.

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
	rows  string // embed.cu's lookup of token_embd rows
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
	default:
		dt.quant = "quantize_" + strings.ToLower(kernels.VecDotType(t).String())
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
	if dt.quant == "" {
		return []string{dt.mm}
	}
	return []string{dt.quant, dt.mm}
}

// actBytes is the bytes one row of cols activations takes in xq for
// weights of type t (0 for float weights, which read f32 rows).
func actBytes(t kernels.Type, cols int) int {
	if dt, _ := deviceTypeOf(t); dt.quant == "" {
		return 0
	}
	return kernels.VecDotType(t).RowBytes(cols)
}

// launcher queues one kernel by entry name with the args already set.
type launcher func(name string, grid, block hip.Dim3) error

// queueProduct queues out = W·in for n rows of in through launch, a's
// arguments set for each kernel: for a quantized type in is quantized
// into xq first (one thread per activation block), then one warp of the
// device (warp lanes) computes each output; float types run the 16×16
// tiled product on in itself.
func queueProduct(launch launcher, a *hip.Args, warp int, w devMatrix, in, xq, out hip.Buffer, n int) error {
	dt, _ := deviceTypeOf(w.typ)
	if dt.quant == "" {
		a.Reset()
		a.Ptr(w.b, 0).Ptr(in, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
		return launch(dt.mm, hip.Dim3{X: (w.rows + 15) / 16, Y: (n + 15) / 16}, hip.Dim3{X: 16, Y: 16})
	}
	nb := n * w.cols / kernels.VecDotType(w.typ).BlockSize()
	a.Reset()
	a.Ptr(in, 0).Ptr(xq, 0).U64(uint64(nb))
	if err := launch(dt.quant, hip.Dim3{X: (nb + 255) / 256}, hip.Dim3{X: 256}); err != nil {
		return err
	}
	a.Reset()
	a.Ptr(w.b, 0).Ptr(xq, 0).Ptr(out, 0).I32(int32(w.rows)).I32(int32(w.cols)).I32(int32(n))
	return launch(dt.mm, hip.Dim3{X: w.rows, Y: n}, hip.Dim3{X: warp})
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
