package engine

// This file owns turning GGUF tensors into weights: shape and type checks
// with errors that name the tensor, zero-copy matrices over the mapping,
// and small vectors (norms, biases) expanded to float32.

import (
	"fmt"
	"strconv"
	"strings"

	"plexbench/engine/gguf"
	"plexbench/kernels"
)

// loader looks tensors up and keeps the first error, so architecture
// loaders read as a list of weights. It accounts for every tensor of the
// file, as llama.cpp's loader does: the required ones it did not find
// (missing) and, once the architecture has loaded, those it never used
// (finish).
type loader struct {
	f    *gguf.File
	err  error
	used map[string]bool // tensors found, or accounted for without loading (skip)
	// missing is every required tensor not found, in lookup order;
	// missingFirst, that err is the first of them.
	missing      []string
	missingFirst bool
}

func newLoader(f *gguf.File) *loader { return &loader{f: f, used: map[string]bool{}} }

func (ld *loader) fail(err error) {
	if ld.err == nil {
		ld.err = err
	}
}

// tensor finds name and checks that its ggml dims are exactly want
// (trailing 1s allowed). It returns nil when absent or wrong.
func (ld *loader) tensor(name string, required bool, want ...int) *gguf.TensorInfo {
	t, ok := ld.f.Tensor(name)
	if !ok {
		if required {
			ld.missingFirst = ld.missingFirst || ld.err == nil
			ld.missing = append(ld.missing, name)
			ld.fail(fmt.Errorf("%w: tensor %q is missing", ErrModel, name))
		}
		return nil
	}
	ld.used[name] = true
	dims := t.Dims
	for len(dims) > len(want) && dims[len(dims)-1] == 1 {
		dims = dims[:len(dims)-1]
	}
	for len(want) > len(dims) && want[len(want)-1] == 1 {
		want = want[:len(want)-1]
	}
	same := len(dims) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = dims[i] == int64(want[i])
	}
	if !same {
		ld.fail(fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrModel, name, t.Dims, want))
		return nil
	}
	return t
}

// matrix loads a 2-D weight of ggml shape {cols, rows}: rows outputs of
// cols inputs, the layout MatMul reads in place.
func (ld *loader) matrix(name string, cols, rows int) *kernels.Matrix {
	return ld.mat(name, true, cols, rows)
}

// optMatrix is matrix for a tensor that may be absent (nil then).
func (ld *loader) optMatrix(name string, cols, rows int) *kernels.Matrix {
	return ld.mat(name, false, cols, rows)
}

func (ld *loader) mat(name string, required bool, cols, rows int) *kernels.Matrix {
	t := ld.tensor(name, required, cols, rows)
	if t == nil {
		return nil
	}
	if !ld.multipliable(name, t) {
		return nil
	}
	w := &kernels.Matrix{Type: t.Type, Rows: rows, Cols: cols, Data: ld.f.TensorData(t)}
	if err := w.Validate(); err != nil {
		ld.fail(fmt.Errorf("%w: tensor %q: %v", ErrModel, name, err))
		return nil
	}
	return w
}

// multipliable reports whether t's type has a matrix multiply, failing
// the load when it has none.
func (ld *loader) multipliable(name string, t *gguf.TensorInfo) bool {
	if kernels.CanMatMul(t.Type) {
		return true
	}
	ld.fail(fmt.Errorf("%w: tensor %q has type %v, which has no matrix multiply", ErrUnsupported, name, t.Type))
	return false
}

// experts loads a 3-D expert weight of ggml shape {cols, rows, n}: n
// matrices of rows outputs of cols inputs, one after another in the file.
func (ld *loader) experts(name string, cols, rows, n int) []*kernels.Matrix {
	t := ld.tensor(name, true, cols, rows, n)
	if t == nil {
		return nil
	}
	if !ld.multipliable(name, t) {
		return nil
	}
	data := ld.f.TensorData(t)
	size := len(data) / n
	ms := make([]*kernels.Matrix, n)
	for e := range ms {
		ms[e] = &kernels.Matrix{Type: t.Type, Rows: rows, Cols: cols, Data: data[e*size : (e+1)*size]}
		if err := ms[e].Validate(); err != nil {
			ld.fail(fmt.Errorf("%w: tensor %q: expert %d: %v", ErrModel, name, e, err))
			return nil
		}
	}
	return ms
}

// rows splits w into the row ranges [0, r0), [r0, r0+r1), … (views of the
// same data): a fused projection's parts.
func splitRows(w *kernels.Matrix, rows ...int) []*kernels.Matrix {
	if w == nil {
		return make([]*kernels.Matrix, len(rows))
	}
	rb, at := w.RowBytes(), 0
	out := make([]*kernels.Matrix, len(rows))
	for i, r := range rows {
		out[i] = &kernels.Matrix{Type: w.Type, Rows: r, Cols: w.Cols, Data: w.Data[at*rb : (at+r)*rb]}
		at += r
	}
	return out
}

// floats loads a small weight of any shape (norms, biases, conv taps) as
// float32, in the file's element order.
func (ld *loader) floats(name string, dims ...int) []float32 { return ld.load(name, true, dims...) }

