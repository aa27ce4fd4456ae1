package kernels

// This file owns the matrix multiply the engine calls (y = W·x for a batch
// of tokens, ggml CPU semantics), its float64 reference twin, and row
// access helpers for weight matrices.
//
// MatMul converts each token's activation to the weight's vec_dot_type
// once, then walks the weights in tiles: a chunk of rows × a run of
// tokens, each weight row reused from L1 across a few tokens while those
// tokens' activations stay in L2 across the chunk's rows. Float weights
// (F16, BF16, unaligned F32) are decoded once per row chunk into per-worker
// scratch.

import (
	"fmt"
	"unsafe"
)

// Matrix is a 2-D weight: Rows rows of Cols elements, row-major, raw GGUF
// bytes (ggml ne = {Cols, Rows}).
type Matrix struct {
	Type       Type
	Rows, Cols int
	Data       []byte
}

// RowBytes is the byte length of one row.
func (w *Matrix) RowBytes() int { return w.Type.RowBytes(w.Cols) }

// Row returns the raw bytes of row r.
func (w *Matrix) Row(r int) []byte {
	rb := w.RowBytes()
	return w.Data[r*rb : (r+1)*rb]
}

// Validate reports whether the matrix shape is consistent with its data.
func (w *Matrix) Validate() error {
	switch {
	case !w.Type.Known():
		return fmt.Errorf("matrix: %w: %v", ErrUnsupported, w.Type)
	case w.Rows < 0 || w.Cols <= 0:
		return fmt.Errorf("matrix %v: bad shape %d×%d", w.Type, w.Rows, w.Cols)
	case w.Cols%w.Type.BlockSize() != 0:
		return fmt.Errorf("matrix %v: %d columns is not a multiple of the block size %d", w.Type, w.Cols, w.Type.BlockSize())
	case len(w.Data) < w.Rows*w.RowBytes():
		return fmt.Errorf("matrix %v %d×%d: need %d bytes, have %d", w.Type, w.Rows, w.Cols, w.Rows*w.RowBytes(), len(w.Data))
	}
	return nil
}

// DequantizeRow expands row r of w into dst[:w.Cols] (e.g. a token
// embedding lookup). It panics on an out-of-range row or an unsupported
// type; callers check CanDequantize when loading.
func DequantizeRow(w *Matrix, r int, dst []float32) {
	if r < 0 || r >= w.Rows {
		panic(fmt.Sprintf("kernels: DequantizeRow: row %d out of range [0,%d)", r, w.Rows))
	}
	if err := Dequantize(w.Type, w.Row(r), dst[:w.Cols]); err != nil {
		panic("kernels: DequantizeRow: " + err.Error())
	}
}

// MatScratch holds MatMul's reusable buffers; the zero value is ready. One
// MatScratch must not be used by two MatMul calls at the same time.
type MatScratch struct {
	act  []byte    // nTok activation rows in the weights' vec_dot_type
	actF []float32 // nTok activation rows, rounded for F16/BF16 weights
	rows []float32 // per worker: one chunk of decoded float weight rows
	job  matJob
	// The pool callbacks are bound once to job so that calls do not
	// allocate closures.
	runTiles, runAct func(worker, lo, hi int)
	simd             simdScratch // KernelSet.MatMul's SIMD driver (simd_matmul.go)
}

// matJob is one MatMul call's parameters, read by the pool callbacks.
type matJob struct {
	w          *Matrix
	out, x     []float32
	nTok       int
	float      bool      // float weight path (F32/F16/BF16)
	xf         []float32 // float path: activations as float32
	view       bool      // float path: F32 weights read in place
	act        []byte    // quantized path: activations
	arb        int       // quantized path: activation row bytes
	dot        func(n int, w, a []byte) float32
	rowTile    int // rows per chunk
	tokTile    int // tokens per inner run
	tokChunks  int // token ranges per row chunk (parallelism for short matrices)
	rowsPerWkr int // floats of row scratch per worker
}

