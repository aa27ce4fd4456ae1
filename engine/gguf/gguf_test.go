package gguf

// Round-trip, getter, writer and corruption tests on fixtures made in code.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"plexbench/kernels"
)

// allValues covers every scalar type and every array element type, with
// extreme values at both ends.
func allValues() []KV {
	vals := []struct {
		key string
		v   any
	}{
		{"general.architecture", "llama"},
		{"t.u8", uint8(255)}, {"t.i8", int8(-128)}, {"t.u16", uint16(65535)}, {"t.i16", int16(-32768)},
		{"t.u32", uint32(math.MaxUint32)}, {"t.i32", int32(math.MinInt32)},
		{"t.u64", uint64(math.MaxUint64)}, {"t.i64", int64(math.MinInt64)},
		{"t.f32", float32(-1.5e-38)}, {"t.f64", math.Inf(-1)}, {"t.bool", true}, {"t.boolf", false},
		{"t.str", "héllo\x00world"}, {"t.empty", ""},
		{"a.u8", []uint8{0, 1, 255}}, {"a.i8", []int8{-128, 0, 127}},
		{"a.u16", []uint16{0, 65535}}, {"a.i16", []int16{-32768, 32767}},
		{"a.u32", []uint32{0, math.MaxUint32}}, {"a.i32", []int32{math.MinInt32, -1, math.MaxInt32}},
		{"a.u64", []uint64{0, math.MaxUint64}}, {"a.i64", []int64{math.MinInt64, math.MaxInt64}},
		{"a.f32", []float32{0, -0.25, float32(math.Inf(1)), math.SmallestNonzeroFloat32}},
		{"a.f64", []float64{math.MaxFloat64, -math.SmallestNonzeroFloat64}},
		{"a.bool", []bool{true, false, true}}, {"a.str", []string{"", "a", strings.Repeat("x", 5000), "\xff"}},
		{"a.empty", []int32{}},
	}
	out := make([]KV, len(vals))
	for i, x := range vals {
		v, err := ValueOf(x.v)
		if err != nil {
			panic(err)
		}
		out[i] = KV{x.key, v}
	}
	return out
}

type fixtureTensor struct {
	name string
	typ  kernels.Type
	dims []int64
}

var fixtureTensors = []fixtureTensor{
	{"token_embd.weight", kernels.F32, []int64{8, 5}},
	{"empty", kernels.BF16, []int64{0, 4}},
	{"scalar", kernels.F32, nil},
	{"blk.0.attn_q.weight", kernels.F16, []int64{3, 2}},
	{"blk.0.ffn_up.weight", kernels.Q4_0, []int64{64, 3}},
	{"blk.0.ffn_down.weight", kernels.Q8_0, []int64{32, 2, 2}},
	{"blk.0.ffn_gate_exps.weight", kernels.Q4_K, []int64{256, 2, 1, 2}},
	{"output.weight", kernels.Q6_K, []int64{256, 1}},
}

