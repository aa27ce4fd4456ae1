package scoring

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"plexbench/internal/basetest"
)

// TestRecordCheck: each kind of bad record is refused, naming it by index,
// window and position and saying what is wrong; values within rounding of
// their bounds pass. Duplicates are found with a known vocabulary and
// without one.
func TestRecordCheck(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	windows := []Window{{Index: 0, Scored: 3, FirstRow: 8}, {Index: 1, Scored: 3, FirstRow: 8}}
	for _, vocab := range []int{100, 0} {
		c := newRecordCheck(&BaseReader{Name: "b.kld", Header: BaseHeader{Meta: BaseMeta{VocabSize: vocab}}}, windows)
		for _, tc := range []struct {
			nll  float64
			ids  []int32
			lp   []float32
			want string // "" for a good record
		}{
			{1.5, []int32{7, 3, 9}, []float32{-0.1, -2, -2}, ""},
			{-5e-5, []int32{7, 3, 9}, []float32{5e-5, -2, -3}, ""}, // rounding
			{0, []int32{7}, []float32{0}, ""},
			{nan, []int32{7, 3, 9}, []float32{-0.1, -2, -3}, "NLL NaN"},
			{inf, []int32{7, 3, 9}, []float32{-0.1, -2, -3}, "NLL +Inf"},
			{-0.25, []int32{7, 3, 9}, []float32{-0.1, -2, -3}, "NLL -0.25"},
			{1, []int32{7, 3, 9}, []float32{-0.1, float32(nan), -3}, "log-probability NaN of id 3"},
			{1, []int32{7, 3, 9}, []float32{-0.1, -2, float32(-inf)}, "log-probability -Inf of id 9"},
			{1, []int32{7, 3, 9}, []float32{0.5, -2, -3}, "log-probability 0.5 of id 7"},
			{1, []int32{7, 3, 9}, []float32{-0.1, -3, -2}, "log-probabilities out of order at rank 2 (-2 after -3)"},
			{1, []int32{7, 3, 7}, []float32{-0.1, -2, -3}, "id 7 at ranks 0 and 2"},
			{1, []int32{7, 3, 3}, []float32{-0.1, -2, -3}, "id 3 at ranks 1 and 2"},
			{1, []int32{7, -1, 9}, []float32{-0.1, -2, -3}, "id -1 outside the vocabulary"},
		} {
			for i, place := range []string{"record 0 (window 0, position 8): ", "record 4 (window 1, position 9): "} {
				err := c.topK(4*i, tc.nll, tc.ids, tc.lp)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("vocab %d: %v %v %v refused: %v", vocab, tc.nll, tc.ids, tc.lp, err)
				case tc.want != "" && (!errors.Is(err, ErrBadBase) || !strings.Contains(err.Error(), "b.kld: "+place+tc.want)):
					t.Errorf("vocab %d: %v %v %v: %v, want %q", vocab, tc.nll, tc.ids, tc.lp, err, place+tc.want)
				}
			}
		}
		// The same id in two records is no duplicate.
		if err := c.topK(5, 1, []int32{7, 3}, []float32{-1, -2}); err != nil {
			t.Error(err)
		}
		if err := c.topK(5, 1, []int32{200}, []float32{-1}); (vocab > 0) != (err != nil) {
			t.Errorf("vocab %d: id 200: %v", vocab, err)
		}
	}

	l := newRecordCheck(&BaseReader{Name: "l.kld", Format: BaseFormatLlama, Header: BaseHeader{Ctx: 64}}, nil)
	for _, tc := range []struct {
		scale, minLP float32
		bad          bool
	}{
		{16.0 / 65535, -16.5, false},
		{0, -6.2, false}, // every logit equal
		{16.0 / 65535, -16 + 4e-5, false},
		{float32(nan), float32(nan), true}, // llama-perplexity's row for NaN logits
		{1e-4, float32(nan), true},
		{float32(inf), -3, true},
		{-1e-4, -3, true},
		{1e-4, 0.5, true},
		{1e-3, -3, true}, // its largest log-probability is 62.5
		{1e-4, float32(-inf), true},
	} {
		err := l.llamaRow(40, tc.scale, tc.minLP)
		if tc.bad != (err != nil) || (err != nil && !strings.Contains(err.Error(), "l.kld: row 40 (window 1, position 41): scale ")) {
			t.Errorf("scale %g min %g: %v", tc.scale, tc.minLP, err)
		}
	}
}

