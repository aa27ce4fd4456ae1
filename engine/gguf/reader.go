package gguf

// This file owns parsing: the header, KV records and tensor index, with
// every count and length checked against the bytes left before allocating.

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"

	"plexbench/kernels"
)

const (
	headerSize    = 24
	minKVSize     = 8 + 1 + 4 + 1 // key length, ≥1 key byte, type, ≥1 value byte
	minTensorSize = 8 + 4 + 4 + 8 // name length, n_dims, type, offset
	windowSize    = 256 << 10     // read-ahead window for ReaderAt sources
	arenaChunk    = 64 << 10      // backing store for short strings
	arenaMaxStr   = 4 << 10       // longer strings get their own allocation
)

// decoder reads little-endian primitives either straight from a mapped
// buffer (src == nil, buf is the whole file) or through a read-ahead window
// over src, so a 151k-token vocabulary costs no per-field syscalls.
type decoder struct {
	name   string
	src    io.ReaderAt
	size   int64
	buf    []byte
	bufOff int64 // file offset of buf[0]
	pos    int64 // absolute read position
	arena  []byte
}

// errf builds "gguf <name>: <sentinel>: <detail>".
func (d *decoder) errf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("gguf %s: %w: %s", d.name, sentinel, fmt.Sprintf(format, args...))
}

func (d *decoder) remaining() int64 { return d.size - d.pos }

// need returns the next n bytes and advances; what names the field for errors.
func (d *decoder) need(n int64, what string) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, d.errf(ErrTruncated, "%s at offset %d needs %d bytes, %d left", what, d.pos, n, max(d.remaining(), 0))
	}
	lo := d.pos - d.bufOff
	if d.pos < d.bufOff || lo+n > int64(len(d.buf)) {
		if d.src == nil {
			return nil, d.errf(ErrTruncated, "%s at offset %d needs %d bytes", what, d.pos, n)
		}
		if err := d.fill(n, what); err != nil {
			return nil, err
		}
		lo = 0
	}
	d.pos += n
	return d.buf[lo : lo+n : lo+n], nil
}

