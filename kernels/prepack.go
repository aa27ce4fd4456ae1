package kernels

// This file owns PackedMatrix: a weight matrix repacked once, whole, into
// the panel layout of one SIMD matmul variant, so that MatMul with it
// reads the panels in place instead of repacking each 16-row panel per
// call. It pays when a matrix is large and each call has few tokens (the
// LM head: 151936 rows, at most 128 tokens a call, so every panel's repack
// served only 128 tokens and the gathers from the mapped file stalled on
// memory). Workers claim a few consecutive panels at a time and prefetch
// the next one while the current one runs (prepack_amd64.s). The kernels
// read the same panel bytes either way, so the results are bit-identical
// to the unpacked call.

import "fmt"

// PackedMatrix is a Matrix repacked for one matmul variant. Its memory is
// Bytes(): for Q8_0 576 bytes per 16 rows × 32 columns (≈1.06× the Q8_0
// data, 175 MB for a 151936 × 1024 vocabulary); it is read only, so one
// PackedMatrix may serve concurrent calls.
type PackedMatrix struct {
	w        *Matrix
	k        *matKernel
	panelLen int    // bytes per 16-row panel
	data     []byte // panels in row order, the last one zero-padded
}

// Matrix is the matrix p was packed from (still read for its shape).
func (p *PackedMatrix) Matrix() *Matrix { return p.w }

// Bytes is the size of the packed panels.
func (p *PackedMatrix) Bytes() int { return len(p.data) }

// CanPrepack reports whether the set's matmul variant for weights of type
// t reads repacked quantized panels, the only layout Prepack makes: the
// float, "go" and "ref" variants read the weights in place or convert
// them to wider floats, which would cost more memory than it saves.
func (ks KernelSet) CanPrepack(t Type) bool { return ks.packKernel(t) != nil }

func (ks KernelSet) packKernel(t Type) *matKernel {
	if int(t) >= len(ks.table().mm) {
		return nil
	}
	impl := ks.table().mm[t]
	if impl == nil || impl.kind != implSIMD || impl.k.fam == famFloat {
		return nil
	}
	return impl.k
}

// PackedBytes is the memory Prepack would allocate for w, or 0 when the
// set's variant for w's type reads no panels (or w's shape is invalid),
// so a caller can weigh it before packing.
func (ks KernelSet) PackedBytes(w *Matrix) int {
	k := ks.packKernel(w.Type)
	if k == nil || w.Validate() != nil {
		return 0
	}
	return (w.Rows + panelRows - 1) / panelRows * packedPanelLen(k, w.Cols)
}

// packedPanelLen is the bytes of one 16-row panel of cols columns in k's
// layout.
func packedPanelLen(k *matKernel, cols int) int {
	if k.fam == famQ8 {
		return cols / qk * k.fmt.panelBlock()
	}
	return cols / qkK * k.layout.bytes
}

// Prepack repacks w for the set's matmul variant of its type, the panels
// split over pool. It returns an error for a matrix whose shape does not
// match its data or a type CanPrepack refuses (the caller then uses
// MatMul on w).
func (ks KernelSet) Prepack(pool *Pool, w *Matrix) (*PackedMatrix, error) {
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: Prepack: %w", err)
	}
	k := ks.packKernel(w.Type)
	if k == nil {
		return nil, fmt.Errorf("kernels: Prepack: the %s variant %q reads no repacked panels",
			MatMulOp(w.Type), ks.Variant(MatMulOp(w.Type)))
	}
	pm := &PackedMatrix{w: w, k: k, panelLen: packedPanelLen(k, w.Cols)}
	panels := (w.Rows + panelRows - 1) / panelRows
	pm.data = make([]byte, panels*pm.panelLen)
	pool.For(panels, 16, func(_, lo, hi int) {
		for ru := lo; ru < hi; ru++ {
			repackPanel(k, w, ru*panelRows, pm.panel(ru))
		}
	})
	return pm, nil
}

// panel is the packed panel of row unit ru.
func (p *PackedMatrix) panel(ru int) []byte {
	return p.data[ru*p.panelLen : (ru+1)*p.panelLen]
}

// MatMulPacked is ks.MatMul(pool, out, pm.Matrix(), x, nTok, scratch)
// with the panels read from pm, bit for bit the same result. A pm packed
// for another variant than the set's (another KernelSet) falls back to
// ks.MatMul.
func (ks KernelSet) MatMulPacked(pool *Pool, out []float32, pm *PackedMatrix, x []float32, nTok int, scratch *MatScratch) {
	w := pm.w
	if ks.packKernel(w.Type) != pm.k {
		ks.MatMul(pool, out, w, x, nTok, scratch)
		return
	}
	if nTok < 0 || len(x) < nTok*w.Cols || len(out) < nTok*w.Rows {
		panic(fmt.Sprintf("kernels: MatMulPacked: %d tokens of %d×%d need x %d and out %d, have %d and %d",
			nTok, w.Rows, w.Cols, nTok*w.Cols, nTok*w.Rows, len(x), len(out)))
	}
	if nTok == 0 || w.Rows == 0 {
		return
	}
	if scratch == nil {
		scratch = &MatScratch{}
	}
	s := &scratch.simd
	s.packed = pm
	matMulSIMD(pm.k, pool, out, w, x, nTok, s)
	s.packed = nil
}
