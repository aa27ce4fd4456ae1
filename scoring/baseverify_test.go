package scoring

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// writeVerifyBase writes a consistent base (chunks of 16 over 64 tokens: 4
// windows of 7 scored tokens) with random records, sorted as a run writes
// them; damage, when set, changes record i before it is written.
func writeVerifyBase(t *testing.T, path string, damage func(i int, nll *float64, ids []int32, lp []float32)) {
	t.Helper()
	const k, vocab = 8, 300
	h := BaseHeader{Method: MethodChunks, Ctx: 16, Stride: 16, TopK: k, Windows: 4, Scored: 28,
		Meta: BaseMeta{ModelFile: "m.gguf", VocabSize: vocab, WindowsPlanned: 4}}
	w, err := CreateBase(path, h, randomTokens(7, 64, vocab))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 9))
	for i := range h.Scored {
		ids := make([]int32, k)
		lp := make([]float32, k)
		for j, id := range r.Perm(vocab)[:k] {
			ids[j], lp[j] = int32(id), float32(-r.Float64()*12)
		}
		slices.SortFunc(lp, func(a, b float32) int { return cmpFloat(float64(b), float64(a)) })
		nll := -float64(lp[r.IntN(k)])
		if damage != nil {
			damage(i, &nll, ids, lp)
		}
		if err := w.Append(nll, ids, lp); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyBase(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.kld")
	writeVerifyBase(t, good, nil)
	bi, err := VerifyBase(good)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ReadBaseInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(good)
	if bi.Size != st.Size() || info.Size != st.Size() || bi.ID != info.ID || bi.Header.Scored != 28 ||
		info.Header.Meta.ModelFile != "m.gguf" || !strings.HasPrefix(bi.ID.Identity, "plexbench:") {
		t.Fatalf("verify %+v\ninfo %+v", bi, info)
	}
	data, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := slices.Clone(data)
	flipped[len(flipped)/2] ^= 0x40
	cases := []struct {
		path, want string
		info       bool // ReadBaseInfo finds it too
	}{
		{write("cut.kld", data[:len(data)-100]), "cut.kld: " + strconv.Itoa(len(data)-100) + " bytes, the header promises " + strconv.Itoa(len(data)), true},
		{write("flip.kld", flipped), "flip.kld: checksum mismatch", false},
		{write("junk.kld", []byte("PLXKLDB\x00 and then nothing")), "junk.kld: ", true},
	}
	for _, rec := range []struct {
		name, want string
		damage     func(i int, nll *float64, ids []int32, lp []float32)
	}{
		{"id.kld", "id.kld: record 5 (window 0, position 13): id 300 outside the vocabulary (300)", func(i int, _ *float64, ids []int32, _ []float32) {
			if i == 5 {
				ids[2] = 300
			}
		}},
		{"order.kld", "id.kld: record 0 (window 0, position 8): log-probabilities out of order at rank 1", func(i int, _ *float64, _ []int32, lp []float32) {
			if i == 0 {
				lp[0], lp[1] = lp[1]-1, lp[0]
			}
		}},
		{"positive.kld", "positive.kld: record 27 (window 3, position 14): log-probability 0.5", func(i int, _ *float64, _ []int32, lp []float32) {
			if i == 27 {
				lp[0] = 0.5
			}
		}},
	} {
		p := filepath.Join(dir, rec.name)
		writeVerifyBase(t, p, rec.damage)
		cases = append(cases, struct {
			path, want string
			info       bool
		}{p, strings.Replace(rec.want, "id.kld", rec.name, 1), false})
	}
	for _, c := range cases {
		_, err := VerifyBase(c.path)
		if !errors.Is(err, ErrBadBase) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("verify %s: %v, want %q", filepath.Base(c.path), err, c.want)
		}
		if _, err := ReadBaseInfo(c.path); (err != nil) != c.info {
			t.Errorf("info %s: %v", filepath.Base(c.path), err)
		}
	}
}