// fill reloads the window at pos with at least n bytes (n ≤ remaining).
func (d *decoder) fill(n int64, what string) error {
	want := min(max(n, windowSize), d.remaining())
	if int64(cap(d.buf)) < want {
		d.buf = make([]byte, want)
	}
	d.buf = d.buf[:want]
	got, err := d.src.ReadAt(d.buf, d.pos)
	got = min(max(got, 0), len(d.buf)) // don't trust a misbehaving ReaderAt
	if int64(got) < n {
		d.buf, d.bufOff = d.buf[:0], d.pos
		if err == nil || err == io.EOF {
			return d.errf(ErrTruncated, "%s at offset %d: short read", what, d.pos)
		}
		return fmt.Errorf("gguf %s: reading %s at offset %d: %w", d.name, what, d.pos, err)
	}
	d.buf, d.bufOff = d.buf[:got], d.pos
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.need(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.need(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 count of items that each take at least minSize bytes,
// rejecting counts the rest of the file cannot hold before anyone allocates.
func (d *decoder) count(minSize int64, what string) (int64, error) {
	at := d.pos
	c, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if c > math.MaxInt64 {
		return 0, d.errf(ErrCorrupt, "%s at offset %d is negative (%d)", what, at, int64(c))
	}
	if minSize > 0 && int64(c) > d.remaining()/minSize {
		return 0, d.errf(ErrTruncated, "%s %d at offset %d needs ≥ %d bytes each, %d left", what, c, at, minSize, d.remaining())
	}
	return int64(c), nil
}

// rawString returns the bytes of a length-prefixed string (aliasing the
// window). The labels are passed in whole so hot loops build them once.
func (d *decoder) rawString(what, lenWhat string) ([]byte, error) {
	n, err := d.count(1, lenWhat)
	if err != nil {
		return nil, err
	}
	return d.need(n, what)
}

func (d *decoder) str(what string) (string, error) {
	b, err := d.rawString(what, what+" length")
	if err != nil {
		return "", err
	}
	return d.intern(b), nil
}

// intern copies b into a shared arena so that a vocabulary of short
// strings costs a handful of allocations rather than one per token. Arena
// bytes are never written again once handed out, so the strings are immutable.
func (d *decoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaMaxStr {
		return string(b)
	}
	if cap(d.arena)-len(d.arena) < len(b) {
		d.arena = make([]byte, 0, arenaChunk)
	}
	start := len(d.arena)
	d.arena = append(d.arena, b...)
	return unsafe.String(&d.arena[start], len(b))
}

// Parse reads the header, metadata and tensor index of a GGUF file of the
// given size from r, validating them as llama.cpp does (and more). The
// result depends on no byte at or beyond DataOffset (reads ahead may touch
// them; a ReaderAt that errors there is fine). name labels errors.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	d := &decoder{name: name, src: r, size: size}
	return parse(d)
}

// parseBytes parses a whole file held in memory (the mapping) without copying.
func parseBytes(b []byte, name string) (*File, error) {
	d := &decoder{name: name, size: int64(len(b)), buf: b}
	return parse(d)
}

func parse(d *decoder) (*File, error) {
	if d.size < 0 {
		return nil, d.errf(ErrCorrupt, "negative file size %d", d.size)
	}
	f := &File{Path: d.name, FileSize: d.size, Alignment: DefaultAlignment}
	magic, err := d.need(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != "GGUF" {
		return nil, d.errf(ErrBadMagic, "magic %q", magic)
	}
	v, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case v&0xFFFF == 0:
		return nil, d.errf(ErrVersion, "version %#x looks byte-swapped (big-endian file?)", v)
	case v == 1:
		return nil, d.errf(ErrVersion, "version 1 is no longer supported")
	case v < 2 || v > 3:
		return nil, d.errf(ErrVersion, "version %d (want 2 or 3)", v)
	}
	f.Version = v
	nTensors, err := d.count(0, "tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.count(0, "KV count")
	if err != nil {
		return nil, err
	}
	// Check the counts together now that the header is consumed.
	if nKV > d.remaining()/minKVSize {
		return nil, d.errf(ErrTruncated, "KV count %d needs ≥ %d bytes each, %d left", nKV, minKVSize, d.remaining())
	}
	if nTensors > (d.remaining()-nKV*minKVSize)/minTensorSize {
		return nil, d.errf(ErrTruncated, "tensor count %d needs ≥ %d bytes each, %d left after the KVs", nTensors, minTensorSize, d.remaining())
	}

	f.KVs = make([]KV, 0, nKV)
	f.kvIndex = make(map[string]int, nKV)
	for i := range nKV {
		kv, err := d.kv(i)
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[kv.Key]; dup {
			return nil, d.errf(ErrCorrupt, "duplicate key %q", kv.Key)
		}
		f.kvIndex[kv.Key] = len(f.KVs)
		f.KVs = append(f.KVs, kv)
	}
	if av, ok := f.Value("general.alignment"); ok {
		if av.Type != TypeUint32 {
			return nil, d.errf(ErrCorrupt, "general.alignment has type %s, want UINT32", av.Type)
		}
		a := int64(av.bits)
		if !isPow2(a) {
			return nil, d.errf(ErrCorrupt, "general.alignment %d is not a power of two", a)
		}
		f.Alignment = a
	}

	if nTensors > d.remaining()/minTensorSize {
		return nil, d.errf(ErrTruncated, "tensor count %d needs ≥ %d bytes each, %d left", nTensors, minTensorSize, d.remaining())
	}
	f.Tensors = make([]TensorInfo, 0, nTensors)
	f.tensorIndex = make(map[string]int, nTensors)
	dims := make([]int64, 0, nTensors*2) // one backing array for all Dims
	for i := range nTensors {
		t, err := d.tensorInfo(i, &dims)
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[t.Name]; dup {
			return nil, d.errf(ErrCorrupt, "duplicate tensor %q", t.Name)
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}

	// The blob starts at the next aligned offset; a file without tensors
	// has no blob, so its DataOffset is simply the end of the index.
	dataOff := d.pos
	if nTensors > 0 {
		var ok bool
		if dataOff, ok = pad(d.pos, f.Alignment); !ok {
			return nil, d.errf(ErrCorrupt, "data offset overflows")
		}
	}
	f.DataOffset = dataOff
	// Offsets must be exactly the sequential padded layout; this also
	// rules out overlaps and gaps.
	var want int64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset != want {
			return nil, d.errf(ErrCorrupt, "tensor %q has offset %d, expected %d", t.Name, t.Offset, want)
		}
		end := dataOff + t.Offset
		if end < 0 || t.Size > d.size-end {
			return nil, d.errf(ErrTruncated, "tensor %q data [%d, +%d) lies past end of file (%d bytes)", t.Name, end, t.Size, d.size)
		}
		p, ok := pad(t.Size, f.Alignment)
		if !ok || p > math.MaxInt64-want {
			return nil, d.errf(ErrCorrupt, "tensor %q: data size overflows", t.Name)
		}
		want += p
	}
	return f, nil
}

// kv reads one KV record.
func (d *decoder) kv(i int64) (KV, error) {
	at := d.pos
	key, err := d.str(fmt.Sprintf("key of KV %d", i))
	if err != nil {
		return KV{}, err
	}
	if key == "" {
		return KV{}, d.errf(ErrCorrupt, "KV %d at offset %d has an empty key", i, at)
	}
	what := fmt.Sprintf("KV %q", key)
	tv, err := d.u32(what + " type")
	if err != nil {
		return KV{}, err
	}
	t := ValueType(tv)
	if t != TypeArray {
		v, err := d.scalar(t, what)
		return KV{Key: key, Value: v}, err
	}
	ev, err := d.u32(what + " element type")
	if err != nil {
		return KV{}, err
	}
	et := ValueType(ev)
	v, err := d.array(et, what)
	return KV{Key: key, Value: v}, err
}

func (d *decoder) scalar(t ValueType, what string) (Value, error) {
	v := Value{Type: t, valid: true}
	if t == TypeString {
		s, err := d.str(what)
		v.str = s
		return v, err
	}
	n := t.size()
	if n == 0 {
		return Value{}, d.errf(ErrCorrupt, "%s has unknown value type %d", what, uint32(t))
	}
	b, err := d.need(n, what)
	if err != nil {
		return Value{}, err
	}
	switch t {
	case TypeUint8, TypeBool:
		v.bits = uint64(b[0])
		if t == TypeBool && v.bits != 0 {
			v.bits = 1
		}
	case TypeInt8:
		v.bits = uint64(int64(int8(b[0])))
	case TypeUint16:
		v.bits = uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		v.bits = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case TypeFloat32:
		v.bits = math.Float64bits(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case TypeUint64, TypeInt64:
		v.bits = binary.LittleEndian.Uint64(b)
	case TypeFloat64:
		v.bits = binary.LittleEndian.Uint64(b)
	}
	return v, nil
}

func (d *decoder) array(et ValueType, what string) (Value, error) {
	v := Value{Type: TypeArray, ElemType: et, valid: true}
	if et == TypeArray {
		return Value{}, d.errf(ErrCorrupt, "%s is a nested array", what)
	}
	if et == TypeString {
		n, err := d.count(8, what+" count")
		if err != nil {
			return Value{}, err
		}
		a := make([]string, n)
		elemWhat, lenWhat := what+" element", what+" element length"
		for j := range a {
			b, err := d.rawString(elemWhat, lenWhat)
			if err != nil {
				return Value{}, err
			}
			a[j] = d.intern(b)
		}
		v.arr = a
		return v, nil
	}
	es := et.size()
	if es == 0 {
		return Value{}, d.errf(ErrCorrupt, "%s has unknown element type %d", what, uint32(et))
	}
	n, err := d.count(es, what+" count")
	if err != nil {
		return Value{}, err
	}
	b, err := d.need(n*es, what)
	if err != nil {
		return Value{}, err
	}
	le := binary.LittleEndian
	switch et {
	case TypeUint8:
		v.arr = append([]uint8{}, b...)
	case TypeInt8:
		v.arr = decodeArray(b, n, 1, func(p []byte) int8 { return int8(p[0]) })
	case TypeBool:
		v.arr = decodeArray(b, n, 1, func(p []byte) bool { return p[0] != 0 })
	case TypeUint16:
		v.arr = decodeArray(b, n, 2, le.Uint16)
	case TypeInt16:
		v.arr = decodeArray(b, n, 2, func(p []byte) int16 { return int16(le.Uint16(p)) })
	case TypeUint32:
		v.arr = decodeArray(b, n, 4, le.Uint32)
	case TypeInt32:
		v.arr = decodeArray(b, n, 4, func(p []byte) int32 { return int32(le.Uint32(p)) })
	case TypeFloat32:
		v.arr = decodeArray(b, n, 4, func(p []byte) float32 { return math.Float32frombits(le.Uint32(p)) })
	case TypeUint64:
		v.arr = decodeArray(b, n, 8, le.Uint64)
	case TypeInt64:
		v.arr = decodeArray(b, n, 8, func(p []byte) int64 { return int64(le.Uint64(p)) })
	case TypeFloat64:
		v.arr = decodeArray(b, n, 8, func(p []byte) float64 { return math.Float64frombits(le.Uint64(p)) })
	}
	return v, nil
}

// tensorInfo reads and validates one tensor-info record; dims is a shared
// backing array the record's Dims are carved from.
func (d *decoder) tensorInfo(i int64, dims *[]int64) (TensorInfo, error) {
	at := d.pos
	nameLen, err := d.count(1, fmt.Sprintf("name length of tensor %d", i))
	if err != nil {
		return TensorInfo{}, err
	}
	if nameLen >= MaxTensorName {
		return TensorInfo{}, d.errf(ErrCorrupt, "tensor %d at offset %d: name length %d ≥ %d", i, at, nameLen, MaxTensorName)
	}
	nb, err := d.need(nameLen, fmt.Sprintf("name of tensor %d", i))
	if err != nil {
		return TensorInfo{}, err
	}
	t := TensorInfo{Name: d.intern(nb)}
	what := fmt.Sprintf("tensor %q", t.Name)
	nd, err := d.u32(what + " n_dims")
	if err != nil {
		return TensorInfo{}, err
	}
	if nd > MaxDims {
		return TensorInfo{}, d.errf(ErrCorrupt, "%s: n_dims %d > %d", what, nd, MaxDims)
	}
	b, err := d.need(int64(nd)*8, what+" dims")
	if err != nil {
		return TensorInfo{}, err
	}
	start := len(*dims)
	for j := range int(nd) {
		ne := int64(binary.LittleEndian.Uint64(b[8*j:]))
		if ne < 0 {
			return TensorInfo{}, d.errf(ErrCorrupt, "%s: ne[%d] = %d is negative", what, j, ne)
		}
		*dims = append(*dims, ne)
	}
	t.Dims = (*dims)[start:len(*dims):len(*dims)]
	tv, err := d.u32(what + " type")
	if err != nil {
		return TensorInfo{}, err
	}
	t.Type = kernels.Type(tv)
	if !t.Type.Known() {
		return TensorInfo{}, d.errf(ErrCorrupt, "%s: unknown ggml type %d", what, tv)
	}
	off, err := d.u64(what + " offset")
	if err != nil {
		return TensorInfo{}, err
	}
	if off > math.MaxInt64 {
		return TensorInfo{}, d.errf(ErrCorrupt, "%s: offset %d overflows", what, off)
	}
	t.Offset = int64(off)
	size, err := tensorSize(t.Type, t.Dims)
	if err != nil {
		return TensorInfo{}, d.errf(ErrCorrupt, "%s: %v", what, err)
	}
	t.Size = size
	return t, nil
}

// tensorSize is ggml_nbytes for a contiguous tensor: rows of ne[0]
// elements packed in blocks, times the remaining dims, overflow-checked.
func tensorSize(typ kernels.Type, dims []int64) (int64, error) {
	bs, bb := int64(typ.BlockSize()), int64(typ.BlockBytes())
	if bs <= 0 || bb <= 0 {
		return 0, fmt.Errorf("unknown ggml type %d", uint32(typ))
	}
	ne := [MaxDims]int64{1, 1, 1, 1}
	copy(ne[:], dims)
	elems := int64(1)
	for j, n := range ne {
		if n < 0 {
			return 0, fmt.Errorf("ne[%d] = %d is negative", j, n)
		}
		if n != 0 && elems > math.MaxInt64/n {
			return 0, fmt.Errorf("element count %v overflows int64", dims)
		}
		elems *= n
	}
	if ne[0]%bs != 0 {
		return 0, fmt.Errorf("ne[0] = %d is not a multiple of the %s block size %d", ne[0], typ, bs)
	}
	size := ne[0] / bs * bb // ≤ ne[0]*bb/bs; bb/bs ≤ 8 for every type
	if size/bb != ne[0]/bs {
		return 0, fmt.Errorf("byte size of %v overflows", dims)
	}
	for _, n := range ne[1:] {
		if n != 0 && size > math.MaxInt64/n {
			return 0, fmt.Errorf("byte size of %v overflows", dims)
		}
		size *= n
	}
	return size, nil
}

// decodeArray decodes n fixed-size little-endian elements of size bytes
// each from b (already checked to hold them).
func decodeArray[T any](b []byte, n int64, size int, get func([]byte) T) []T {
	a := make([]T, n)
	for j := range a {
		a[j] = get(b[size*j:])
	}
	return a
}