// MatMul computes out[tok*w.Rows + r] = Σ_i W[r][i]·x[tok*w.Cols + i] for
// tok in [0,nTok), with the semantics of ggml's x86 AVX-512 CPU build:
// activations are converted to VecDotType(w.Type) once per token and each
// output is the dot of a weight row with a converted activation row, in
// the order the path ggml takes for this shape uses (floatDot, blockDot). Work is split over p. scratch is reused
// across calls (nil allowed). It panics on inconsistent shapes or a weight
// type without a dot product (programmer errors; see Matrix.Validate and
// CanMatMul).
func MatMul(p *Pool, out []float32, w *Matrix, x []float32, nTok int, scratch *MatScratch) {
	if err := w.Validate(); err != nil {
		panic("kernels: MatMul: " + err.Error())
	}
	if nTok < 0 || len(x) < nTok*w.Cols || len(out) < nTok*w.Rows {
		panic(fmt.Sprintf("kernels: MatMul: %d tokens of %d×%d need x %d and out %d, have %d and %d",
			nTok, w.Rows, w.Cols, nTok*w.Cols, nTok*w.Rows, len(x), len(out)))
	}
	if !CanMatMul(w.Type) {
		panic(fmt.Sprintf("kernels: MatMul: no dot product for weight type %v", w.Type))
	}
	if nTok == 0 || w.Rows == 0 {
		return
	}
	s := scratch
	if s == nil {
		s = &MatScratch{}
	}
	if s.runTiles == nil {
		s.runTiles = func(worker, lo, hi int) { s.job.tiles(s, worker, lo, hi) }
		s.runAct = func(worker, lo, hi int) { s.job.convert(lo, hi) }
	}
	threads := p.Threads()
	j := &s.job
	*j = matJob{w: w, out: out, x: x, nTok: nTok}
	rb := w.RowBytes()
	switch w.Type {
	case F32, F16, BF16:
		j.float = true
		j.xf = x[:nTok*w.Cols]
		if w.Type != F32 {
			s.actF = Grow(s.actF, nTok*w.Cols)
			j.xf = s.actF
		}
		j.view = w.Type == F32 && uintptr(unsafe.Pointer(unsafe.SliceData(w.Data)))%4 == 0
		j.rowTile = clamp(16<<10/(4*w.Cols), 1, 32)
		j.tokTile = clamp(32<<10/(4*w.Cols), 1, 16)
		if !j.view {
			j.rowsPerWkr = j.rowTile * w.Cols
			s.rows = Grow(s.rows, threads*j.rowsPerWkr)
		}
	default:
		vt := VecDotType(w.Type)
		j.arb = vt.RowBytes(w.Cols)
		s.act = Grow(s.act, nTok*j.arb)
		j.act = s.act
		j.dot = blockDot(w)
		j.rowTile = clamp(16<<10/rb, 1, 32)
		j.tokTile = clamp(32<<10/j.arb, 1, 16)
	}
	if w.Type != F32 {
		p.For(nTok, 1, s.runAct)
	}
	rowChunks := (w.Rows + j.rowTile - 1) / j.rowTile
	j.tokChunks = 1
	if want := 4 * threads; threads > 1 && rowChunks < want {
		j.tokChunks = min(nTok, (want+rowChunks-1)/rowChunks)
	}
	p.For(rowChunks*j.tokChunks, 1, s.runTiles)
	s.job = matJob{} // drop references to caller memory
}

// convert turns activation rows [lo,hi) into the dot's input form.
func (j *matJob) convert(lo, hi int) {
	n := j.w.Cols
	for t := lo; t < hi; t++ {
		src := j.x[t*n : (t+1)*n]
		switch {
		case j.w.Type == F16:
			dst := j.xf[t*n : (t+1)*n]
			for i, v := range src {
				dst[i] = RoundF16(v)
			}
		case j.w.Type == BF16:
			dst := j.xf[t*n : (t+1)*n]
			for i, v := range src {
				dst[i] = RoundBF16(v)
			}
		default:
			QuantizeActivation(j.w.Type, src, j.act[t*j.arb:(t+1)*j.arb])
		}
	}
}

