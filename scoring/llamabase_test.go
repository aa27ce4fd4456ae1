package scoring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// specBase is llama.cpp's base file as read by an independent reader
// written from ../shared/spec/perplexity-kld.md §3, not from llamabase.go.
type specBase struct {
	c, v, n int
	tokens  []int32
	scale   []float32 // per row
	minlp   []float32
	q       [][]uint16
	pad     []uint16 // the pad word of each row (odd V only)
}

func readSpecBase(t *testing.T, raw []byte) specBase {
	t.Helper()
	if len(raw) < 20 || string(raw[:8]) != "_logits_" {
		t.Fatalf("no _logits_ header in %d bytes", len(raw))
	}
	le := binary.LittleEndian
	s := specBase{c: int(int32(le.Uint32(raw[8:]))), v: int(int32(le.Uint32(raw[12:]))), n: int(int32(le.Uint32(raw[16:])))}
	nv := s.v + 4
	if s.v%2 == 1 {
		nv = s.v + 5
	}
	rows := s.c - 1 - s.c/2
	if want := 20 + 4*s.n*s.c + 2*nv*rows*s.n; len(raw) != want {
		t.Fatalf("file is %d bytes, spec size for C=%d V=%d n=%d is %d", len(raw), s.c, s.v, s.n, want)
	}
	off := 20
	for range s.n * s.c {
		s.tokens = append(s.tokens, int32(le.Uint32(raw[off:])))
		off += 4
	}
	for range rows * s.n {
		s.scale = append(s.scale, math.Float32frombits(uint32(le.Uint16(raw[off:]))|uint32(le.Uint16(raw[off+2:]))<<16))
		s.minlp = append(s.minlp, math.Float32frombits(uint32(le.Uint16(raw[off+4:]))|uint32(le.Uint16(raw[off+6:]))<<16))
		q := make([]uint16, s.v)
		for j := range q {
			q[j] = le.Uint16(raw[off+8+2*j:])
		}
		s.q = append(s.q, q)
		if s.v%2 == 1 {
			s.pad = append(s.pad, le.Uint16(raw[off+8+2*s.v:]))
		}
		off += 2 * nv
	}
	return s
}

// chunkInput is chunk i's forward-pass input: its tokens with BOS over the
// first when the vocab adds BOS.
func chunkInput(tokens []int32, i, c int, bos int32, addBOS bool) []int32 {
	in := append([]int32(nil), tokens[i*c:(i+1)*c]...)
	if addBOS {
		in[0] = bos
	}
	return in
}

// TestLlamaBaseWrittenMatchesSpec writes a llama.cpp base from a run (odd
// vocabulary, BOS, rows wider than 16 nats) and checks it with the spec
// reader: layout, tokens, and every row decoding to the brute-force
// log-probabilities within half a quantization step.
func TestLlamaBaseWrittenMatchesSpec(t *testing.T) {
	f := newFake(37, 8, 11, 0)
	f.addBOS, f.scale = true, 3
	tokens := randomTokens(8, 16*5+7, 37)
	path := filepath.Join(t.TempDir(), "llama.kld")
	rep, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 16, KLDBaseOut: path, KLDBaseFormat: BaseFormatLlama})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KLDBaseFormat != BaseFormatLlama || rep.KLDBaseTopK != 37 {
		t.Fatalf("report base format %q top-k %d", rep.KLDBaseFormat, rep.KLDBaseTopK)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := readSpecBase(t, raw)
	if s.c != 16 || s.v != 37 || s.n != 5 || !slicesEqual(s.tokens, tokens[:80]) {
		t.Fatalf("header C=%d V=%d n=%d, tokens equal %v", s.c, s.v, s.n, slicesEqual(s.tokens, tokens[:80]))
	}
	clamped := 0
	for i := range s.n {
		in := chunkInput(tokens, i, 16, f.bos, true)
		for r := range 16 - 1 - 8 {
			row := f.fullLogits(in, 8+r)
			k := i*7 + r
			if s.pad[k] != 0 {
				t.Fatalf("row %d: pad word %d", k, s.pad[k])
			}
			lse := logSumExp64(row)
			mx := float64(slicesMax(row))
			for j, l := range row {
				got := float64(s.scale[k]*float32(s.q[k][j])) + float64(s.minlp[k])
				want := float64(l) - lse
				if float64(l) <= mx-16 {
					clamped++
					want = mx - 16 - lse // stored as the clamped minimum
				}
				if math.Abs(got-want) > float64(s.scale[k])/2+1e-5 {
					t.Fatalf("row %d id %d: decodes to %v, log-prob %v (scale %v)", k, j, got, want, s.scale[k])
				}
			}
		}
	}
	if clamped == 0 {
		t.Fatal("no row exercised the 16-nat clamp; raise the fake's scale")
	}
}

func slicesEqual(a, b []int32) bool {
	return len(a) == len(b) && string(int32Bytes(a)) == string(int32Bytes(b))
}

