package scoring

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTestBase writes a base with random records (distinct ids, ranked by
// descending log-probability, as a run writes them) and returns its path
// and the records. nTok tokens at ctx 16 must give two windows (scored:
// 14).
func writeTestBase(t testing.TB, dir string, k, nTok, scored int) (string, []float64, [][]int32, [][]float32) {
	t.Helper()
	path := filepath.Join(dir, "b.kld")
	toks := randomTokens(3, nTok, 1000)
	h := BaseHeader{Method: MethodChunks, Ctx: 16, Stride: 16, TopK: k, Windows: 2, Scored: scored,
		ModelSize: 42, Meta: BaseMeta{ModelFile: "m.gguf", ModelArchitecture: "llama", VocabSize: 1000}}
	w, err := CreateBase(path, h, toks)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 5))
	var nlls []float64
	var ids [][]int32
	var lps [][]float32
	for range scored {
		nll := r.Float64() * 5
		id := make([]int32, k)
		lp := make([]float32, k)
		for j, v := range r.Perm(1000)[:k] {
			id[j] = int32(v)
			lp[j] = float32(-r.Float64() * 10)
		}
		slices.SortFunc(lp, func(a, b float32) int { return cmpFloat(float64(b), float64(a)) })
		if err := w.Append(nll, id, lp); err != nil {
			t.Fatal(err)
		}
		nlls, ids, lps = append(nlls, nll), append(ids, id), append(lps, lp)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("the base must not exist under its name before Close")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, nlls, ids, lps
}

func TestBaseFileRoundTripAndSize(t *testing.T) {
	dir := t.TempDir()
	path, nlls, ids, lps := writeTestBase(t, dir, 32, 40, 14)
	b, err := OpenBase(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h := b.Header
	if h.Method != MethodChunks || h.Ctx != 16 || h.Stride != 16 || h.TopK != 32 || h.Tokens != 40 ||
		h.Scored != 14 || h.Windows != 2 || h.ModelSize != 42 || h.Meta.ModelFile != "m.gguf" || h.Meta.VocabSize != 1000 {
		t.Fatalf("header %+v", h)
	}
	want := randomTokens(3, 40, 1000)
	for i := range want {
		if b.Tokens[i] != want[i] {
			t.Fatalf("token %d: %d want %d", i, b.Tokens[i], want[i])
		}
	}
	gi, gl := make([]int32, 32), make([]float32, 32)
	for i := range nlls {
		nll, err := b.Next(gi, gl)
		if err != nil || nll != nlls[i] {
			t.Fatalf("record %d: nll %v err %v, want %v", i, nll, err, nlls[i])
		}
		for j := range 32 {
			if gi[j] != ids[i][j] || gl[j] != lps[i][j] {
				t.Fatalf("record %d pair %d differs", i, j)
			}
		}
	}
	if _, err := b.Next(gi, gl); err == nil {
		t.Fatal("reading past the last record must fail")
	}
	st, _ := os.Stat(path)
	raw, _ := os.ReadFile(path)
	meta := int64(binary.LittleEndian.Uint32(raw[96:]))
	header := int64(100) + meta + 4*40 + 32 // fixed header, metadata, token ids, checksum
	if st.Size() != header+264*14 {
		t.Fatalf("size %d, want header %d + 264 × 14", st.Size(), header)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

func TestBaseFileDetectsDamage(t *testing.T) {
	dir := t.TempDir()
	path, _, _, _ := writeTestBase(t, dir, 4, 40, 14)
	raw, _ := os.ReadFile(path)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"truncated by one byte": {raw[:len(raw)-1], "truncated"},
		"truncated by a record": {raw[:len(raw)-40], "truncated"},
		"one byte extra":        {append(append([]byte(nil), raw...), 0), "truncated or corrupt"},
		"empty":                 {nil, "too short"},
		"bad magic":             {append([]byte("GGUF\x03\x00\x00\x00"), raw[8:]...), "neither a plexbench nor a llama.cpp KLD base"},
	}
	flip := append([]byte(nil), raw...)
	flip[len(flip)-100] ^= 1
	cases["flipped record byte"] = struct {
		data []byte
		want string
	}{flip, "checksum mismatch"}
	ver := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint32(ver[8:], 9)
	cases["future version"] = struct {
		data []byte
		want string
	}{ver, "format version 9"}
	huge := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint64(huge[32:], 1<<40)
	cases["huge token count"] = struct {
		data []byte
		want string
	}{huge, "out of range"}
	for name, c := range cases {
		p := filepath.Join(dir, "bad.kld")
		os.WriteFile(p, c.data, 0o644)
		_, err := OpenBase(p)
		if err == nil || !errors.Is(err, ErrBadBase) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want ErrBadBase naming the file and %q", name, err, c.want)
		}
	}
}

func TestBaseWriterIncompleteIsDiscarded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.kld")
	w, err := CreateBase(path, BaseHeader{Method: MethodChunks, Ctx: 8, Stride: 8, TopK: 2, Windows: 1, Scored: 3},
		randomTokens(1, 16, 10))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(1, []int32{1, 2}, []float32{-1, -2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(1, []int32{1}, []float32{-1}); err == nil {
		t.Fatal("a record with the wrong k must fail")
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "1 of 3 records") {
		t.Fatalf("Close of an incomplete base: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("an incomplete base left files: %v", ents)
	}
	w, _ = CreateBase(path, BaseHeader{Method: MethodChunks, Ctx: 8, Stride: 8, TopK: 2, Windows: 1, Scored: 3},
		randomTokens(1, 16, 10))
	w.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Abort left files: %v", ents)
	}
	if _, err := CreateBase(path, BaseHeader{Method: "x", Ctx: 8, Stride: 8, TopK: 2}, nil); err == nil {
		t.Fatal("a bad header must be refused")
	}
}

func FuzzBaseFile(f *testing.F) {
	dir := f.TempDir()
	path, _, _, _ := writeTestBase(f, dir, 3, 32, 14)
	raw, _ := os.ReadFile(path)
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add(raw[:100])
	// A partial base: a recording stopped after one of its two windows.
	ctx, cancel := context.WithCancel(context.Background())
	partial := filepath.Join(dir, "partial.kld")
	Run(ctx, newFake(64, 8, 3, 0), Request{Tokens: randomTokens(2, 200, 64), Ctx: 100, KLDTopK: 2,
		KLDBaseOut: partial, Progress: stopAfter(1, cancel)})
	cancel()
	if raw, err := os.ReadFile(partial); err == nil {
		f.Add(raw)
	} else {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReadBase(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			return
		}
		if int64(len(data)) != baseSize(int(binary.LittleEndian.Uint32(data[96:])), &b.Header) {
			t.Fatal("accepted a base whose size does not match its header")
		}
		ids, lps := make([]int32, b.Header.TopK), make([]float32, b.Header.TopK)
		for b.Remaining() > 0 {
			if _, err := b.Next(ids, lps); err != nil {
				t.Fatalf("verified base failed to read: %v", err)
			}
		}
	})
}
