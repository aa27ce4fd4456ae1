package engine

// This file owns the layer stack on a GPU for the dense-attention
// architectures (llama, qwen2, qwen3): every block weight uploaded once as
// stored (any type of the device table, devicetypes.go), the KV cache on
// the device (f32, f16, bf16 or q8_0), and each pass's blocks run there
// with the kernels of kernels/gpu (rmsnorm, the weight types' products,
// add, rope, kvstore, attention, swiglu), from the token embedding
// (embed.cu; for a token_embd type outside the table the CPU embeds and
// the rows go up) to the output norm: a pass's token ids go up, its
// output-normed rows come back (hidden-sized, never vocabulary-sized) and
// the head (devicehead.go) takes them up again. The blocks themselves are
// a devLayers: the dense ones here, the hybrids' in devicehybrid.go.
// FlashPrefill's prefill attention runs there too (deviceflashprefill.go).
// Any model this cannot run (a weight type or KV cache type outside the
// table) keeps its layers on the CPU.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// denseBlock is one pre-norm block of GQA attention and a SwiGLU FFN, as
// llama, qwen2 and qwen3 store it; biases and the q/k head norms may be
// nil.
type denseBlock struct {
	attnNorm, ffnNorm                 []float32
	wq, wk, wv, wo, gate, up, down    *kernels.Matrix
	bq, bk, bv, bo, bGate, bUp, bDown []float32
	qNorm, kNorm                      []float32
}

// denseStack is implemented by the layer stacks made of dense blocks.
type denseStack interface {
	blocks() []denseBlock
}

func (m *llama) blocks() []denseBlock {
	bs := make([]denseBlock, len(m.layers))
	for i, L := range m.layers {
		bs[i] = denseBlock{attnNorm: L.attnNorm, ffnNorm: L.ffnNorm, wq: L.wq, wk: L.wk, wv: L.wv, wo: L.wo,
			gate: L.gate, up: L.up, down: L.down, bq: L.bq, bk: L.bk, bv: L.bv, bo: L.bo, bGate: L.bGate, bUp: L.bUp, bDown: L.bDown}
	}
	return bs
}

func (m *qwen2) blocks() []denseBlock {
	bs := make([]denseBlock, len(m.layers))
	for i, L := range m.layers {
		bs[i] = denseBlock{attnNorm: L.attnNorm, ffnNorm: L.ffnNorm, wq: L.wq, wk: L.wk, wv: L.wv, wo: L.wo,
			gate: L.gate, up: L.up, down: L.down, bq: L.bq, bk: L.bk, bv: L.bv}
	}
	return bs
}

func (m *qwen3) blocks() []denseBlock {
	bs := make([]denseBlock, len(m.layers))
	for i, L := range m.layers {
		bs[i] = denseBlock{attnNorm: L.attnNorm, ffnNorm: L.ffnNorm, wq: L.wq, wk: L.wk, wv: L.wv, wo: L.wo,
			gate: L.gate, up: L.up, down: L.down, bq: L.bq, bk: L.bk, bv: L.bv, qNorm: L.qNorm, kNorm: L.kNorm}
	}
	return bs
}

// devMatrix is a weight on the device.
type devMatrix struct {
	typ        kernels.Type
	rows, cols int
	b          hip.Buffer
}

// devBlock is a denseBlock's weights on the device; a zero Buffer is an
// absent bias or norm.
type devBlock struct {
	attnNorm, ffnNorm, qNorm, kNorm   hip.Buffer
	wq, wk, wv, wo, gate, up, down    devMatrix
	bq, bk, bv, bo, bGate, bUp, bDown hip.Buffer
	k, v                              hip.Buffer // the layer's KV cache, (nkv, cap, hd)
}

// devLayers is a layer stack on the device: the dense blocks
// (denseLayers) or the hybrids' (hybridLayers, devicehybrid.go). The
// device stack owns the pass's buffers and the ops; a devLayers owns its
// blocks' weights and runs them in order.
type devLayers interface {
	// upload puts the blocks' weights, caches and states on st's device.
	upload(st *deviceStack) error
	// forward runs the pass's blocks over st.x.
	forward(st *deviceStack, p *pass)
	// ops names what runs on the device, for the report.
	ops() []string
}