// TestVerifyBaseCounts: a header whose window count its geometry does not
// give is refused.
func TestVerifyBaseCounts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "counts.kld")
	h := BaseHeader{Method: MethodChunks, Ctx: 16, Stride: 16, TopK: 1, Windows: 3, Scored: 2, Meta: BaseMeta{VocabSize: 10}}
	w, err := CreateBase(p, h, make([]int32, 64))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		w.Append(1, []int32{1}, []float32{-1})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyBase(p); err == nil || !strings.Contains(err.Error(), "counts.kld: the header counts 3 windows / 2 scored tokens, its geometry (chunks, ctx 16, stride 16) over 64 tokens gives 4 / 28") {
		t.Fatalf("verify: %v", err)
	}
}

// TestVerifyLlamaBase: a llama.cpp base verifies; one with a row whose
// scale is not finite does not.
func TestVerifyLlamaBase(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, bad int) string {
		p := filepath.Join(dir, name)
		w, err := CreateLlamaBase(p, 8, 50, 2, randomTokens(1, 16, 50))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(2, 3))
		for i := range 2 * llamaRows(8) {
			row := make([]float32, 50)
			for j := range row {
				row[j] = float32(r.NormFloat64())
			}
			if i == bad {
				row[0] = float32(math.Inf(1)) // the scale is not finite
			}
			mx, sum := slicesMax(row), 0.0
			for _, l := range row {
				sum += float64(expf(l - mx))
			}
			if err := w.Append(row, mx, sum); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if bi, err := VerifyBase(write("ok.kld", -1)); err != nil || bi.Format != BaseFormatLlama || bi.Header.Windows != 2 {
		t.Fatalf("verify: %+v %v", bi, err)
	}
	if _, err := VerifyBase(write("inf.kld", 4)); err == nil || !strings.Contains(err.Error(), "inf.kld: row 4 (window 1, position 5): scale") {
		t.Fatalf("verify a row with an infinite logit: %v", err)
	}
}

// FuzzVerifyBase: whatever the bytes, neither reader panics, and a base
// VerifyBase accepts ReadBaseInfo reads with the same header and identity.
func FuzzVerifyBase(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "seed.kld")
	h := BaseHeader{Method: MethodChunks, Ctx: 4, Stride: 4, TopK: 1, Windows: 2, Scored: 2, Meta: BaseMeta{VocabSize: 5}}
	w, err := CreateBase(good, h, []int32{1, 2, 3, 4, 0, 1, 2, 3})
	if err != nil {
		f.Fatal(err)
	}
	w.Append(1, []int32{2}, []float32{-0.5})
	w.Append(2, []int32{4}, []float32{-0.1})
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	f.Add(raw)
	f.Add(raw[:len(raw)-1])
	f.Add([]byte("_logits_\x04\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.kld")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		info, ierr := ReadBaseInfo(p)
		v, verr := VerifyBase(p)
		if verr != nil {
			return
		}
		if ierr != nil || info.ID != v.ID || info.Header.Scored != v.Header.Scored || info.Size != v.Size {
			t.Fatalf("verified %+v, info %+v (%v)", v, info, ierr)
		}
	})
}

// TestJournalBase: a stopped run's journal names the base it compares
// against by the base's trailing checksum, the one IdentifyBase shortens.
func TestJournalBase(t *testing.T) {
	dir := t.TempDir()
	f := newFake(64, 8, 3, 0)
	base := filepath.Join(dir, "ref.kld")
	if _, err := Run(context.Background(), f, Request{Tokens: randomTokens(2, 1000, 64), Ctx: 100, KLDBaseOut: base}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j := filepath.Join(dir, "run.journal")
	Run(ctx, f.withNoise(0.05, 9), Request{KLDBase: base, Journal: j, Progress: stopAfter(2, cancel)})
	size, sum, ok, err := JournalBase(j)
	id, _ := IdentifyBase(base)
	st, _ := os.Stat(base)
	if err != nil || !ok || size != st.Size() || len(sum) != 64 || id.Identity != "plexbench:"+sum[:16] {
		t.Fatalf("journal base %d %q %v %v; base %d %s", size, sum, ok, err, st.Size(), id.Identity)
	}
	plain := filepath.Join(dir, "plain.journal")
	Run(ctx, f, Request{Tokens: randomTokens(2, 1000, 64), Ctx: 100, Journal: plain})
	if _, _, ok, err := JournalBase(plain); ok || err != nil {
		t.Fatalf("a journal of a run without a base: ok %v, %v", ok, err)
	}
}
