package kernels

// Tests of the AVX2 panel repacks (repack_avx2_amd64.s) against the Go
// repacks, byte for byte: random rows (every byte value, so every level,
// scale, min and binary16 scale pattern, NaNs included), many block
// counts and panel positions, guard bytes around the panel; every
// binary16 scale once; and the panels the repacks decline.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// repackCase is one weight type and panel format an AVX2 repack takes.
type repackCase struct {
	t Type
	f q8Format
}

func (c repackCase) String() string {
	switch {
	case c.t.BlockSize() != qk:
		return c.t.String()
	case c.f.signed:
		return c.t.String() + "/signed"
	case c.f.min:
		return c.t.String()
	}
	return fmt.Sprintf("%v/bias%d", c.t, c.f.bias)
}

var repackAVX2Cases = []repackCase{
	{Q8_0, q8Format{signed: true}}, {Q8_0, q8Format{bias: 128}}, {Q4_0, q8Format{bias: 8}},
	{Q4_K, q8Format{}}, {Q5_K, q8Format{}}, {Q6_K, q8Format{}},
	{Q5_0, q8Format{bias: 16}}, {IQ4_NL, q8Format{signed: true}}, {IQ4_NL, q8Format{bias: 128}}, {MXFP4, q8Format{bias: 12}},
	{Q4_1, q8Format{min: true}}, {Q5_1, q8Format{min: true}},
	{Q2_K, q8Format{}}, {Q3_K, q8Format{}}, {IQ4_XS, q8Format{}},
}

// repackGo is the Go repack of c's panel at r0 (the specification).
func (c repackCase) repackGo(w *Matrix, r0 int, dst []byte) {
	if s := descOf(c.t).simd; s.fam == famK {
		repackK(w, r0, s.layout, dst)
		return
	}
	if c.f.min {
		repackQ8Min(w, r0, dst)
		return
	}
	repackQ8(w, r0, c.f, dst)
}

// panelBytes is the size of c's panel for nb blocks.
func (c repackCase) panelBytes(nb int) int {
	if s := descOf(c.t).simd; s.fam == famK {
		return nb * s.layout.bytes
	}
	return nb * c.f.panelBlock()
}

// checkRepackAVX2 compares repackAVX2 with the Go repack for the panel at
// r0, the panel written between guard bytes over a buffer of junk.
func checkRepackAVX2(t *testing.T, rng *rand.Rand, c repackCase, w *Matrix, r0 int) {
	t.Helper()
	nb := w.Cols / c.t.BlockSize()
	n := c.panelBytes(nb)
	want := make([]byte, n)
	c.repackGo(w, r0, want)
	const guard = 64
	buf := make([]byte, guard+n+guard)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	before := bytes.Clone(buf)
	if !repackAVX2(w, r0, c.f, buf[guard:guard+n:guard+n]) {
		t.Fatalf("%v: %d×%d, r0 %d: declined a full panel", c, w.Rows, w.Cols, r0)
	}
	if !bytes.Equal(buf[:guard], before[:guard]) || !bytes.Equal(buf[guard+n:], before[guard+n:]) {
		t.Fatalf("%v: %d×%d, r0 %d: wrote outside the panel", c, w.Rows, w.Cols, r0)
	}
	if got := buf[guard : guard+n]; !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Fatalf("%v: %d×%d, r0 %d: byte %d (block %d, offset %d) is %#02x, want %#02x",
			c, w.Rows, w.Cols, r0, i, i/(n/nb), i%(n/nb), got[i], want[i])
	}
}

func TestRepackAVX2(t *testing.T) {
	requireAVX2(t, "AVX2 panel repacks")
	rng := rand.New(rand.NewPCG(81, 82))
	for _, c := range repackAVX2Cases {
		t.Run(c.String(), func(t *testing.T) {
			for _, nb := range []int{1, 2, 3, 5, 8, 13, 32, 67} {
				for _, rows := range []int{16, 37, 64} {
					w := &Matrix{Type: c.t, Rows: rows, Cols: nb * c.t.BlockSize(), Data: make([]byte, rows*nb*c.t.BlockBytes())}
					for i := range w.Data {
						w.Data[i] = byte(rng.Uint32())
					}
					// Whole rows of extreme bytes: all levels, scales and
					// mins at their ends of the range.
					for r, v := range []byte{0x00, 0xff, 0x80, 0x7f, 0x3f, 0xc0} {
						if r < rows {
							row := w.Row(rows - 1 - r)
							for i := range row {
								row[i] = v
							}
						}
					}
					for r0 := 0; r0+panelRows <= rows; r0 += panelRows {
						checkRepackAVX2(t, rng, c, w, r0)
					}
					checkRepackAVX2(t, rng, c, w, rows-panelRows) // a panel off the 16-row grid
				}
			}
		})
	}
}

