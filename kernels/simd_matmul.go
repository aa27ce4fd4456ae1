package kernels

// This file owns the tiled, threaded matmul driver around the panel and
// float-tile kernels (panel.go, simd_amd64.s): activation conversion once
// per call, then work units of (16-row panel × token range) handed out
// from an atomic counter to the pool's workers, each repacking its panel
// once into its own scratch and sweeping the tokens in kernel-sized
// groups; with a PackedMatrix (prepack.go) the panels are read in place
// instead. Nothing is allocated per call once the scratch has grown.

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

type matFamily uint8

const (
	famQ8    matFamily = iota + 1 // 32-element blocks × Q8_0 activations
	famK                          // 256-element super-blocks × Q8_K activations
	famFloat                      // F32/F16/BF16 rows × f32 activations
)

// matKernel is one SIMD implementation of MatMul for one weight type.
type matKernel struct {
	fam    matFamily
	tokens int          // famQ8/famK: tokens per kernel call (≤ 8)
	q      func(*qTile) // famQ8/famK kernel
	vnni   bool         // q uses AVX-512 VNNI (else an avx512 kernel needs F/BW/VL/DQ)
	fmt    q8Format     // famQ8
	layout kLayout      // famK
	// famQ8/famK: the vector repack of full panels for this CPU level
	// (repackAVX512 with the AVX-512 gathers, repackAVX2), set by the
	// registry when it builds the kernel; nil, or false from it, leaves
	// the panel to the Go repacks.
	repack func(w *Matrix, r0 int, f q8Format, dst []byte) bool
	// famFloat: the outer-product panel kernels for 12, 4 and 1 tokens,
	// whose results do not depend on the token count (fpRepack: the vector
	// repack of full panels; false leaves a panel to repackFloat).
	fp       [3]func(*fpTile)
	fpRepack func(w *Matrix, r0 int, dst []float32) bool
	// Activation converters: one row x into dst.
	actQ8  func(x []float32, dst []byte, bias int32)
	actQ8K func(x []float32, dst []byte)
	round  func(wt Type, x, dst []float32) // F16/BF16 rounding of activations
}

// simdScratch is the driver's reusable state; one per MatMul caller.
type simdScratch struct {
	act     []byte        // quantized activations, nTok rows
	packed  *PackedMatrix // set by MatMulPacked for one call: panels read in place
	actF    []float32     // rounded float activations
	workers []*simdWorker
	next    atomic.Int64
	job     simdJob
	run     func(worker, lo, hi int)
	conv    func(worker, lo, hi int)
}

// simdWorker is one worker's state. The kernel arguments live here, not on
// the stack, because kernels are called through function values and would
// make stack arguments escape (an allocation per call).
type simdWorker struct {
	panel []byte                // one repacked panel
	tile  [8][panelRows]float32 // results of partial panels and padding tokens
	qt    qTile
	// The float panel path's panel ([K][32]), results of partial panels
	// and padding tokens, and kernel argument.
	fpanel []float32
	ftile  [fpToks][fpRows]float32
	fpt    fpTile
}

type simdJob struct {
	k        *matKernel
	w        *Matrix
	out, x   []float32
	nTok     int
	arb      int  // activation row bytes (quantized) or floats (float)
	float    bool // famFloat: the outer-product panel path
	units    int
	tokParts int
	panelLen int
}