// fixture builds a writer holding allValues and fixtureTensors filled with
// seeded random bytes; it returns the tensors' data by name.
func fixture(t testing.TB, seed uint64) (*Writer, map[string][]byte) {
	t.Helper()
	w := NewWriter()
	for _, kv := range allValues() {
		w.Set(kv.Key, kv.Value)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	data := map[string][]byte{}
	for _, ft := range fixtureTensors {
		size, err := tensorSize(ft.typ, ft.dims)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if err := w.AddTensor(ft.name, ft.typ, ft.dims, b); err != nil {
			t.Fatal(err)
		}
		data[ft.name] = b
	}
	return w, data
}

func fixtureBytes(t testing.TB) []byte {
	t.Helper()
	w, _ := fixture(t, 1)
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 1, 64, 4096} {
		w, data := fixture(t, uint64(align))
		if align != 0 {
			w.Set("general.alignment", align)
		}
		path := filepath.Join(t.TempDir(), "m.gguf")
		if err := w.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		wantAlign := int64(align)
		if align == 0 {
			wantAlign = DefaultAlignment
		}
		if f.Version != 3 || f.Alignment != wantAlign || f.DataOffset%wantAlign != 0 {
			t.Errorf("align %d: version %d alignment %d data offset %d", align, f.Version, f.Alignment, f.DataOffset)
		}
		want := allValues()
		if align != 0 {
			v, _ := ValueOf(align)
			want = append(want, KV{"general.alignment", v})
		}
		if len(f.KVs) != len(want) {
			t.Fatalf("align %d: %d KVs, want %d", align, len(f.KVs), len(want))
		}
		for i, kv := range want {
			got := f.KVs[i]
			if got.Key != kv.Key || got.Value.Type != kv.Value.Type || got.Value.ElemType != kv.Value.ElemType ||
				!reflect.DeepEqual(got.Value.Interface(), kv.Value.Interface()) {
				t.Errorf("KV %d: got %q %s/%s %#v, want %q %s/%s %#v", i, got.Key, got.Value.Type, got.Value.ElemType,
					got.Value.Interface(), kv.Key, kv.Value.Type, kv.Value.ElemType, kv.Value.Interface())
			}
		}
		if len(f.Tensors) != len(fixtureTensors) {
			t.Fatalf("%d tensors, want %d", len(f.Tensors), len(fixtureTensors))
		}
		for i, ft := range fixtureTensors {
			ti := &f.Tensors[i]
			if ti.Name != ft.name || ti.Type != ft.typ || len(ti.Dims) != len(ft.dims) {
				t.Errorf("tensor %d: %q %s %v, want %q %s %v", i, ti.Name, ti.Type, ti.Dims, ft.name, ft.typ, ft.dims)
			}
			for j := range ft.dims {
				if ti.Dims[j] != ft.dims[j] {
					t.Errorf("tensor %q dims %v, want %v", ti.Name, ti.Dims, ft.dims)
				}
			}
			if ti.Offset%wantAlign != 0 {
				t.Errorf("tensor %q offset %d not aligned to %d", ti.Name, ti.Offset, wantAlign)
			}
			if got := f.TensorData(ti); !bytes.Equal(got, data[ft.name]) {
				t.Errorf("tensor %q: data differs (%d vs %d bytes)", ti.Name, len(got), len(data[ft.name]))
			}
			if p, ok := f.Tensor(ft.name); !ok || p != ti {
				t.Errorf("Tensor(%q) lookup failed", ft.name)
			}
		}
		if f.Tensors[0].Elements() != 40 || f.Tensors[2].Elements() != 1 || f.Tensors[1].Elements() != 0 {
			t.Errorf("Elements: %d %d %d", f.Tensors[0].Elements(), f.Tensors[2].Elements(), f.Tensors[1].Elements())
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if f.Close() != nil {
			t.Error("second Close failed")
		}
	}
}

func TestGetters(t *testing.T) {
	f, err := Parse(bytes.NewReader(fixtureBytes(t)), int64(len(fixtureBytes(t))), "fixture")
	if err != nil {
		t.Fatal(err)
	}
	if f.TensorData(&f.Tensors[0]) != nil {
		t.Error("TensorData after Parse should be nil")
	}
	if f.Architecture() != "llama" || !f.Has("t.u8") || f.Has("nope") {
		t.Error("Architecture/Has")
	}
	check := func(name string, got, want any, ok, wantOK bool) {
		t.Helper()
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s = %v, %v; want %v, %v", name, got, ok, want, wantOK)
		}
	}
	u, ok := f.Uint("t.u64")
	check("Uint(u64)", u, uint64(math.MaxUint64), ok, true)
	u, ok = f.Uint("t.i8")
	check("Uint(negative)", u, nil, ok, false)
	u, ok = f.Uint("t.str")
	check("Uint(string)", u, nil, ok, false)
	u, ok = f.Uint("missing")
	check("Uint(missing)", u, nil, ok, false)
	i, ok := f.Int("t.i16")
	check("Int(i16)", i, int64(-32768), ok, true)
	i, ok = f.Int("t.u32")
	check("Int(u32)", i, int64(math.MaxUint32), ok, true)
	i, ok = f.Int("t.u64")
	check("Int(u64 max)", i, nil, ok, false)
	i, ok = f.Int("t.f32")
	check("Int(float)", i, nil, ok, false)
	x, ok := f.Float("t.f32")
	check("Float(f32)", x, float64(float32(-1.5e-38)), ok, true)
	x, ok = f.Float("t.i8")
	check("Float(i8)", x, -128.0, ok, true)
	x, ok = f.Float("t.bool")
	check("Float(bool)", x, nil, ok, false)
	b, ok := f.Bool("t.bool")
	check("Bool", b, true, ok, true)
	b, ok = f.Bool("t.u8")
	check("Bool(u8)", b, nil, ok, false)
	s, ok := f.String("t.str")
	check("String", s, "héllo\x00world", ok, true)
	s, ok = f.String("a.str")
	check("String(array)", s, nil, ok, false)
	ss, ok := f.Strings("a.str")
	check("Strings", ss, []string{"", "a", strings.Repeat("x", 5000), "\xff"}, ok, true)
	ss, ok = f.Strings("a.i32")
	check("Strings(i32)", ss, nil, ok, false)
	fs, ok := f.Float32s("a.f32")
	check("Float32s", fs, []float32{0, -0.25, float32(math.Inf(1)), math.SmallestNonzeroFloat32}, ok, true)
	fs, ok = f.Float32s("a.u8")
	check("Float32s(u8)", fs, nil, ok, false)
	i32, ok := f.Int32s("a.u16")
	check("Int32s(u16)", i32, []int32{0, 65535}, ok, true)
	i32, ok = f.Int32s("a.i8")
	check("Int32s(i8)", i32, []int32{-128, 0, 127}, ok, true)
	i32, ok = f.Int32s("a.u32")
	check("Int32s(u32 overflow)", i32, nil, ok, false)
	i32, ok = f.Int32s("t.i32")
	check("Int32s(scalar)", i32, nil, ok, false)
	i64, ok := f.Ints("t.u16")
	check("Ints(scalar)", i64, []int64{65535}, ok, true)
	i64, ok = f.Ints("a.i32")
	check("Ints(array)", i64, []int64{math.MinInt32, -1, math.MaxInt32}, ok, true)
	i64, ok = f.Ints("a.u64")
	check("Ints(u64 overflow)", i64, nil, ok, false)
	i64, ok = f.Ints("a.f32")
	check("Ints(float array)", i64, nil, ok, false)
	i64, ok = f.Ints("a.empty")
	check("Ints(empty)", i64, []int64{}, ok, true)
	if v, _ := f.Value("a.str"); !v.IsArray() || v.Len() != 4 || v.ElemType != TypeString {
		t.Errorf("Value(a.str) = %v", v)
	}
}

func TestWriterErrors(t *testing.T) {
	w := NewWriter()
	if err := w.AddTensor("a", kernels.F32, []int64{4}, make([]byte, 15)); err == nil {
		t.Error("wrong data size accepted")
	}
	if err := w.AddTensor("a", kernels.Q4_0, []int64{31}, make([]byte, 18)); err == nil {
		t.Error("ne[0] not a block multiple accepted")
	}
	if err := w.AddTensor(strings.Repeat("n", 64), kernels.F32, []int64{1}, make([]byte, 4)); err == nil {
		t.Error("64-byte name accepted")
	}
	if err := w.AddTensor("a", kernels.Type(4), []int64{1}, make([]byte, 4)); err == nil {
		t.Error("unknown type accepted")
	}
	if err := w.AddTensor("a", kernels.F32, []int64{1, 1, 1, 1, 1}, make([]byte, 4)); err == nil {
		t.Error("5 dims accepted")
	}
	if err := w.AddTensor("a", kernels.F32, []int64{-1}, nil); err == nil {
		t.Error("negative dim accepted")
	}
	if err := w.AddTensor("a", kernels.F32, []int64{1}, make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("a", kernels.F32, []int64{1}, make([]byte, 4)); err == nil {
		t.Error("duplicate tensor accepted")
	}
	for _, bad := range []any{uint32(48), uint32(0), int32(64), uint64(64)} {
		w.Set("general.alignment", bad)
		if _, err := w.WriteTo(io.Discard); err == nil {
			t.Errorf("general.alignment %T(%v) accepted", bad, bad)
		}
	}
	w2 := NewWriter()
	w2.Set("k", 3) // Go int is not a GGUF type: reported at WriteTo
	if _, err := w2.WriteTo(io.Discard); err == nil {
		t.Error("int value accepted")
	}
	w3 := NewWriter()
	w3.Set("", "x")
	if _, err := w3.WriteTo(io.Discard); err == nil {
		t.Error("empty key accepted")
	}
}

func TestWriterOrderAndReplace(t *testing.T) {
	w := NewWriter()
	w.Set("a", uint32(1))
	w.Set("b", "x")
	w.Set("c", true)
	w.Set("a", []string{"y"}) // replacing keeps position, changes type
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "order")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range f.KVs {
		keys = append(keys, kv.Key)
	}
	if !reflect.DeepEqual(keys, []string{"a", "b", "c"}) {
		t.Errorf("keys %v", keys)
	}
	if s, ok := f.Strings("a"); !ok || len(s) != 1 || s[0] != "y" {
		t.Errorf("replaced a = %v %v", s, ok)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _ := fixture(t, 2)
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	bad := NewWriter()
	bad.Set("x", struct{}{})
	if err := bad.WriteFile(path); err == nil {
		t.Error("failed write reported success")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("leftover files: %v", ents)
	}
	f, err := Open(path) // the failed write must not have replaced the good file
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// limitedReaderAt serves bytes before limit and fails on anything at or
// beyond it, as a file whose tensor region is unreadable would.
type limitedReaderAt struct {
	b     []byte
	limit int64
}

var errBeyond = errors.New("read beyond limit")

func (r *limitedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.limit {
		return 0, errBeyond
	}
	n := copy(p, r.b[off:min(r.limit, int64(len(r.b)))])
	if n < len(p) {
		return n, errBeyond
	}
	return n, nil
}

// TestParseIgnoresTensorData: the index parse needs no byte of the data
// blob, and its result does not depend on them.
func TestParseIgnoresTensorData(t *testing.T) {
	paths := []string{}
	dir := t.TempDir()
	w, _ := fixture(t, 3)
	p := filepath.Join(dir, "fixture.gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p)
	if real, _ := filepath.Glob(filepath.Join(dataDir, "models/*q4_0.gguf")); len(real) > 0 {
		paths = append(paths, real[0])
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := Parse(bytes.NewReader(b), int64(len(b)), path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(&limitedReaderAt{b: b, limit: ref.DataOffset}, int64(len(b)), path)
		if err != nil {
			t.Fatalf("%s: parse with unreadable data blob: %v", path, err)
		}
		if !reflect.DeepEqual(got.Tensors, ref.Tensors) || len(got.KVs) != len(ref.KVs) {
			t.Errorf("%s: results differ with unreadable data blob", path)
		}
		// Scrambled data bytes give the identical index.
		c := append([]byte(nil), b...)
		for i := ref.DataOffset; i < int64(len(c)); i++ {
			c[i] ^= 0xA5
		}
		got, err = parseBytes(c, path)
		if err != nil || !reflect.DeepEqual(got.Tensors, ref.Tensors) {
			t.Errorf("%s: scrambled data changed the parse: %v", path, err)
		}
	}
}

// raw builds GGUF bytes field by field, for layouts the Writer refuses to make.
type raw struct{ bytes.Buffer }

func (r *raw) u32(x uint32) *raw { binary.Write(r, binary.LittleEndian, x); return r }
func (r *raw) u64(x uint64) *raw { binary.Write(r, binary.LittleEndian, x); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) header(version uint32, nTensors, nKV uint64) *raw {
	r.WriteString("GGUF")
	return r.u32(version).u64(nTensors).u64(nKV)
}
func (r *raw) kvU32(key string, v uint32) *raw { return r.str(key).u32(uint32(TypeUint32)).u32(v) }
func (r *raw) tensor(name string, typ kernels.Type, off uint64, dims ...int64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(uint64(d))
	}
	return r.u32(uint32(typ)).u64(off)
}

// withData pads to align and appends n zero bytes of tensor data.
func (r *raw) withData(align, n int) []byte {
	for r.Len()%align != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, n))
	return r.Bytes()
}

// locate returns the offset just past the first occurrence of the
// length-prefixed string s in b.
func locate(t *testing.T, b []byte, s string) int {
	t.Helper()
	var pre [8]byte
	binary.LittleEndian.PutUint64(pre[:], uint64(len(s)))
	i := bytes.Index(b, append(pre[:], s...))
	if i < 0 {
		t.Fatalf("%q not found", s)
	}
	return i + 8 + len(s)
}

func TestCorrupt(t *testing.T) {
	good := fixtureBytes(t)
	ref, err := parseBytes(good, "good")
	if err != nil {
		t.Fatal(err)
	}
	patch := func(off int, v any) []byte {
		c := append([]byte(nil), good...)
		switch v := v.(type) {
		case uint32:
			binary.LittleEndian.PutUint32(c[off:], v)
		case uint64:
			binary.LittleEndian.PutUint64(c[off:], v)
		case byte:
			c[off] = v
		}
		return c
	}
	arch := locate(t, good, "general.architecture")
	strArr := locate(t, good, "a.str")           // → type, elem type, count
	u8 := locate(t, good, "t.u8")                // → type, value
	q4 := locate(t, good, "blk.0.ffn_up.weight") // → n_dims, dims, type, offset
	q4Type := q4 + 4 + 2*8
	q4Off := q4Type + 4
	q4Idx := 4 // index of blk.0.ffn_up.weight in fixtureTensors
	lastEnd := ref.DataOffset + ref.Tensors[len(ref.Tensors)-1].Offset + ref.Tensors[len(ref.Tensors)-1].Size

	cases := []struct {
		name string
		b    []byte
		want error
		msg  string // the error must mention this
	}{
		{"empty", nil, ErrTruncated, "needs"},
		{"bad magic", patch(0, byte('X')), ErrBadMagic, "XGUF"},
		{"lowercase magic", []byte("gguf\x03\x00\x00\x00" + strings.Repeat("\x00", 16)), ErrBadMagic, "gguf"},
		{"version 0", patch(4, uint32(0)), ErrVersion, "byte-swapped"},
		{"version 1", patch(4, uint32(1)), ErrVersion, "no longer supported"},
		{"version 4", patch(4, uint32(4)), ErrVersion, "version 4"},
		{"version byte-swapped", patch(4, uint32(3<<24)), ErrVersion, "byte-swapped"},
		{"negative tensor count", patch(8, uint64(1<<63)), ErrCorrupt, "tensor count"},
		{"negative KV count", patch(16, ^uint64(0)), ErrCorrupt, "KV count"},
		{"huge tensor count", patch(8, uint64(1<<40)), ErrTruncated, "tensor count"},
		{"huge KV count", patch(16, uint64(1<<40)), ErrTruncated, "KV count"},
		{"huge key length", patch(24, uint64(1<<62)), ErrTruncated, "key of KV 0 length"},
		{"huge string length", patch(arch+4, uint64(1<<60)), ErrTruncated, "\"general.architecture\" length"},
		{"negative string length", patch(arch+4, ^uint64(0)), ErrCorrupt, "\"general.architecture\" length"},
		{"huge array count", patch(strArr+8, uint64(1<<50)), ErrTruncated, "\"a.str\" count"},
		{"negative array count", patch(strArr+8, uint64(1<<63)), ErrCorrupt, "\"a.str\" count"},
		{"nested array", patch(strArr+4, uint32(TypeArray)), ErrCorrupt, "nested array"},
		{"unknown element type", patch(strArr+4, uint32(13)), ErrCorrupt, "unknown element type 13"},
		{"unknown value type", patch(u8, uint32(13)), ErrCorrupt, "unknown value type 13"},
		{"unknown tensor type", patch(q4Type, uint32(4)), ErrCorrupt, "unknown ggml type 4"},
		{"tensor type out of range", patch(q4Type, uint32(1000)), ErrCorrupt, "unknown ggml type 1000"},
		{"n_dims 5", patch(q4, uint32(5)), ErrCorrupt, "n_dims 5"},
		{"negative dim", patch(q4+4+8, uint64(1<<63)), ErrCorrupt, "ne[1]"},
		{"ne0 not block multiple", patch(q4+4, uint64(33)), ErrCorrupt, "ne[0] = 33"},
		{"misaligned offset", patch(q4Off, uint64(ref.Tensors[q4Idx].Offset+1)), ErrCorrupt, "expected"},
		{"overlapping tensors", patch(q4Off, uint64(0)), ErrCorrupt, "has offset 0, expected"},
		{"gap between tensors", patch(q4Off, uint64(ref.Tensors[q4Idx].Offset+32)), ErrCorrupt, "expected"},
		{"data past EOF", good[:lastEnd-1], ErrTruncated, "past end of file"},
		{"data offset past EOF", good[:ref.DataOffset], ErrTruncated, "past end of file"},
		{"empty key", new(raw).header(3, 0, 1).kvU32("", 1).Bytes(), ErrCorrupt, "empty key"},
		{"duplicate key", new(raw).header(3, 0, 2).kvU32("k", 1).kvU32("k", 2).Bytes(), ErrCorrupt, "duplicate key"},
		{"alignment not power of two", new(raw).header(3, 0, 1).kvU32("general.alignment", 48).Bytes(), ErrCorrupt, "power of two"},
		{"alignment zero", new(raw).header(3, 0, 1).kvU32("general.alignment", 0).Bytes(), ErrCorrupt, "power of two"},
		{"alignment wrong type", new(raw).header(3, 0, 1).str("general.alignment").u32(uint32(TypeInt32)).u32(32).Bytes(), ErrCorrupt, "INT32"},
		{"name 64 bytes", new(raw).header(3, 1, 0).tensor(strings.Repeat("n", 64), kernels.F32, 0, 1).withData(32, 4), ErrCorrupt, "name length 64"},
		{"duplicate tensor", new(raw).header(3, 2, 0).tensor("a", kernels.F32, 0, 1).tensor("a", kernels.F32, 32, 1).withData(32, 36), ErrCorrupt, "duplicate tensor"},
		{"element count overflow", new(raw).header(3, 1, 0).tensor("a", kernels.F32, 0, 1<<32, 1<<32, 1<<32).withData(32, 4), ErrCorrupt, "element count"},
		{"byte size overflow", new(raw).header(3, 1, 0).tensor("a", kernels.F64, 0, 1<<31, 1<<31).withData(32, 4), ErrCorrupt, "byte size"},
		{"huge tensor past EOF", new(raw).header(3, 1, 0).tensor("a", kernels.F32, 0, 1<<40).withData(32, 4), ErrTruncated, "past end of file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"bytes", "readerAt", "open"} {
				var err error
				switch via {
				case "bytes":
					_, err = parseBytes(tc.b, tc.name)
				case "readerAt":
					_, err = Parse(bytes.NewReader(tc.b), int64(len(tc.b)), tc.name)
				case "open":
					p := filepath.Join(t.TempDir(), "c.gguf")
					if werr := os.WriteFile(p, tc.b, 0o644); werr != nil {
						t.Fatal(werr)
					}
					var f *File
					f, err = Open(p)
					if err == nil {
						f.Close()
					}
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("%s: got %v, want %v", via, err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("%s: error %q does not mention %q", via, err, tc.msg)
				}
				if msg := err.Error(); !strings.HasPrefix(msg, "gguf ") || strings.Contains(msg, "\n") {
					t.Errorf("%s: error %q is not one line starting with \"gguf <path>:\"", via, msg)
				}
			}
		})
	}
}