// tiles runs work units [lo,hi): unit u is row chunk u/tokChunks for the
// token range u%tokChunks.
func (j *matJob) tiles(s *MatScratch, worker, lo, hi int) {
	w := j.w
	n := w.Cols
	decoded := -1 // row chunk currently in this worker's scratch
	var rows []float32
	if j.float && !j.view {
		rows = s.rows[worker*j.rowsPerWkr : (worker+1)*j.rowsPerWkr]
	}
	for u := lo; u < hi; u++ {
		rc, tc := u/j.tokChunks, u%j.tokChunks
		r0, r1 := rc*j.rowTile, min((rc+1)*j.rowTile, w.Rows)
		t0, t1 := tc*j.nTok/j.tokChunks, (tc+1)*j.nTok/j.tokChunks
		if rows != nil && decoded != rc {
			descOf(w.Type).dequant(w.Data[r0*w.RowBytes():r1*w.RowBytes()], rows[:(r1-r0)*n])
			decoded = rc
		}
		for tb := t0; tb < t1; tb += j.tokTile {
			te := min(tb+j.tokTile, t1)
			for r := r0; r < r1; r++ {
				switch {
				case j.float:
					var wr []float32
					if rows != nil {
						wr = rows[(r-r0)*n : (r-r0+1)*n]
					} else {
						wr = f32View(w.Data[r*4*n : (r+1)*4*n])
					}
					for t := tb; t < te; t++ {
						j.out[t*w.Rows+r] = j.floatDot(wr, j.xf[t*n:(t+1)*n])
					}
				default:
					wr := w.Data[r*w.RowBytes() : (r+1)*w.RowBytes()]
					for t := tb; t < te; t++ {
						j.out[t*w.Rows+r] = j.dot(n, wr, j.act[t*j.arb:(t+1)*j.arb])
					}
				}
			}
		}
	}
}

// floatDot is one output of a float mul_mat in ggml's AVX-512 order:
// llamafile's 16-lane tinyBLAS when it takes the matrix (floatTiny),
// otherwise ggml_vec_dot_f16/f32. BF16 keeps the 8-lane model (the
// AVX512-BF16 tinyBLAS pairs products in VDPBF16PS, not modelled here).
func (j *matJob) floatDot(w, x []float32) float32 {
	switch {
	case j.w.Type == BF16:
		return dotFloat(w, x, true)
	case floatTiny(j.w, j.nTok):
		return DotTiny(w, x, j.w.Type != F32)
	default:
		return DotVec(w, x, j.w.Type != F32)
	}
}

// floatTiny reports whether llamafile's tinyBLAS takes an F32 or F16
// mul_mat of w with nTok tokens: a row length that is a multiple of 16,
// a row count that is a multiple of 4, at least two tokens.
func floatTiny(w *Matrix, nTok int) bool {
	return w.Cols%16 == 0 && w.Rows%4 == 0 && nTok >= 2
}

// blockDot is the block dot product of a quantized mul_mat with weights w:
// the type's vec_dot, except for Q4_0 matrices of a multiple of 8 rows,
// which ggml repacks at load for its x86 GEMM.
func blockDot(w *Matrix) func(n int, w, a []byte) float32 {
	if w.Type == Q4_0 && w.Rows%8 == 0 {
		return vecDotQ4_0Repack
	}
	return descOf(w.Type).vecDot
}

// f32View reinterprets 4-byte-aligned little-endian bytes as float32s
// (every supported target is little-endian).
func f32View(b []byte) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// MatMulRef is MatMul's plain reference: each weight row is dequantized and
// dotted with the unconverted f32 activation in float64.
func MatMulRef(out []float32, w *Matrix, x []float32, nTok int) {
	if err := w.Validate(); err != nil {
		panic("kernels: MatMulRef: " + err.Error())
	}
	row := make([]float32, w.Cols)
	for r := range w.Rows {
		DequantizeRow(w, r, row)
		for t := range nTok {
			xt := x[t*w.Cols : (t+1)*w.Cols]
			var s float64
			for i, v := range row {
				s += float64(v) * float64(xt[i])
			}
			out[t*w.Rows+r] = float32(s)
		}
	}
}

// Grow returns b[:n], or a new slice (contents not kept) when b is too
// small: the one scratch-resizing helper of the project.
func Grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }
