// Package gguf reads and writes GGUF model files
// (../shared/spec/gguf-and-quants.md §1): the header, the key/value
// metadata, the tensor index, and zero-copy access to tensor data through a
// read-only memory mapping.
package gguf

// This file owns the public types, sentinel errors and typed getters.

import (
	"errors"
	"fmt"
	"math"

	"plexbench/kernels"
)

// ValueType is a gguf_type id (the type tag of a metadata value).
type ValueType uint32

// gguf_type ids (../shared/spec/gguf-and-quants.md §1.3).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
	"BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"}

// String returns the gguf name of t ("UINT32"), or "gguf_type(N)" for unknown ids.
func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("gguf_type(%d)", uint32(t))
}

// size is the encoded byte size of a fixed-size type, 0 for STRING/ARRAY/unknown.
func (t ValueType) size() int64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

func (t ValueType) isInt() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// Sentinel errors; every error returned by this package wraps one of them,
// so callers can classify failures with errors.Is.
var (
	// ErrBadMagic: the file does not start with "GGUF".
	ErrBadMagic = errors.New("bad magic (not a GGUF file)")
	// ErrVersion: a GGUF version this reader does not accept (only 2 and 3 are).
	ErrVersion = errors.New("unsupported version")
	// ErrTruncated: the file ends before what its header and records declare.
	ErrTruncated = errors.New("truncated")
	// ErrCorrupt: a structurally invalid header, record or tensor layout.
	ErrCorrupt = errors.New("corrupt")
)

// DefaultAlignment is the data alignment used when general.alignment is absent.
const DefaultAlignment = 32

// MaxTensorName is ggml's GGML_MAX_NAME: tensor names must be shorter.
const MaxTensorName = 64

// MaxDims is ggml's GGML_MAX_DIMS.
const MaxDims = 4

// KV is one metadata record.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo is one tensor-info record, with its byte size derived.
type TensorInfo struct {
	Name   string
	Dims   []int64      // ggml ne[], ne[0] fastest; len(Dims) is the stored n_dims
	Type   kernels.Type // ggml type id
	Offset int64        // relative to the data blob (File.DataOffset)
	Size   int64        // bytes
}

// Elements is the product of Dims (1 for zero dims).
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file. After Open it holds a read-only mapping of
// the whole file that TensorData slices; Close releases it.
type File struct {
	Path       string
	Version    uint32
	Alignment  int64
	DataOffset int64 // absolute file offset of the tensor data blob (end of the index if no tensors)
	FileSize   int64
	KVs        []KV
	Tensors    []TensorInfo

	kvIndex     map[string]int
	tensorIndex map[string]int
	data        []byte // whole-file mapping (Open only)
	unmap       func([]byte) error
}

// TensorData returns t's bytes as a zero-copy slice of the mapping, or nil
// when the file was only parsed (Parse), has been closed, or t is out of range.
// The slice is read-only and invalid after Close.
func (f *File) TensorData(t *TensorInfo) []byte {
	if f == nil || t == nil || f.data == nil {
		return nil
	}
	lo := f.DataOffset + t.Offset
	hi := lo + t.Size
	if t.Offset < 0 || t.Size < 0 || lo < f.DataOffset || hi < lo || hi > int64(len(f.data)) {
		return nil
	}
	return f.data[lo:hi:hi]
}

// Close releases the mapping; it is safe to call more than once.
func (f *File) Close() error {
	if f == nil || f.data == nil {
		return nil
	}
	d := f.data
	f.data = nil
	if f.unmap != nil {
		if err := f.unmap(d); err != nil {
			return fmt.Errorf("gguf %s: unmap: %w", f.Path, err)
		}
	}
	return nil
}

// Tensor looks a tensor up by name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool { _, ok := f.kvIndex[key]; return ok }

// Value returns the raw value of key.
func (f *File) Value(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KVs[i].Value, true
}

// String returns a STRING value.
func (f *File) String(key string) (string, bool) { v, _ := f.Value(key); return v.AsString() }

// Uint returns any non-negative integer value.
func (f *File) Uint(key string) (uint64, bool) { v, _ := f.Value(key); return v.AsUint() }

// Int returns any integer value that fits int64.
func (f *File) Int(key string) (int64, bool) { v, _ := f.Value(key); return v.AsInt() }

// Float returns a FLOAT32/FLOAT64 or integer value as float64.
func (f *File) Float(key string) (float64, bool) { v, _ := f.Value(key); return v.AsFloat() }

// Bool returns a BOOL value.
func (f *File) Bool(key string) (bool, bool) { v, _ := f.Value(key); return v.AsBool() }

// Strings returns a STRING array. The slice is shared: do not modify it.
func (f *File) Strings(key string) ([]string, bool) { v, _ := f.Value(key); return v.AsStrings() }

// Float32s returns a FLOAT32 (or FLOAT64, converted) array. A FLOAT32
// array's slice is shared: do not modify it.
func (f *File) Float32s(key string) ([]float32, bool) { v, _ := f.Value(key); return v.AsFloat32s() }

// Int32s returns any integer array converted to int32 (!ok if a value does
// not fit). An INT32 array's slice is shared: do not modify it.
func (f *File) Int32s(key string) ([]int32, bool) { v, _ := f.Value(key); return v.AsInt32s() }

// Ints returns a scalar integer as a 1-element slice, or an integer array
// as int64s: the two shapes per-layer hyper-parameters come in.
func (f *File) Ints(key string) ([]int64, bool) { v, _ := f.Value(key); return v.AsInts() }

// Architecture returns general.architecture, or "" if absent.
func (f *File) Architecture() string { s, _ := f.String("general.architecture"); return s }

// isPow2 reports whether a is a positive power of two.
func isPow2(a int64) bool { return a > 0 && a&(a-1) == 0 }

// pad rounds n up to a multiple of align (a power of two); ok=false on overflow.
func pad(n, align int64) (int64, bool) {
	if n > math.MaxInt64-(align-1) {
		return 0, false
	}
	return (n + align - 1) &^ (align - 1), true
}