func (ld *loader) load(name string, required bool, dims ...int) []float32 {
	n := 1
	for _, d := range dims {
		n *= d
	}
	t := ld.tensor(name, required, dims...)
	if t == nil {
		return nil
	}
	out := make([]float32, n)
	if err := kernels.Dequantize(t.Type, ld.f.TensorData(t), out); err != nil {
		ld.fail(fmt.Errorf("%w: tensor %q: %v", ErrModel, name, err))
		return nil
	}
	return out
}

// vector loads a 1-D weight (norm, bias) as float32.
func (ld *loader) vector(name string, n int) []float32 { return ld.vec(name, true, n) }

// optVector is vector for a tensor that may be absent (nil then).
func (ld *loader) optVector(name string, n int) []float32 { return ld.vec(name, false, n) }

func (ld *loader) vec(name string, required bool, n int) []float32 {
	return ld.load(name, required, n)
}

// qkv loads layer l's attention projections: separate attn_q/k/v with
// optional biases, or one fused attn_qkv whose output rows are [Q | K | V],
// split into three row ranges of the same mapping.
func (ld *loader) qkv(l, nEmbd, nq, nk int) (q, k, v *kernels.Matrix, bq, bk, bv []float32) {
	pre := fmt.Sprintf("blk.%d.", l)
	if fused := ld.optMatrix(pre+"attn_qkv.weight", nEmbd, nq+2*nk); fused != nil {
		parts := splitRows(fused, nq, nk, nk)
		q, k, v = parts[0], parts[1], parts[2]
		if b := ld.optVector(pre+"attn_qkv.bias", nq+2*nk); b != nil {
			bq, bk, bv = b[:nq], b[nq:nq+nk], b[nq+nk:]
		}
		return
	}
	q = ld.matrix(pre+"attn_q.weight", nEmbd, nq)
	k = ld.matrix(pre+"attn_k.weight", nEmbd, nk)
	v = ld.matrix(pre+"attn_v.weight", nEmbd, nk)
	bq = ld.optVector(pre+"attn_q.bias", nq)
	bk = ld.optVector(pre+"attn_k.bias", nk)
	bv = ld.optVector(pre+"attn_v.bias", nk)
	return
}

// skip accounts for a tensor the engine knows and does not run (when the
// file has it).
func (ld *loader) skip(name string) {
	if _, ok := ld.f.Tensor(name); ok {
		ld.used[name] = true
	}
}

// skipBlocks accounts for every tensor of blocks [from, to): the hybrids'
// MTP blocks, which never run.
func (ld *loader) skipBlocks(from, to int) {
	for i := range ld.f.Tensors {
		if b, ok := tensorBlock(ld.f.Tensors[i].Name); ok && b >= from && b < to {
			ld.used[ld.f.Tensors[i].Name] = true
		}
	}
}

// finish is the load's outcome once the architecture has looked up its
// tensors: the first failure, a missing tensor counted with every other
// one missing; else, as llama.cpp's "wrong number of tensors", the
// tensors the architecture did not use (blocks past block_count, a
// tensor of another architecture), named.
func (ld *loader) finish(hp *hparams) error {
	if ld.missingFirst {
		more := ""
		if n := len(ld.missing) - 1; n > 0 {
			more = fmt.Sprintf(", and %d more (%s)", n, someNames(ld.missing[1:]))
		}
		return fmt.Errorf("%w: tensor %q is missing%s%s", ErrModel, ld.missing[0], more, ld.blocksNote(hp))
	}
	if ld.err != nil {
		return ld.err
	}
	var unused []string
	for i := range ld.f.Tensors {
		if name := ld.f.Tensors[i].Name; !ld.used[name] {
			unused = append(unused, name)
		}
	}
	if len(unused) == 0 {
		return nil
	}
	n := len(ld.f.Tensors)
	return fmt.Errorf("%w: wrong number of tensors; expected %d, got %d: %d not used by %s%s: %s",
		ErrModel, n-len(unused), n, len(unused), hp.arch, ld.blocksNote(hp), someNames(unused))
}

// blocksNote says, when the file's blocks disagree with block_count, how
// many each says ("" when they agree).
func (ld *loader) blocksNote(hp *hparams) string {
	blocks := 0
	for i := range ld.f.Tensors {
		if b, ok := tensorBlock(ld.f.Tensors[i].Name); ok {
			blocks = max(blocks, b+1)
		}
	}
	if blocks == hp.nLayerAll {
		return ""
	}
	return fmt.Sprintf(" (%s.block_count is %d, the file has tensors for %d blocks)", hp.arch, hp.nLayerAll, blocks)
}

// tensorBlock is the block index of a "blk.N." tensor name.
func tensorBlock(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	b, err := strconv.Atoi(num)
	return b, err == nil && b >= 0
}

// someNames lists the first few of names, for a one-line error.
func someNames(names []string) string {
	const show = 4
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:show], ", ") + ", …"
}

// typeCounts is the file's tensor type histogram (type name → tensors).
func typeCounts(f *gguf.File) map[string]int {
	h := map[string]int{}
	for i := range f.Tensors {
		h[f.Tensors[i].Type.String()]++
	}
	return h
}