// matMulSIMD computes MatMul's result with kernel k (shapes already
// checked by the caller).
func matMulSIMD(k *matKernel, p *Pool, out []float32, w *Matrix, x []float32, nTok int, s *simdScratch) {
	if s.run == nil {
		s.run = func(worker, _, _ int) { s.job.work(s, worker) }
		s.conv = func(_, lo, hi int) { s.job.convert(s, lo, hi) }
	}
	threads := p.Threads()
	j := &s.job
	*j = simdJob{k: k, w: w, out: out, x: x, nTok: nTok}
	var rowUnits int
	switch k.fam {
	case famQ8:
		j.arb = w.Cols / qk * q8ActBlock
		j.panelLen = w.Cols / qk * k.fmt.panelBlock()
		rowUnits = (w.Rows + panelRows - 1) / panelRows
	case famK:
		j.arb = w.Cols / qkK * q8kBlockBytes
		j.panelLen = w.Cols / qkK * k.layout.bytes
		rowUnits = (w.Rows + panelRows - 1) / panelRows
	case famFloat:
		j.arb, j.float = w.Cols, true
		rowUnits = (w.Rows + fpRows - 1) / fpRows
	}
	if j.float {
		// Whole groups of fpToks rows, the padding rows zero, so a group
		// never reads past the buffer.
		pad := (nTok + fpToks - 1) / fpToks * fpToks
		s.actF = Grow(s.actF, pad*w.Cols)
		clear(s.actF[nTok*w.Cols:])
	} else {
		s.act = Grow(s.act, nTok*j.arb)
	}
	for len(s.workers) < threads {
		s.workers = append(s.workers, &simdWorker{})
	}
	for _, wk := range s.workers[:threads] {
		switch {
		case j.float:
			wk.fpanel = Grow(wk.fpanel, w.Cols*fpRows)
		case s.packed == nil:
			wk.panel = Grow(wk.panel, j.panelLen)
		}
	}
	p.For(nTok, 1, s.conv)
	// Split tokens too when there are too few row units to keep every
	// worker busy to the end.
	j.tokParts = 1
	if want := 4 * threads; threads > 1 && rowUnits < want {
		j.tokParts = min((want+rowUnits-1)/rowUnits, max(1, nTok/8))
		if j.float {
			j.tokParts = min(j.tokParts, max(1, nTok/fpToks))
		}
	}
	j.units = rowUnits * j.tokParts
	s.next.Store(0)
	p.For(threads, 1, s.run)
	s.job = simdJob{}
}

func (j *simdJob) convert(s *simdScratch, lo, hi int) {
	n := j.w.Cols
	for t := lo; t < hi; t++ {
		x := j.x[t*n : (t+1)*n]
		switch j.k.fam {
		case famQ8:
			j.k.actQ8(x, s.act[t*j.arb:(t+1)*j.arb], j.k.fmt.bias)
		case famK:
			j.k.actQ8K(x, s.act[t*j.arb:(t+1)*j.arb])
		case famFloat:
			if j.w.Type == F32 {
				copy(s.actF[t*n:(t+1)*n], x)
			} else {
				j.k.round(j.w.Type, x, s.actF[t*n:(t+1)*n])
			}
		}
	}
}

// work takes units from the shared counter until none are left.
func (j *simdJob) work(s *simdScratch, worker int) {
	if s.packed != nil {
		j.workPacked(s, worker)
		return
	}
	cur := -1 // row unit whose panel is in this worker's scratch
	for {
		u := int(s.next.Add(1) - 1)
		if u >= j.units {
			return
		}
		ru, tp := u/j.tokParts, u%j.tokParts
		t0, t1 := tp*j.nTok/j.tokParts, (tp+1)*j.nTok/j.tokParts
		if j.float {
			// Token parts start on group boundaries.
			t0 = t0 / fpToks * fpToks
			if tp+1 < j.tokParts {
				t1 = t1 / fpToks * fpToks
			}
			if ru != cur {
				if j.k.fpRepack == nil || !j.k.fpRepack(j.w, ru*fpRows, s.workers[worker].fpanel) {
					repackFloat(j.w, ru*fpRows, s.workers[worker].fpanel)
				}
				cur = ru
			}
			j.floatPanelUnit(s, worker, ru*fpRows, t0, t1)
			continue
		}
		panel := s.workers[worker].panel
		if ru != cur {
			repackPanel(j.k, j.w, ru*panelRows, panel)
			cur = ru
		}
		j.panelUnit(s, worker, panel, nil, ru*panelRows, t0, t1)
	}
}

// packChunk is how many consecutive units a worker claims at once on the
// prepacked path, so that it knows the next panel it reads and can
// prefetch it while the current one runs.
const packChunk = 8

// workPacked is work with the panels read from s.packed.
func (j *simdJob) workPacked(s *simdScratch, worker int) {
	chunk := max(1, min(packChunk, j.units/(8*len(s.workers))))
	for {
		c := int(s.next.Add(1)-1) * chunk
		if c >= j.units {
			return
		}
		end := min(c+chunk, j.units)
		for u := c; u < end; u++ {
			ru, tp := u/j.tokParts, u%j.tokParts
			t0, t1 := tp*j.nTok/j.tokParts, (tp+1)*j.nTok/j.tokParts
			var next []byte
			if nru := (u + 1) / j.tokParts; u+1 < end && nru != ru {
				next = s.packed.panel(nru)
			}
			j.panelUnit(s, worker, s.packed.panel(ru), next, ru*panelRows, t0, t1)
		}
	}
}