func int32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func slicesMax(v []float32) float32 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestLlamaBaseCompare compares runs against a llama.cpp base: the model
// itself gives only the 16-bit floor, a perturbed one the full-vocabulary
// KL(base‖run) of the brute-force rows.
func TestLlamaBaseCompare(t *testing.T) {
	a := newFake(40, 6, 21, 0)
	b := a.withNoise(0.15, 22)
	tokens := randomTokens(9, 900, 40)
	path := filepath.Join(t.TempDir(), "a.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: path, KLDBaseFormat: BaseFormatLlama}); err != nil {
		t.Fatal(err)
	}
	self, err := Run(context.Background(), a, Request{KLDBase: path})
	if err != nil {
		t.Fatal(err)
	}
	if k := self.KLD; k.BaseFormat != BaseFormatLlama || k.TopK != 40 || math.Abs(k.MeanKLD) > 1e-6 || k.SameTop != 1 {
		t.Fatalf("self-compare against a llama.cpp base: %+v", k)
	}
	rep, err := Run(context.Background(), b, Request{KLDBase: path, Text: ""})
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := PlanWindows(len(tokens), Geometry{Ctx: 100})
	var sk float64
	n := 0
	for _, w := range plan.Windows {
		in := w.Input(tokens, nil)
		for p := w.FirstRow; p <= w.LastRow(); p++ {
			ra, rb := a.fullLogits(in, p), b.fullLogits(in, p)
			la, lb := logSumExp64(ra), logSumExp64(rb)
			for j := range ra {
				pa := float64(ra[j]) - la
				if pa > -16 {
					sk += math.Exp(pa) * (pa - (float64(rb[j]) - lb))
				}
			}
			n++
		}
	}
	if k := rep.KLD; k.Tokens != n || !close(k.MeanKLD, sk/float64(n), 2e-3, 2e-6) || k.MeanKLD < 1e-3 {
		t.Fatalf("mean KLD %v over %d tokens, brute force %v over %d", k.MeanKLD, k.Tokens, sk/float64(n), n)
	}
}

// TestLlamaBaseBadInput: a truncated base, one of another vocabulary and
// one of another token stream are each refused with the file's name.
func TestLlamaBaseBadInput(t *testing.T) {
	a := newFake(40, 6, 21, 0)
	tokens := randomTokens(9, 400, 40)
	dir := t.TempDir()
	path := filepath.Join(dir, "a.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: path, KLDBaseFormat: BaseFormatLlama}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	cut := filepath.Join(dir, "cut.kld")
	os.WriteFile(cut, raw[:len(raw)-3], 0o644)
	other := append([]int32(nil), tokens...)
	other[10]++
	for _, c := range []struct {
		eng  *fakeEngine
		req  Request
		is   error
		want string
	}{
		{a, Request{KLDBase: cut}, ErrBadBase, cut + ": llama.cpp base: "},
		{newFake(41, 6, 21, 0), Request{KLDBase: path}, ErrBaseMismatch, path + ": the llama.cpp base has a vocabulary of 40 entries, this model 41"},
		{a, Request{KLDBase: path, Tokens: other}, ErrBaseMismatch, path + ": token ids differ"},
		{a, Request{Tokens: tokens, Ctx: 100, Method: MethodSliding, KLDBaseOut: filepath.Join(dir, "s.kld"), KLDBaseFormat: BaseFormatLlama}, ErrBadRequest, "chunks only"},
	} {
		_, err := Run(context.Background(), c.eng, c.req)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want %v with %q", c.req, err, c.is, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "s.kld")); !os.IsNotExist(err) {
		t.Error("a refused run left a base")
	}
	// The text's tokens may run past the n_chunk·C the base holds.
	if _, err := Run(context.Background(), a, Request{KLDBase: path, Tokens: tokens}); err != nil {
		t.Fatal(err)
	}
}

func FuzzLlamaBase(f *testing.F) {
	a := newFake(9, 4, 1, 0)
	path := filepath.Join(f.TempDir(), "a.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: randomTokens(2, 40, 9), Ctx: 8, KLDBaseOut: path, KLDBaseFormat: BaseFormatLlama}); err != nil {
		f.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	f.Add(raw)
	f.Add(raw[:len(raw)-1])
	f.Add(raw[:20])
	f.Add([]byte("_logits_\xff\xff\xff\x7f\x00\x00\x00\x01\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBase(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil || b.Format != BaseFormatLlama {
			return
		}
		h := b.Header
		if int64(len(data)) != llamaSize(h.Ctx, h.Meta.VocabSize, h.Windows) || len(b.Tokens) != h.Tokens {
			t.Fatal("accepted a llama.cpp base whose size does not match its header")
		}
		var row LlamaRow
		for range h.Scored {
			if err := b.NextLlama(&row); err != nil {
				t.Fatalf("accepted base failed to read: %v", err)
			}
		}
	})
}
