package engine

// This file owns the LM head on a GPU: with a device in Options, the
// output matrix is uploaded once as stored (any type of the device table,
// devicetypes.go) and each HeadReduce uploads the hidden rows, runs the
// head's product and the pick and topk reductions there (kernels/gpu: the
// type's product, pick.cu, topk.cu, each checked against its CPU twin in
// hip's tests), and brings back only the per-row results. With tied embeddings the head reads the
// stack's copy of token_embd instead of uploading its own.

import (
	"encoding/binary"
	"fmt"
	"math"

	"plexbench/hip"
	"plexbench/kernels"
)

// deviceTopK is the most top ids topk.cu returns per row (TOPR_K, the
// CPU's bound for bases, scoring.MaxTopK); up to deviceTopKRegs
// (TOPK_K) topk_f32's one read of the row does it, above that
// topk_radix_f32.
const (
	deviceTopK     = 1024
	deviceTopKRegs = 32
)

// deviceHead is the LM head's device state.
type deviceHead struct {
	d    *hip.Device
	s    *hip.Stream
	mods []*hip.Module
	fn   map[string]*hip.Function // the product's kernels, pick_f32, topk_f32
	typ  kernels.Type
	v, e int
	tied bool // w is the stack's token_embd (tied embeddings)

	w, x, xq, logits hip.Buffer
	mx, arg, sum     hip.Buffer // (HeadRows) per-row max, argmax, Σexp
	tids, tvals      hip.Buffer // (HeadRows, deviceTopK)
	ids, picked      hip.Buffer // (HeadRows, nids), grown on demand
	nids             int
	args             hip.Args
	prod             productQueue // the head's product: h.queue, and the vendor BLAS when loaded
	stage, back      []byte       // upload and download staging, grown once
}

// newDeviceHead compiles the head's kernels for d and uploads out, or
// reads it from tied (out already on the device, owned by the stack) when
// that is not a zero Buffer; blas (nil: none) takes F16/BF16 products of
// blasMinRows rows or more.
func newDeviceHead(d *hip.Device, out *kernels.Matrix, tied hip.Buffer, blas *hip.BLAS) (_ *deviceHead, err error) {
	if !onDevice(out.Type) {
		return nil, fmt.Errorf("%w: the device head has no product for %v output weights", ErrUnsupported, out.Type)
	}
	h := &deviceHead{d: d, typ: out.Type, v: out.Rows, e: out.Cols}
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	if h.s, err = d.NewStream(); err != nil {
		return nil, err
	}
	h.prod = productQueue{launch: h.queue, args: &h.args, warp: d.Warp, blas: blas, stream: h.s}
	if h.fn, h.mods, err = compileEntries(d, append(productEntries(out.Type), "pick_f32", "topk_f32", "topk_radix_f32")); err != nil {
		return nil, err
	}
	return h, h.alloc(out.Data, tied)
}

// alloc uploads the weights (unless tied holds them) and allocates the
// per-call buffers.
func (h *deviceHead) alloc(weights []byte, tied hip.Buffer) error {
	h.tied = tied.Len() > 0
	bufs := []struct {
		b *hip.Buffer
		n int
	}{
		{&h.x, 4 * HeadRows * h.e}, {&h.logits, 4 * HeadRows * h.v},
		{&h.mx, 4 * HeadRows}, {&h.arg, 4 * HeadRows}, {&h.sum, 8 * HeadRows},
		{&h.tids, 4 * HeadRows * deviceTopK}, {&h.tvals, 4 * HeadRows * deviceTopK},
	}
	if n := actBytes(h.typ, h.e, h.prod.blas != nil); n > 0 {
		bufs = append(bufs, struct {
			b *hip.Buffer
			n int
		}{&h.xq, HeadRows * n})
	}
	for _, b := range bufs {
		var err error
		if *b.b, err = h.d.Alloc(b.n); err != nil {
			return err
		}
	}
	if h.tied {
		h.w = tied
		return nil
	}
	var err error
	if h.w, err = h.d.Alloc(len(weights)); err != nil {
		return err
	}
	if err := h.s.Upload(h.w, 0, weights); err != nil {
		return err
	}
	return h.s.Sync()
}

// close frees everything the head holds on the device.
func (h *deviceHead) close() {
	if h.tied {
		h.w = hip.Buffer{} // the stack's, freed there
	}
	for _, b := range []hip.Buffer{h.w, h.x, h.xq, h.logits, h.mx, h.arg, h.sum, h.tids, h.tvals, h.ids, h.picked} {
		if b.Len() > 0 {
			h.d.Free(b)
		}
	}
	for _, m := range h.mods {
		m.Unload()
	}
	if h.s != nil {
		h.s.Destroy()
	}
}

// reduce is HeadReduce on the device for n checked rows; every request's
// top-k must be at most deviceTopK.
func (h *deviceHead) reduce(hidden []float32, n int, reqs []RowRequest, out []RowResult) error {
	nids, k := 0, 0
	for _, q := range reqs[:n] {
		nids, k = max(nids, len(q.IDs)), max(k, q.TopK)
	}
	if err := h.growIDs(nids); err != nil {
		return err
	}
	if err := h.upload(hidden, n, reqs, nids); err != nil {
		return err
	}
	if err := h.launch(n, nids, k); err != nil {
		return err
	}
	return h.download(n, nids, k, reqs, out)
}

