package engine

// This file owns the KV cache: per layer, K and V of every cached position
// rounded into the cache dtype (f32, f16, bf16 or q8_0), laid out head by
// head so that one KV head's keys form a matrix MatMul reads in place.

import (
	"unsafe"

	"plexbench/kernels"
)

// kvPad is the granularity attention rounds its key count up to: padded
// keys get probability 0, and key counts stay multiples of the kernels'
// lane width, as llama.cpp's padded KV views do.
const kvPad = 32

// maxKVBytes refuses caches no machine here could hold.
const maxKVBytes = 1 << 36

type kvCache struct {
	typ  kernels.Type
	cap  int      // positions per head: kv-len rounded up to kvPad
	hd   int      // head dimension
	rb   int      // bytes of one head vector in typ
	k, v [][]byte // per layer: (n_head_kv, cap, hd) in typ
}

// kvCapacity is the positions a cache of kvLen holds: kvLen rounded up to
// whole kvPad blocks.
func kvCapacity(kvLen int) int { return (kvLen + kvPad - 1) / kvPad * kvPad }

// kvCacheBytes is what newKVCache allocates: K and V of every cached
// position, per attention layer (a GDN layer keeps a recurrent state
// instead, gdn.go). The memory check (memory.go) asks for it.
func kvCacheBytes(hp *hparams, typ kernels.Type, kvLen int) int64 {
	per := 2 * int64(kvCapacity(kvLen)) * int64(typ.RowBytes(hp.headDim))
	var total int64
	for l := range hp.nLayer {
		if hp.attnLayer(l) {
			total += int64(hp.nHeadKV[l]) * per
		}
	}
	return total
}

// newKVCache allocates a cache of kvLen positions in typ for every
// attention layer of hp.
func newKVCache(hp *hparams, typ kernels.Type, kvLen int) (*kvCache, error) {
	if err := checkKVCache(hp, typ, kvLen); err != nil {
		return nil, err
	}
	c := &kvCache{typ: typ, cap: kvCapacity(kvLen), hd: hp.headDim, rb: typ.RowBytes(hp.headDim)}
	c.k, c.v = make([][]byte, hp.nLayer), make([][]byte, hp.nLayer)
	for l := range hp.nLayer {
		if !hp.attnLayer(l) {
			continue
		}
		c.k[l] = make([]byte, hp.nHeadKV[l]*c.cap*c.rb)
		c.v[l] = make([]byte, hp.nHeadKV[l]*c.cap*c.rb)
	}
	return c, nil
}

// store rounds the pass's K and V rows (nkv heads per token) into layer l
// at positions pos0.. with ggml's f32 → cache-type conversion (the set's:
// vector f16/bf16 where the CPU has it, the same bytes).
func (c *kvCache) store(l int, p *pass, nkv int) {
	p.args = rowArgs{layer: l, heads: nkv}
	p.m.pool.For(p.n, max(1, rowGrain/(nkv*c.hd)), p.storeFn)
}

// storeRange stores the K and V rows of tokens [lo, hi) (see store).
func (p *pass) storeRange(_, lo, hi int) {
	c, l, nkv, ks := p.m.kv, p.args.layer, p.args.heads, p.m.opt.Kernels
	hd := c.hd
	for t := lo; t < hi; t++ {
		pos := p.pos0 + t
		for g := range nkv {
			src := (t*nkv + g) * hd
			dst := (g*c.cap + pos) * c.rb
			ks.QuantizeActivation(c.typ, p.k[src:src+hd], c.k[l][dst:dst+c.rb])
			ks.QuantizeActivation(c.typ, p.v[src:src+hd], c.v[l][dst:dst+c.rb])
		}
	}
}

// keys is KV head g's first n cached keys of layer l as an (hd, n) matrix.
func (c *kvCache) keys(l, g, n int) kernels.Matrix {
	off := g * c.cap * c.rb
	return kernels.Matrix{Type: c.typ, Rows: n, Cols: c.hd, Data: c.k[l][off : off+n*c.rb]}
}

// valuesT writes KV head g's first nk cached values of layer l transposed
// into dst as an (nkp, hd) matrix — row d holds dimension d of every key —
// with the columns nk..nkp-1 zeroed. Float caches keep their type (V·P then
// rounds P to it, as ggml's mul_mat does); q8_0 values are expanded to f32.
func (c *kvCache) valuesT(l, g, nk, nkp int, dst []byte, row []float32) kernels.Matrix {
	hd := c.hd
	src := c.v[l][g*c.cap*c.rb : (g*c.cap+nk)*c.rb]
	switch c.typ {
	case kernels.F16, kernels.BF16:
		d := view[uint16](dst[:2*hd*nkp])
		transpose(d, nkp, view[uint16](src), nk, hd)
		for i := range hd {
			clear(d[i*nkp+nk : (i+1)*nkp])
		}
		return kernels.Matrix{Type: c.typ, Rows: hd, Cols: nkp, Data: dst[:2*hd*nkp]}
	case kernels.F32:
		d := view[uint32](dst[:4*hd*nkp])
		transpose(d, nkp, view[uint32](src), nk, hd)
		for i := range hd {
			clear(d[i*nkp+nk : (i+1)*nkp])
		}
	default:
		d := view[float32](dst[:4*hd*nkp])
		for j := range nk {
			if err := kernels.Dequantize(c.typ, src[j*c.rb:(j+1)*c.rb], row[:hd]); err != nil {
				panic("engine: " + err.Error()) // the type was checked at Load
			}
			for i, x := range row[:hd] {
				d[i*nkp+j] = x
			}
		}
		for i := range hd {
			clear(d[i*nkp+nk : (i+1)*nkp])
		}
	}
	return kernels.Matrix{Type: kernels.F32, Rows: hd, Cols: nkp, Data: dst[:4*hd*nkp]}
}

// transpose writes the row-major (rows, cols) src into dst as (cols, rows)
// with row stride ld, in 8×8 blocks so that reads and writes both stay
// within a few cache lines.
func transpose[T uint16 | uint32](dst []T, ld int, src []T, rows, cols int) {
	const b = 8
	for j0 := 0; j0 < rows; j0 += b {
		j1 := min(j0+b, rows)
		for i0 := 0; i0 < cols; i0 += b {
			i1 := min(i0+b, cols)
			for j := j0; j < j1; j++ {
				s := src[j*cols+i0 : j*cols+i1]
				for k, x := range s {
					dst[(i0+k)*ld+j] = x
				}
			}
		}
	}
}

// view reinterprets little-endian bytes as T values (every supported
// target is little-endian; the buffers are allocated aligned).
func view[T uint16 | uint32 | float32](b []byte) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}