// TestRunRefusesDamagedBase: a run against a base with a bad record (a
// plexbench base's NaN, positive or unranked log-probability, negative
// NLL, repeated id; a llama.cpp base's NaN row) is refused before its
// first window, resumed from a journal or not: one line naming the file,
// the record by window and position, and the fault. Neither the base nor
// the journal is changed, and `bases verify` says the same.
func TestRunRefusesDamagedBase(t *testing.T) {
	a := newFake(64, 8, 3, 0)
	tokens := randomTokens(2, 1000, 64) // ctx 100: 10 windows of 49 scored tokens
	dir := t.TempDir()
	good := map[string]string{BaseFormatPlexbench: filepath.Join(dir, "good.kld"), BaseFormatLlama: filepath.Join(dir, "good-llama.kld")}
	for format, p := range good {
		if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDTopK: 8, KLDBaseOut: p, KLDBaseFormat: format}); err != nil {
			t.Fatal(err)
		}
	}
	const rec = 200 // window 4, position 50 + 4
	for _, c := range []struct {
		name, format, want string
		damage             func(nll *float64, ids []int32, lp []float32)
	}{
		{"nan-lp", BaseFormatPlexbench, "log-probability NaN of id", func(_ *float64, _ []int32, lp []float32) { lp[3] = float32(math.NaN()) }},
		{"positive-lp", BaseFormatPlexbench, "log-probability 0.5 of id", func(_ *float64, _ []int32, lp []float32) { lp[0] = 0.5 }},
		{"unsorted", BaseFormatPlexbench, "log-probabilities out of order at rank 2", func(_ *float64, _ []int32, lp []float32) { lp[1], lp[2] = lp[2]-1, lp[1] }},
		{"negative-nll", BaseFormatPlexbench, "NLL -0.5", func(nll *float64, _ []int32, _ []float32) { *nll = -0.5 }},
		{"duplicate", BaseFormatPlexbench, "at ranks 1 and 4", func(_ *float64, ids []int32, _ []float32) { ids[4] = ids[1] }},
		{"nan-row", BaseFormatLlama, "scale NaN, min log-probability NaN", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, journal := filepath.Join(dir, c.name+".kld"), filepath.Join(dir, c.name+".journal")
			raw, _ := os.ReadFile(good[c.format])
			os.WriteFile(base, raw, 0o644)
			// A run stopped after two windows, its base damaged afterwards
			// in a window it has not scored.
			ctx, cancel := context.WithCancel(context.Background())
			_, err := Run(ctx, a.withNoise(0.05, 9), Request{KLDBase: base, Journal: journal, Progress: stopAfter(2, cancel)})
			cancel()
			if !errors.Is(err, ErrStopped) {
				t.Fatalf("stopped run: %v", err)
			}
			if c.damage != nil {
				basetest.EditRecord(t, base, rec, c.damage)
			} else {
				basetest.NaNLlamaRow(t, base, rec)
			}
			damaged, _ := os.ReadFile(base)
			kept, _ := os.ReadFile(journal)
			want := base + ": " + map[string]string{BaseFormatPlexbench: "record", BaseFormatLlama: "row"}[c.format] +
				" 200 (window 4, position 54): "
			for _, resume := range []bool{false, true} {
				f := a.withNoise(0.05, 9)
				f.prefills = 0
				req := Request{KLDBase: base}
				if resume {
					req.Journal, req.Resume = journal, true
				}
				rep, err := Run(context.Background(), f, req)
				if !errors.Is(err, ErrBadBase) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.want) ||
					strings.Contains(err.Error(), "\n") {
					t.Errorf("resume %v: %v, want %q … %q", resume, err, want, c.want)
				}
				if f.prefills != 0 || rep.WindowsScored != 0 {
					t.Errorf("resume %v: %d prefills, %d windows scored before the refusal", resume, f.prefills, rep.WindowsScored)
				}
			}
			if _, err := VerifyBase(base); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("verify: %v, want %q … %q", err, want, c.want)
			}
			if now, _ := os.ReadFile(base); !bytes.Equal(now, damaged) {
				t.Error("the base changed")
			}
			if now, _ := os.ReadFile(journal); !bytes.Equal(now, kept) {
				t.Error("the journal changed")
			}
		})
	}
}