// growIDs makes room for nids requested ids per row.
func (h *deviceHead) growIDs(nids int) error {
	if nids <= h.nids {
		return nil
	}
	for _, b := range []hip.Buffer{h.ids, h.picked} {
		if b.Len() > 0 {
			h.d.Free(b)
		}
	}
	h.ids, h.picked, h.nids = hip.Buffer{}, hip.Buffer{}, 0
	var err error
	if h.ids, err = h.d.Alloc(4 * HeadRows * nids); err != nil {
		return err
	}
	if h.picked, err = h.d.Alloc(4 * HeadRows * nids); err != nil {
		return err
	}
	h.nids = nids
	return nil
}

// upload sends the hidden rows and each row's ids (padded with id 0 to
// nids; the padding's picks are not returned).
func (h *deviceHead) upload(hidden []float32, n int, reqs []RowRequest, nids int) error {
	if err := h.s.Upload(h.x, 0, kernels.BytesOf(hidden[:n*h.e])); err != nil {
		return err
	}
	if nids == 0 {
		return nil
	}
	h.stage = kernels.Grow(h.stage, 4*n*nids)
	clear(h.stage)
	for i, q := range reqs[:n] {
		for j, id := range q.IDs {
			binary.LittleEndian.PutUint32(h.stage[4*(i*nids+j):], uint32(id))
		}
	}
	return h.s.Upload(h.ids, 0, h.stage)
}

// launch queues the head's product and the two reductions.
func (h *deviceHead) launch(n, nids, k int) error {
	a := &h.args
	w := devMatrix{typ: h.typ, rows: h.v, cols: h.e, b: h.w}
	if err := h.prod.product(w, h.x, h.xq, h.logits, n); err != nil {
		return err
	}
	a.Reset()
	a.Ptr(h.logits, 0).I32(int32(h.v)).Ptr(h.ids, 0).I32(int32(nids)).Ptr(h.mx, 0).Ptr(h.arg, 0).Ptr(h.sum, 0).Ptr(h.picked, 0)
	if err := h.queue("pick_f32", hip.Dim3{X: n}, hip.Dim3{X: 256}); err != nil {
		return err
	}
	if k == 0 {
		return nil
	}
	a.Reset()
	a.Ptr(h.logits, 0).I32(int32(h.v)).I32(int32(k)).Ptr(h.tids, 0).Ptr(h.tvals, 0)
	if k <= deviceTopKRegs {
		return h.queue("topk_f32", hip.Dim3{X: n}, hip.Dim3{X: 128})
	}
	return h.queue("topk_radix_f32", hip.Dim3{X: n}, hip.Dim3{X: 256})
}

// queue launches kernel name with the head's args.
func (h *deviceHead) queue(name string, grid, block hip.Dim3) error {
	if err := h.s.Launch(h.fn[name], grid, block, 0, &h.args); err != nil {
		return errDevice(name, err)
	}
	return nil
}

// download brings back the per-row results into out, through one staging
// buffer grown once.
func (h *deviceHead) download(n, nids, k int, reqs []RowRequest, out []RowResult) error {
	sizes := [...]int{4 * n, 4 * n, 8 * n, 4 * n * nids, 4 * n * k, 4 * n * k}
	srcs := [...]hip.Buffer{h.mx, h.arg, h.sum, h.picked, h.tids, h.tvals}
	h.back = kernels.Grow(h.back, 20*n+8*n*k+4*n*nids)
	var parts [len(sizes)][]byte
	off := 0
	for i, size := range sizes {
		parts[i] = h.back[off : off+size]
		off += size
		if size == 0 {
			continue
		}
		if err := h.s.Download(parts[i], srcs[i], 0); err != nil {
			return err
		}
	}
	if err := h.s.Sync(); err != nil {
		return err
	}
	mx, arg, sum, picked, tids, tvals := parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]
	le := binary.LittleEndian
	for i, q := range reqs[:n] {
		o := &out[i]
		o.Max = math.Float32frombits(le.Uint32(mx[4*i:]))
		o.ArgMax = int32(le.Uint32(arg[4*i:]))
		o.SumExp = math.Float64frombits(le.Uint64(sum[8*i:]))
		o.Picked = kernels.Grow(o.Picked, len(q.IDs))
		for j := range q.IDs {
			o.Picked[j] = math.Float32frombits(le.Uint32(picked[4*(i*nids+j):]))
		}
		o.TopIDs = kernels.Grow(o.TopIDs, q.TopK)
		o.TopLogits = kernels.Grow(o.TopLogits, q.TopK)
		for j := range q.TopK {
			o.TopIDs[j] = int32(le.Uint32(tids[4*(i*k+j):]))
			o.TopLogits[j] = math.Float32frombits(le.Uint32(tvals[4*(i*k+j):]))
		}
	}
	return nil
}