// repackPanel writes the quantized panel of rows [r0, r0+16) of w in
// kernel k's layout into dst.
func repackPanel(k *matKernel, w *Matrix, r0 int, dst []byte) {
	switch {
	case k.repack != nil && k.repack(w, r0, k.fmt, dst):
	case k.fmt.min:
		repackQ8Min(w, r0, dst)
	case k.fam == famQ8:
		repackQ8(w, r0, k.fmt, dst)
	default:
		repackK(w, r0, k.layout, dst)
	}
}

// panelUnit runs the quantized kernel for the panel of rows [r0, r0+16)
// over tokens [t0, t1), prefetching next (if any) a slice per kernel call.
func (j *simdJob) panelUnit(s *simdScratch, worker int, panel, next []byte, r0, t0, t1 int) {
	k, w := j.k, j.w
	wk := s.workers[worker]
	tile := &wk.tile
	rows := min(panelRows, w.Rows-r0)
	qt := &wk.qt
	qt.w = unsafe.Pointer(unsafe.SliceData(panel))
	qt.nb = w.Cols / w.Type.BlockSize()
	qt.shift = k.layout.shift
	var pfStep int
	if len(next) > 0 {
		groups := (t1 - t0 + k.tokens - 1) / k.tokens
		pfStep = (len(next)/groups + 63) &^ 63
	}
	pf := 0
	for tb := t0; tb < t1; tb += k.tokens {
		if pf < len(next) {
			prefetchLines(&next[pf], min(pfStep, len(next)-pf))
			pf += pfStep
		}
		nt := min(k.tokens, t1-tb)
		for i := range k.tokens {
			t := tb + min(i, nt-1)
			qt.a[i] = unsafe.Pointer(&s.act[t*j.arb])
			if i < nt && rows == panelRows {
				qt.out[i] = unsafe.Pointer(&j.out[t*w.Rows+r0])
			} else {
				qt.out[i] = unsafe.Pointer(&tile[i])
			}
		}
		k.q(qt)
		if rows < panelRows {
			for i := range nt {
				copy(j.out[(tb+i)*w.Rows+r0:(tb+i)*w.Rows+r0+rows], tile[i][:rows])
			}
		}
	}
}

// floatPanelUnit runs the float panel kernel for the panel at row r0 over
// tokens [t0, t1) in groups of fpToks.
func (j *simdJob) floatPanelUnit(s *simdScratch, worker, r0, t0, t1 int) {
	w := j.w
	n := w.Cols
	wk := s.workers[worker]
	rows := min(fpRows, w.Rows-r0)
	ft := &wk.fpt
	ft.w = unsafe.Pointer(unsafe.SliceData(wk.fpanel))
	ft.stride = 4 * n
	ft.n = n
	for tb := t0; tb < t1; {
		// The narrowest kernel that takes the remaining tokens at once;
		// activation rows past t1 exist (zero padding or later tokens) and
		// their results go to scratch.
		nt, kern, width := t1-tb, j.k.fp[0], fpToks
		switch {
		case nt == 1:
			kern, width = j.k.fp[2], 1
		case nt <= 4:
			kern, width = j.k.fp[1], 4
		}
		nt = min(nt, width)
		ft.a = unsafe.Pointer(&s.actF[tb*n])
		for i := range width {
			if i < nt && rows == fpRows {
				ft.out[i] = unsafe.Pointer(&j.out[(tb+i)*w.Rows+r0])
			} else {
				ft.out[i] = unsafe.Pointer(&wk.ftile[i])
			}
		}
		kern(ft)
		if rows < fpRows {
			for i := range nt {
				copy(j.out[(tb+i)*w.Rows+r0:(tb+i)*w.Rows+r0+rows], wk.ftile[i][:rows])
			}
		}
		tb += nt
	}
}

// roundActGo rounds activations to the weights' 16-bit float format.
func roundActGo(wt Type, x, dst []float32) {
	switch wt {
	case F16:
		for i, v := range x {
			dst[i] = RoundF16(v)
		}
	case BF16:
		for i, v := range x {
			dst[i] = RoundBF16(v)
		}
	default:
		panic(fmt.Sprintf("kernels: roundActGo: %v", wt))
	}
}