// layersOnDevice is m's layer stack as the device runs it, and the block
// matrices its linear layers take (nil ones absent); ok is false for a
// stack with no device path.
func layersOnDevice(m *Model) (_ devLayers, ws []*kernels.Matrix, ok bool) {
	switch ls := m.layers.(type) {
	case denseStack:
		d := &denseLayers{src: ls.blocks()}
		for _, b := range d.src {
			ws = append(ws, b.wq, b.wk, b.wv, b.wo, b.gate, b.up, b.down)
		}
		return d, ws, true
	case *qwen35:
		return &hybridLayers{src: ls}, ls.matrices(), true
	}
	return nil, nil, false
}

// denseLayers are llama's, qwen2's and qwen3's blocks on the device.
type denseLayers struct {
	src    []denseBlock
	blocks []devBlock
}

func (d *denseLayers) ops() []string { return deviceStackOps }

func (d *denseLayers) upload(st *deviceStack) error {
	d.blocks = make([]devBlock, len(d.src))
	for l := range d.src {
		if err := st.upload(l, &d.blocks[l], &d.src[l]); err != nil {
			return err
		}
	}
	return nil
}

func (d *denseLayers) forward(st *deviceStack, p *pass) {
	for l := range d.blocks {
		if p.pos0 == 0 {
			p.attn.fp.heads += int64(st.m.hp.nHead[l]) // for the block counts, as the CPU's attention counts them
		}
		st.block(p, l, &d.blocks[l])
	}
}

// deviceStack runs a layer stack's passes on the device.
type deviceStack struct {
	m     *Model
	d     *hip.Device
	s     *hip.Stream
	mods  []*hip.Module
	fn    map[string]*hip.Function
	mode  ropeMode
	kv    string       // the KV cache type's name: kv_store_<kv>, attn_<kv>
	bufs  []hip.Buffer // everything allocated, for close
	args  hip.Args
	err   error        // the pass's first failed launch or upload (launch, send)
	queue launcher     // st.queueNamed, bound once
	prod  productQueue // the products: st.queue, and the vendor BLAS when loaded

	layers                                       devLayers
	x, xn, tmp, q, k, v, att, gate, up, cos, sin hip.Buffer
	xq                                           hip.Buffer // quantized activations (the products'; a q8_0 cache's queries)
	tok, outNorm                                 hip.Buffer // the pass's token ids; the output norm's weight
	embd                                         devMatrix  // token_embd; zero when the CPU embeds
	fp                                           devFlashPrefill
	traffic                                      deviceTraffic // the weight-traffic count (devicetraffic.go)
}

// deviceStackOps are the ops a device stack runs.
var deviceStackOps = []string{"attention", "matmul", "rmsnorm", "rope", "swiglu", "kv_store", "add"}

// embedsOnDevice reports whether m's token embedding runs on the device.
func embedsOnDevice(m *Model) bool { return onDevice(m.tokEmbd.Type) }

// deviceKVTypes are the KV cache types kvstore.cu and attention.cu have.
var deviceKVTypes = []kernels.Type{kernels.F32, kernels.F16, kernels.BF16, kernels.Q8_0}

// canRunStack says why m's layers cannot run on the device ("" when they can).
func canRunStack(m *Model) string {
	_, ws, ok := layersOnDevice(m)
	switch {
	case !ok:
		return "the " + m.hp.arch + " layers"
	case !slices.Contains(deviceKVTypes, m.opt.KVType):
		return "a " + strings.ToLower(m.opt.KVType.String()) + " KV cache"
	case m.hp.headDim > gpu.AttnMaxHeadDim:
		return fmt.Sprintf("a head dim of %d (attention.cu takes at most %d)", m.hp.headDim, gpu.AttnMaxHeadDim)
	}
	for _, w := range ws {
		if w != nil && !onDevice(w.Type) {
			return kernels.MatMulOp(w.Type) + " weights"
		}
	}
	return ""
}

