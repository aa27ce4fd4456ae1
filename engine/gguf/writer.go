package gguf

// This file owns Writer: building GGUF v3 files with the exact sequential,
// padded tensor layout the reader (and llama.cpp) demands.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"plexbench/kernels"
)

// Writer accumulates metadata and tensors and serialises them as GGUF v3.
// The zero value is not ready; use NewWriter.
type Writer struct {
	kvs     []KV
	kvIndex map[string]int
	tensors []TensorInfo
	data    [][]byte
	names   map[string]bool
	err     error // first error from Set, reported by WriteTo
}

// NewWriter returns an empty version-3 writer. Alignment is 32 unless
// general.alignment is set (it must be a power-of-two uint32).
func NewWriter() *Writer {
	return &Writer{kvIndex: map[string]int{}, names: map[string]bool{}}
}

// Set adds or replaces a metadata value, keeping insertion order (a
// replaced key keeps its position). v is one of the types ValueOf accepts;
// slices are kept by reference until WriteTo. An unsupported value or an
// empty key is reported by WriteTo.
func (w *Writer) Set(key string, v any) {
	val, err := ValueOf(v)
	if err == nil && key == "" {
		err = errors.New("empty key")
	}
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("gguf writer: key %q: %w", key, err)
		}
		return
	}
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i].Value = val
		return
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, KV{Key: key, Value: val})
}

// AddTensor appends a tensor; data must be exactly its ggml byte size and
// is kept by reference until WriteTo.
func (w *Writer) AddTensor(name string, typ kernels.Type, dims []int64, data []byte) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("gguf writer: tensor %q: %s", name, fmt.Sprintf(format, args...))
	}
	if len(name) >= MaxTensorName {
		return fail("name is %d bytes, must be < %d", len(name), MaxTensorName)
	}
	if w.names[name] {
		return fail("duplicate name")
	}
	if len(dims) > MaxDims {
		return fail("%d dims > %d", len(dims), MaxDims)
	}
	if !typ.Known() {
		return fail("unknown ggml type %d", uint32(typ))
	}
	size, err := tensorSize(typ, dims)
	if err != nil {
		return fail("%v", err)
	}
	if int64(len(data)) != size {
		return fail("%d data bytes, %s %v needs %d", len(data), typ, dims, size)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, TensorInfo{Name: name, Dims: append([]int64(nil), dims...), Type: typ, Size: size})
	w.data = append(w.data, data)
	return nil
}

// alignment returns the effective data alignment.
func (w *Writer) alignment() (int64, error) {
	i, ok := w.kvIndex["general.alignment"]
	if !ok {
		return DefaultAlignment, nil
	}
	v := w.kvs[i].Value
	if v.Type != TypeUint32 || !isPow2(int64(v.bits)) {
		return 0, fmt.Errorf("gguf writer: general.alignment must be a power-of-two uint32, got %s %v", v.Type, v)
	}
	return int64(v.bits), nil
}

// countWriter tracks bytes written and the first error, so encoding code
// stays linear.
type countWriter struct {
	w   *bufio.Writer
	n   int64
	err error
	b   [8]byte
}

func (c *countWriter) bytes(p []byte) {
	if c.err != nil {
		return
	}
	m, err := c.w.Write(p)
	c.n += int64(m)
	c.err = err
}

func (c *countWriter) u8(x uint8) { c.b[0] = x; c.bytes(c.b[:1]) }
func (c *countWriter) u16(x uint16) {
	binary.LittleEndian.PutUint16(c.b[:], x)
	c.bytes(c.b[:2])
}
func (c *countWriter) u32(x uint32) {
	binary.LittleEndian.PutUint32(c.b[:], x)
	c.bytes(c.b[:4])
}
func (c *countWriter) u64(x uint64) {
	binary.LittleEndian.PutUint64(c.b[:], x)
	c.bytes(c.b[:8])
}
func (c *countWriter) str(s string) {
	c.u64(uint64(len(s)))
	if c.err == nil {
		m, err := c.w.WriteString(s)
		c.n += int64(m)
		c.err = err
	}
}

var zeros [256]byte

func (c *countWriter) padTo(align int64) {
	for c.n%align != 0 && c.err == nil {
		c.bytes(zeros[:min(align-c.n%align, int64(len(zeros)))])
	}
}

func (c *countWriter) scalar(v Value) {
	switch v.Type {
	case TypeString:
		c.str(v.str)
	case TypeUint8, TypeInt8, TypeBool:
		c.u8(uint8(v.bits))
	case TypeUint16, TypeInt16:
		c.u16(uint16(v.bits))
	case TypeUint32, TypeInt32:
		c.u32(uint32(v.bits))
	case TypeFloat32:
		c.u32(math.Float32bits(float32(math.Float64frombits(v.bits))))
	case TypeUint64, TypeInt64, TypeFloat64:
		c.u64(v.bits)
	}
}

func (c *countWriter) array(v Value) {
	c.u32(uint32(v.ElemType))
	c.u64(uint64(v.Len()))
	switch a := v.arr.(type) {
	case []uint8:
		c.bytes(a)
	case []int8:
		for _, x := range a {
			c.u8(uint8(x))
		}
	case []bool:
		for _, x := range a {
			if x {
				c.u8(1)
			} else {
				c.u8(0)
			}
		}
	case []uint16:
		for _, x := range a {
			c.u16(x)
		}
	case []int16:
		for _, x := range a {
			c.u16(uint16(x))
		}
	case []uint32:
		for _, x := range a {
			c.u32(x)
		}
	case []int32:
		for _, x := range a {
			c.u32(uint32(x))
		}
	case []float32:
		for _, x := range a {
			c.u32(math.Float32bits(x))
		}
	case []string:
		for _, x := range a {
			c.str(x)
		}
	case []uint64:
		for _, x := range a {
			c.u64(x)
		}
	case []int64:
		for _, x := range a {
			c.u64(uint64(x))
		}
	case []float64:
		for _, x := range a {
			c.u64(math.Float64bits(x))
		}
	}
}

// WriteTo serialises the file: header, KVs, tensor index, padding to the
// alignment, then each tensor's data padded to the alignment.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	align, err := w.alignment()
	if err != nil {
		return 0, err
	}
	c := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	c.bytes([]byte("GGUF"))
	c.u32(3)
	c.u64(uint64(len(w.tensors)))
	c.u64(uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		c.str(kv.Key)
		c.u32(uint32(kv.Value.Type))
		if kv.Value.Type == TypeArray {
			c.array(kv.Value)
		} else {
			c.scalar(kv.Value)
		}
	}
	var off int64
	for _, t := range w.tensors {
		c.str(t.Name)
		c.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			c.u64(uint64(d))
		}
		c.u32(uint32(t.Type))
		c.u64(uint64(off))
		p, _ := pad(t.Size, align)
		off += p
	}
	c.padTo(align) // gguf-py pads here even with no tensors
	for _, d := range w.data {
		c.bytes(d)
		c.padTo(align)
	}
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.n, c.err
}

// WriteFile writes the file atomically: a temporary file in the same
// directory, fsynced, then renamed over path.
func (w *Writer) WriteFile(path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = w.WriteTo(tmp); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf %s: %w", path, err)
	}
	// Persist the rename itself; failure here leaves a complete file either way.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