// TestRepackAVX2Scales repacks panels whose binary16 scales (d and, for
// the types that have one, dmin or m) take every one of the 65536 values, NaNs and
// subnormals included.
func TestRepackAVX2Scales(t *testing.T) {
	requireAVX2(t, "AVX2 panel repacks")
	rng := rand.New(rand.NewPCG(83, 84))
	const nb = 65536 / panelRows
	for _, c := range repackAVX2Cases {
		t.Run(c.String(), func(t *testing.T) {
			w := &Matrix{Type: c.t, Rows: panelRows, Cols: nb * c.t.BlockSize(), Data: make([]byte, panelRows*nb*c.t.BlockBytes())}
			for i := range w.Data {
				w.Data[i] = byte(rng.Uint32())
			}
			bb := c.t.BlockBytes()
			for r := range panelRows {
				row := w.Row(r)
				for b := range nb {
					v := uint16(b*panelRows + r)
					switch c.t {
					case Q6_K:
						binary.LittleEndian.PutUint16(row[b*bb+208:], v)
					case Q3_K:
						binary.LittleEndian.PutUint16(row[b*bb+108:], v)
					case Q2_K:
						binary.LittleEndian.PutUint16(row[b*bb+80:], v)
						binary.LittleEndian.PutUint16(row[b*bb+82:], v*40503+1)
					case MXFP4: // the e8m0 exponent, all 256 values
						row[b*bb] = byte(v)
					case Q4_K, Q5_K, Q4_1, Q5_1:
						binary.LittleEndian.PutUint16(row[b*bb:], v)
						binary.LittleEndian.PutUint16(row[b*bb+2:], v*40503+1) // another permutation of all values
					default:
						binary.LittleEndian.PutUint16(row[b*bb:], v)
					}
				}
			}
			checkRepackAVX2(t, rng, c, w, 0)
		})
	}
}

// TestRepackAVX2Declines checks the panels and formats the AVX2 repacks
// leave to the Go repacks.
func TestRepackAVX2Declines(t *testing.T) {
	requireAVX2(t, "AVX2 panel repacks")
	dst := make([]byte, 8*kLayoutCorr.bytes)
	for _, c := range []repackCase{
		{Q4_0, q8Format{signed: true}}, {Q8_0, q8Format{bias: 8}},
		{Q5_0, q8Format{signed: true}}, {IQ4_NL, q8Format{bias: 8}}, {MXFP4, q8Format{bias: 0}}, {Q4_1, q8Format{}},
		{Q4_0, q8Format{bias: 8, min: true}}, {F16, q8Format{}},
	} {
		w := &Matrix{Type: c.t, Rows: 32, Cols: 2 * qkK, Data: make([]byte, 32*c.t.RowBytes(2*qkK))}
		if repackAVX2(w, 0, c.f, dst) {
			t.Errorf("%v: took a panel it has no repack for", c)
		}
	}
	for _, c := range repackAVX2Cases {
		w := &Matrix{Type: c.t, Rows: 37, Cols: 2 * qkK, Data: make([]byte, 37*c.t.RowBytes(2*qkK))}
		for _, r0 := range []int{22, 32, -1} {
			if repackAVX2(w, r0, c.f, dst) {
				t.Errorf("%v: took the partial panel at r0 %d of 37 rows", c, r0)
			}
		}
	}
}

// BenchmarkRepackPanel measures one 16-row panel repack (ns/op) of a
// 2048-column matrix (the expert16 shape's rows), the Go repack against
// the AVX2 one.
func BenchmarkRepackPanel(b *testing.B) {
	const cols = 2048
	for _, c := range repackAVX2Cases {
		rng := rand.New(rand.NewPCG(85, 86))
		w := &Matrix{Type: c.t, Rows: panelRows, Cols: cols, Data: make([]byte, panelRows*c.t.RowBytes(cols))}
		for i := range w.Data {
			w.Data[i] = byte(rng.Uint32())
		}
		dst := make([]byte, c.panelBytes(cols/c.t.BlockSize()))
		b.Run(c.String()+"/go", func(b *testing.B) {
			for b.Loop() {
				c.repackGo(w, 0, dst)
			}
			b.SetBytes(int64(len(dst)))
		})
		b.Run(c.String()+"/avx2", func(b *testing.B) {
			requireAVX2(b, "AVX2 panel repacks")
			for b.Loop() {
				repackAVX2(w, 0, c.f, dst)
			}
			b.SetBytes(int64(len(dst)))
		})
	}
}