// TestTruncateEverywhere cuts the fixture at every length short of the
// last tensor's end; each prefix must fail as truncated, never panic.
func TestTruncateEverywhere(t *testing.T) {
	good := fixtureBytes(t)
	ref, err := parseBytes(good, "good")
	if err != nil {
		t.Fatal(err)
	}
	last := ref.Tensors[len(ref.Tensors)-1]
	lastEnd := ref.DataOffset + last.Offset + last.Size
	for n := int64(0); n < lastEnd; n++ {
		if _, err := parseBytes(good[:n], "cut"); !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: got %v, want ErrTruncated", n, err)
		}
		if n < ref.DataOffset+64 {
			if _, err := Parse(bytes.NewReader(good[:n]), n, "cut"); !errors.Is(err, ErrTruncated) {
				t.Fatalf("Parse cut at %d: got %v, want ErrTruncated", n, err)
			}
		}
	}
	// Trailing padding after the last tensor is optional, as in llama.cpp.
	if _, err := parseBytes(good[:lastEnd], "cut"); err != nil {
		t.Errorf("file without trailing padding: %v", err)
	}
}

// TestVersion2 accepts the v2 layout, which is identical to v3.
func TestVersion2(t *testing.T) {
	b := new(raw).header(2, 1, 1).kvU32("k", 7).tensor("a", kernels.F32, 0, 2).withData(32, 8)
	f, err := parseBytes(b, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := f.Uint("k"); f.Version != 2 || k != 7 || f.Tensors[0].Size != 8 {
		t.Errorf("v2: version %d k %d size %d", f.Version, k, f.Tensors[0].Size)
	}
}
