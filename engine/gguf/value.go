package gguf

// This file owns Value: one scalar or array metadata value, its typed
// accessors, and ValueOf (Go value → Value) used by the writer.

import (
	"fmt"
	"math"
)

// Value holds one metadata value: a scalar, a string, or an array of one
// element type. The zero Value has Type UINT8 and no payload; accessors on
// a Value from a missing key report ok=false.
type Value struct {
	Type     ValueType
	ElemType ValueType // element type when Type == TypeArray

	valid bool
	bits  uint64 // integers (signed ones sign-extended), bool 0/1, floats as float64 bits
	str   string
	arr   any // []uint8 []int8 []uint16 []int16 []uint32 []int32 []float32 []bool []string []uint64 []int64 []float64
}

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.valid && v.Type == TypeArray }

// Len is the array length (0 for scalars).
func (v Value) Len() int {
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	return 0
}

// Interface returns v as the Go value ValueOf would accept back
// (uint32(7), "x", []string{...}); nil for an invalid Value.
func (v Value) Interface() any {
	if !v.valid {
		return nil
	}
	switch v.Type {
	case TypeArray:
		return v.arr
	case TypeString:
		return v.str
	case TypeBool:
		return v.bits != 0
	case TypeFloat32:
		return float32(math.Float64frombits(v.bits))
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(v.bits)
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(v.bits)
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(v.bits)
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	}
	return nil
}

// String formats v for diagnostics; long arrays are summarised.
func (v Value) String() string {
	if !v.valid {
		return "<none>"
	}
	if v.Type == TypeArray {
		return fmt.Sprintf("[%d×%s]", v.Len(), v.ElemType)
	}
	if v.Type == TypeString {
		return fmt.Sprintf("%q", v.str)
	}
	return fmt.Sprint(v.Interface())
}

// AsString returns a STRING value.
func (v Value) AsString() (string, bool) {
	if !v.valid || v.Type != TypeString {
		return "", false
	}
	return v.str, true
}

// AsBool returns a BOOL value.
func (v Value) AsBool() (bool, bool) {
	if !v.valid || v.Type != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// AsUint returns any integer value that is non-negative.
func (v Value) AsUint() (uint64, bool) {
	if !v.valid || !v.Type.isInt() {
		return 0, false
	}
	if v.Type.isSigned() && int64(v.bits) < 0 {
		return 0, false
	}
	return v.bits, true
}

// AsInt returns any integer value that fits int64.
func (v Value) AsInt() (int64, bool) {
	if !v.valid || !v.Type.isInt() {
		return 0, false
	}
	if !v.Type.isSigned() && v.bits > math.MaxInt64 {
		return 0, false
	}
	return int64(v.bits), true
}

// AsFloat returns a float or integer value as float64.
func (v Value) AsFloat() (float64, bool) {
	if !v.valid {
		return 0, false
	}
	switch {
	case v.Type == TypeFloat32 || v.Type == TypeFloat64:
		return math.Float64frombits(v.bits), true
	case v.Type.isSigned():
		return float64(int64(v.bits)), true
	case v.Type.isInt():
		return float64(v.bits), true
	}
	return 0, false
}

// AsStrings returns a STRING array (shared slice).
func (v Value) AsStrings() ([]string, bool) {
	if !v.IsArray() {
		return nil, false
	}
	s, ok := v.arr.([]string)
	return s, ok
}

// AsFloat32s returns a FLOAT32 array (shared) or a FLOAT64 array converted.
func (v Value) AsFloat32s() ([]float32, bool) {
	if !v.IsArray() {
		return nil, false
	}
	switch a := v.arr.(type) {
	case []float32:
		return a, true
	case []float64:
		out := make([]float32, len(a))
		for i, x := range a {
			out[i] = float32(x)
		}
		return out, true
	}
	return nil, false
}

// AsInts returns a scalar integer as a 1-element slice or an integer array
// as int64s; ok=false if a value does not fit int64.
func (v Value) AsInts() ([]int64, bool) {
	if !v.valid {
		return nil, false
	}
	if v.Type != TypeArray {
		x, ok := v.AsInt()
		if !ok {
			return nil, false
		}
		return []int64{x}, true
	}
	if a, ok := v.arr.([]int64); ok {
		return append([]int64(nil), a...), true
	}
	out := make([]int64, v.Len())
	ok := convertInts(v.arr, func(i int, x int64, fits bool) bool {
		out[i] = x
		return fits
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// AsInt32s returns any integer array converted to int32 (INT32 arrays are
// shared); ok=false if a value does not fit.
func (v Value) AsInt32s() ([]int32, bool) {
	if !v.IsArray() {
		return nil, false
	}
	if a, ok := v.arr.([]int32); ok {
		return a, true
	}
	out := make([]int32, v.Len())
	ok := convertInts(v.arr, func(i int, x int64, fits bool) bool {
		if !fits || x < math.MinInt32 || x > math.MaxInt32 {
			return false
		}
		out[i] = int32(x)
		return true
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// convertInts calls fn for each element of an integer array; fits is false
// for a uint64 above MaxInt64. It stops and returns false when fn does, or
// when arr is not an integer array.
func convertInts(arr any, fn func(i int, x int64, fits bool) bool) bool {
	switch a := arr.(type) {
	case []uint8:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []int8:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []uint16:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []int16:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []uint32:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []int32:
		for i, x := range a {
			if !fn(i, int64(x), true) {
				return false
			}
		}
	case []uint64:
		for i, x := range a {
			if !fn(i, int64(x), x <= math.MaxInt64) {
				return false
			}
		}
	case []int64:
		for i, x := range a {
			if !fn(i, x, true) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// ValueOf converts a Go value to a Value. Accepted: string, bool, the sized
// integer types, float32, float64, slices of all of those, and Value itself.
func ValueOf(x any) (Value, error) {
	v := Value{valid: true}
	switch x := x.(type) {
	case Value:
		if !x.valid {
			return Value{}, fmt.Errorf("invalid Value")
		}
		return x, nil
	case string:
		v.Type, v.str = TypeString, x
	case bool:
		v.Type = TypeBool
		if x {
			v.bits = 1
		}
	case uint8:
		v.Type, v.bits = TypeUint8, uint64(x)
	case int8:
		v.Type, v.bits = TypeInt8, uint64(int64(x))
	case uint16:
		v.Type, v.bits = TypeUint16, uint64(x)
	case int16:
		v.Type, v.bits = TypeInt16, uint64(int64(x))
	case uint32:
		v.Type, v.bits = TypeUint32, uint64(x)
	case int32:
		v.Type, v.bits = TypeInt32, uint64(int64(x))
	case uint64:
		v.Type, v.bits = TypeUint64, x
	case int64:
		v.Type, v.bits = TypeInt64, uint64(x)
	case float32:
		v.Type, v.bits = TypeFloat32, math.Float64bits(float64(x))
	case float64:
		v.Type, v.bits = TypeFloat64, math.Float64bits(x)
	default:
		et, ok := arrayElemType(x)
		if !ok {
			return Value{}, fmt.Errorf("unsupported value type %T", x)
		}
		v.Type, v.ElemType, v.arr = TypeArray, et, x
	}
	return v, nil
}

func arrayElemType(x any) (ValueType, bool) {
	switch x.(type) {
	case []uint8:
		return TypeUint8, true
	case []int8:
		return TypeInt8, true
	case []uint16:
		return TypeUint16, true
	case []int16:
		return TypeInt16, true
	case []uint32:
		return TypeUint32, true
	case []int32:
		return TypeInt32, true
	case []float32:
		return TypeFloat32, true
	case []bool:
		return TypeBool, true
	case []string:
		return TypeString, true
	case []uint64:
		return TypeUint64, true
	case []int64:
		return TypeInt64, true
	case []float64:
		return TypeFloat64, true
	}
	return 0, false
}