// matrices are the block's weight matrices.
func (b *denseBlock) matrices() []*kernels.Matrix {
	return []*kernels.Matrix{b.wq, b.wk, b.wv, b.wo, b.gate, b.up, b.down}
}

// newDeviceStack uploads m's blocks to d and allocates a pass's buffers;
// blas (nil: none) takes the F16/BF16 products of prefill passes.
func newDeviceStack(m *Model, d *hip.Device, blas *hip.BLAS) (_ *deviceStack, err error) {
	layers, ws, _ := layersOnDevice(m)
	mode, _ := archRope(m.hp.arch) // the arch was checked at load
	st := &deviceStack{m: m, d: d, mode: mode, kv: strings.ToLower(m.opt.KVType.String()), layers: layers}
	st.queue = st.queueNamed
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	if st.s, err = d.NewStream(); err != nil {
		return nil, err
	}
	st.prod = productQueue{launch: st.queue, args: &st.args, warp: d.Warp, blas: blas, stream: st.s}
	if err := st.compile(stackKernels); err != nil {
		return nil, err
	}
	if err := st.allocPass(ws); err != nil {
		return nil, err
	}
	if err := st.initFlashPrefill(); err != nil {
		return nil, err
	}
	if err := layers.upload(st); err != nil {
		return nil, err
	}
	if st.outNorm, err = st.vector(m.outNorm); err != nil {
		return nil, err
	}
	if embedsOnDevice(m) {
		if st.embd, err = st.matrix(m.tokEmbd); err != nil {
			return nil, err
		}
	}
	return st, st.s.Sync()
}

// stackKernels are the kernels a device stack launches besides the weight
// types' (deviceTypeEntries), by file.
var stackKernels = map[string][]string{
	"rmsnorm.cu": {"rms_norm_f32"}, "add.cu": {"add_f32", "add_rows_f32"}, "rope.cu": {"rope_f32"},
	"kvstore.cu":   {"kv_store_f32", "kv_store_f16", "kv_store_bf16", "kv_store_q8_0"},
	"attention.cu": {"attn_f32", "attn_f16", "attn_bf16", "attn_q8_0"}, "swiglu.cu": {"swiglu_f32"},
}

// compile builds the entry points of files (file → entries) into st.fn,
// and on the first call every weight type's, so that any matrix of the
// table multiplies (a q8_0 cache's queries take quantize_q8_0).
func (st *deviceStack) compile(files map[string][]string) error {
	var names []string
	if st.fn == nil {
		st.fn, names = map[string]*hip.Function{}, deviceTypeEntries()
	}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		names = append(names, files[file]...)
	}
	fn, mods, err := compileEntries(st.d, names)
	st.mods = append(st.mods, mods...)
	maps.Copy(st.fn, fn)
	return err
}

// alloc allocates n bytes, remembered for close.
func (st *deviceStack) alloc(n int) (hip.Buffer, error) {
	b, err := st.d.Alloc(max(n, 4))
	if err == nil {
		st.bufs = append(st.bufs, b)
	}
	return b, err
}

// allocPass allocates one pass's activations (as newPass sizes them) and
// the quantized activations of the largest product of ws (or of the
// queries, for a q8_0 cache).
func (st *deviceStack) allocPass(ws []*kernels.Matrix) error {
	p, ub := st.m.p, st.m.ub
	for _, b := range []struct {
		b *hip.Buffer
		n int
	}{
		{&st.x, len(p.x)}, {&st.xn, len(p.xn)}, {&st.tmp, len(p.tmp)}, {&st.q, len(p.q)}, {&st.k, len(p.k)},
		{&st.v, len(p.v)}, {&st.att, len(p.att)}, {&st.gate, len(p.gate)}, {&st.up, len(p.up)},
		{&st.cos, len(p.cos)}, {&st.sin, len(p.sin)}, {&st.tok, ub},
	} {
		var err error
		if *b.b, err = st.alloc(4 * b.n); err != nil {
			return err
		}
	}
	xq := 0
	if st.m.opt.KVType == kernels.Q8_0 {
		xq = kernels.Q8_0.RowBytes(len(p.q) / ub)
	}
	for _, w := range ws {
		if w != nil {
			xq = max(xq, actBytes(w.Type, w.Cols, st.prod.blas != nil))
		}
	}
	var err error
	st.xq, err = st.alloc(ub * xq)
	return err
}