// BenchmarkOpenBase: what opening a base costs, now that it checks every
// record, beside what it cost before (the checksum pass and the token ids
// only: "hash-only"). A plexbench base of 200k records at top-k 32 (53 MB)
// and a llama.cpp base of a 32k vocabulary (1,550 rows, 100 MB).
func BenchmarkOpenBase(b *testing.B) {
	dir := b.TempDir()
	top := filepath.Join(dir, "top.kld")
	const k, vocab, ctx = 32, 32000, 64
	n := 200000 / (ctx - 1 - ctx/2) * ctx
	h := BaseHeader{Method: MethodChunks, Ctx: ctx, Stride: ctx, TopK: k, Windows: n / ctx, Scored: n / ctx * llamaRows(ctx),
		Meta: BaseMeta{VocabSize: vocab}}
	w, err := CreateBase(top, h, randomTokens(1, n, vocab))
	if err != nil {
		b.Fatal(err)
	}
	ids, lp := make([]int32, k), make([]float32, k)
	for i := range h.Scored {
		for j := range k {
			ids[j], lp[j] = int32((i+7919*j)%vocab), -float32(j)-1
		}
		w.Append(float64(i%7), ids, lp)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	llama := filepath.Join(dir, "llama.kld")
	const chunks = 50
	lw, err := CreateLlamaBase(llama, ctx, vocab, chunks, randomTokens(2, chunks*ctx, vocab))
	if err != nil {
		b.Fatal(err)
	}
	row := make([]float32, vocab)
	for i := range row {
		row[i] = float32(i%97) / 10
	}
	for range chunks * llamaRows(ctx) {
		lw.Append(row, 9.6, 3000)
	}
	if err := lw.Close(); err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B, path string) {
		st, _ := os.Stat(path)
		b.SetBytes(st.Size())
		for b.Loop() {
			r, err := OpenBase(path)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	}
	b.Run("plexbench", func(b *testing.B) { open(b, top) })
	b.Run("plexbench-hash-only", func(b *testing.B) {
		st, _ := os.Stat(top)
		b.SetBytes(st.Size())
		for b.Loop() {
			f, _ := os.Open(top)
			_, mlen, err := parseBaseHeader(f, st.Size(), top)
			if err != nil {
				b.Fatal(err)
			}
			s := sha256.New()
			io.Copy(s, io.NewSectionReader(f, 0, st.Size()-sha256.Size))
			tok := make([]int32, n)
			readTokenIDs(bufio.NewReaderSize(io.NewSectionReader(f, baseFixedHeader+int64(mlen), int64(4*n)), 1<<20), tok)
			f.Close()
		}
	})
	b.Run("llama", func(b *testing.B) { open(b, llama) })
	b.Run("llama-header-only", func(b *testing.B) {
		st, _ := os.Stat(llama)
		b.SetBytes(st.Size())
		for b.Loop() {
			f, _ := os.Open(llama)
			if _, err := readLlamaBase(f, st.Size(), llama); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// nanEngine is a fake whose hidden row at one position of one window
// (its n-th prefill, 1-based) is NaN, as a model overflowing there gives.
type nanEngine struct {
	*fakeEngine
	window, pos int
}

func (e *nanEngine) Prefill(ctx context.Context, tokens []int32, from int, emit func(int, []float32, int) error) error {
	nan := e.prefills+1 == e.window
	return e.fakeEngine.Prefill(ctx, tokens, from, func(pos int, hidden []float32, n int) error {
		if nan && e.pos >= pos && e.pos < pos+n {
			for j := range e.h {
				hidden[(e.pos-pos)*e.h+j] = float32(math.NaN())
			}
		}
		return emit(pos, hidden, n)
	})
}

// TestRunRefusesNonFiniteLogits: a model whose logits turn NaN in a window
// fails there, comparing and recording, with one line naming the window
// and the row; the report of the windows before holds no non-finite
// figure, so it encodes, and the base being recorded is not kept whole.
func TestRunRefusesNonFiniteLogits(t *testing.T) {
	dir := t.TempDir()
	a := newFake(64, 8, 3, 0)
	tokens := randomTokens(2, 1000, 64)
	base := filepath.Join(dir, "ref.kld")
	if _, err := Run(context.Background(), a, Request{Tokens: tokens, Ctx: 100, KLDBaseOut: base}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		{Tokens: tokens, Ctx: 100},
		{KLDBase: base, Journal: filepath.Join(dir, "run.journal")},
		{Tokens: tokens, Ctx: 100, KLDBaseOut: filepath.Join(dir, "out.kld"), KLDBaseFormat: BaseFormatLlama},
	} {
		e := &nanEngine{fakeEngine: newFake(64, 8, 3, 0.01), window: 3, pos: 60}
		rep, err := Run(context.Background(), e, req)
		want := "window 2 (tokens 200..300): row 60 (target token " + strconv.Itoa(int(tokens[261])) + "): the model's logits are not finite: NLL NaN"
		if err == nil || errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want %q", req, err, want)
		}
		if _, jerr := rep.JSON(); jerr != nil || !rep.Partial || rep.WindowsScored != 2 {
			t.Errorf("%+v: partial %v, %d windows, JSON %v", req, rep.Partial, rep.WindowsScored, jerr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.kld")); err == nil {
		t.Error("a llama.cpp base of a failed run was kept")
	}
}