// vector uploads v ("" Buffer for nil).
func (st *deviceStack) vector(v []float32) (hip.Buffer, error) {
	if v == nil {
		return hip.Buffer{}, nil
	}
	b, err := st.alloc(4 * len(v))
	if err != nil {
		return b, err
	}
	return b, st.s.Upload(b, 0, kernels.BytesOf(v))
}

// matrix uploads w as stored.
func (st *deviceStack) matrix(w *kernels.Matrix) (devMatrix, error) {
	b, err := st.alloc(len(w.Data))
	if err != nil {
		return devMatrix{}, err
	}
	return devMatrix{typ: w.Type, rows: w.Rows, cols: w.Cols, b: b}, st.s.Upload(b, 0, w.Data)
}

// upload puts dense block l's weights and its KV cache on the device.
func (st *deviceStack) upload(l int, db *devBlock, b *denseBlock) error {
	err := st.uploadAll([]vecUp{{&db.attnNorm, b.attnNorm}, {&db.ffnNorm, b.ffnNorm}, {&db.qNorm, b.qNorm}, {&db.kNorm, b.kNorm},
		{&db.bq, b.bq}, {&db.bk, b.bk}, {&db.bv, b.bv}, {&db.bo, b.bo}, {&db.bGate, b.bGate}, {&db.bUp, b.bUp}, {&db.bDown, b.bDown}},
		[]matUp{{&db.wq, b.wq}, {&db.wk, b.wk}, {&db.wv, b.wv}, {&db.wo, b.wo}, {&db.gate, b.gate}, {&db.up, b.up}, {&db.down, b.down}})
	if err != nil {
		return err
	}
	db.k, db.v, err = st.kvCache(l)
	return err
}

// vecUp and matUp pair a device slot with the host data it takes.
type (
	vecUp struct {
		dst *hip.Buffer
		src []float32
	}
	matUp struct {
		dst *devMatrix
		src *kernels.Matrix
	}
)

// uploadAll uploads every vector and matrix (a nil one stays zero).
func (st *deviceStack) uploadAll(vs []vecUp, ms []matUp) error {
	for _, v := range vs {
		var err error
		if *v.dst, err = st.vector(v.src); err != nil {
			return err
		}
	}
	for _, w := range ms {
		if w.src == nil {
			continue
		}
		var err error
		if *w.dst, err = st.matrix(w.src); err != nil {
			return err
		}
		if err := st.markWeights(*w.dst); err != nil {
			return err
		}
	}
	return nil
}

// kvCache allocates layer l's K and V caches, (nkv, cap, hd) each.
func (st *deviceStack) kvCache(l int) (k, v hip.Buffer, err error) {
	kv := st.m.kv
	n := st.m.hp.nHeadKV[l] * kv.cap * kv.rb
	if k, err = st.alloc(n); err != nil {
		return k, v, err
	}
	v, err = st.alloc(n)
	return k, v, err
}

// close frees the stack's device memory and modules.
func (st *deviceStack) close() {
	for _, b := range st.bufs {
		st.d.Free(b)
	}
	st.bufs = nil
	for _, m := range st.mods {
		m.Unload()
	}
	st.mods = nil
	if st.s != nil {
		st.s.Destroy()
		st.s = nil
	}
}

// errDevice wraps a device failure with the op it happened in.
func errDevice(op string, err error) error { return fmt.Errorf("device %s: %w", op, err) }
