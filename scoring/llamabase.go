package scoring

// llamabase.go owns llama.cpp's KL-divergence base format, the file
// `llama-perplexity --kl-divergence-base` writes (../shared/spec/
// ../shared/spec/perplexity-kld.md §3): reading one as a base, so a run is compared with
// llama.cpp's own logits over the whole vocabulary on the same tokens, and
// writing one from a run, so llama.cpp can compare its build against ours.
//
// Layout (little-endian, no padding, no checksum):
//
//	off  size          field
//	0    8             magic "_logits_"
//	8    4             i32 C, the per-chunk context
//	12   4             i32 V, the vocabulary size
//	16   4             i32 n_chunk
//	20   4·n_chunk·C   token ids as tokenized (no BOS substitution)
//	…    per chunk, R = C−1−⌊C/2⌋ rows of nv = 2·⌈V/2⌉+4 u16 words:
//	                   f32 scale, f32 minlp, V codes q, a zero pad word when V is odd
//
// Row j's base log-probability is scale·q[j] + minlp (f32).

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"plexbench/kernels"
)

// Base formats.
const (
	BaseFormatPlexbench = "plexbench" // the compact top-k base (basefile.go)
	BaseFormatLlama     = "llama"     // llama.cpp's full-vocabulary base
)

const (
	llamaMagic     = "_logits_"
	llamaHeader    = 20
	llamaMaxVocab  = 1 << 24
	llamaLogRange  = 16 // nats of log-probability a row stores below its maximum
	llamaCodeScale = 65535
)

// llamaRowWords is nv, the u16 words of one row.
func llamaRowWords(vocab int) int { return 2*((vocab+1)/2) + 4 }

// llamaRows is R, the rows stored per chunk.
func llamaRows(ctx int) int { return ctx - 1 - ctx/2 }

// LlamaBaseSize is the size of a llama.cpp base of chunks chunks of ctx
// tokens over a vocabulary of vocab entries.
func LlamaBaseSize(ctx, vocab, chunks int) int64 { return llamaSize(ctx, vocab, chunks) }

func llamaSize(ctx, vocab, chunks int) int64 {
	return llamaHeader + 4*int64(chunks)*int64(ctx) +
		2*int64(llamaRowWords(vocab))*int64(llamaRows(ctx))*int64(chunks)
}

// LlamaRow is one decoded row of a llama.cpp base.
type LlamaRow struct {
	Scale, MinLP float32
	Q            []uint16 // V codes
}

// LogProb is the base's log-probability of id j, rounded as llama.cpp
// decodes it (the conversion keeps the product from being fused).
func (r *LlamaRow) LogProb(j int) float32 { return float32(r.Scale*float32(r.Q[j])) + r.MinLP }

// readLlamaBase checks a llama.cpp base held by r: the header's sizes
// against the file size before anything is allocated, then the token ids.
// The returned reader serves rows with NextLlama.
func readLlamaBase(r io.ReaderAt, size int64, name string) (*BaseReader, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrBadBase, name, fmt.Sprintf(format, args...))
	}
	var hdr [llamaHeader]byte
	if size < llamaHeader {
		return nil, bad("%d bytes is too short for a llama.cpp base (truncated, or its text was too short to score)", size)
	}
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return nil, bad("reading header: %v", err)
	}
	le := binary.LittleEndian
	c, v, n := int32(le.Uint32(hdr[8:])), int32(le.Uint32(hdr[12:])), int32(le.Uint32(hdr[16:]))
	switch {
	case c < 4 || c > baseMaxCtx:
		return nil, bad("llama.cpp base: ctx %d out of range 4..%d", c, baseMaxCtx)
	case v < 1 || v > llamaMaxVocab:
		return nil, bad("llama.cpp base: vocabulary size %d out of range", v)
	case n < 1 || int64(n)*int64(c) > math.MaxInt32:
		return nil, bad("llama.cpp base: %d chunks of %d tokens out of range", n, c)
	}
	ctx, vocab, chunks := int(c), int(v), int(n)
	if want := llamaSize(ctx, vocab, chunks); size != want {
		return nil, bad("llama.cpp base: %d bytes, the header (ctx %d, vocabulary %d, %d chunks) promises %d: truncated or corrupt",
			size, ctx, vocab, chunks, want)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, llamaHeader, size-llamaHeader), 1<<20)
	tokens := make([]int32, chunks*ctx)
	if err := readTokenIDs(br, tokens); err != nil {
		return nil, bad("reading token ids: %v", err)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= vocab {
			return nil, bad("llama.cpp base: token %d at index %d is outside its vocabulary (%d)", t, i, vocab)
		}
	}
	rows := llamaRows(ctx)
	h := BaseHeader{Method: MethodChunks, Ctx: ctx, Stride: ctx, ChunkLimit: chunks, TopK: vocab,
		Tokens: len(tokens), Windows: chunks, Scored: chunks * rows, TokenIDsSHA256: TokenIDsSHA256(tokens),
		Meta: BaseMeta{VocabSize: vocab}}
	return &BaseReader{Name: name, Format: BaseFormatLlama, Header: h, Tokens: tokens, r: br,
		rec: make([]byte, 2*llamaRowWords(vocab))}, nil
}

// NextLlama reads the next row of a llama.cpp base into row (its Q is
// grown to V).
func (b *BaseReader) NextLlama(row *LlamaRow) error {
	if b.Format != BaseFormatLlama {
		return fmt.Errorf("kld base %s: not a llama.cpp base", b.Name)
	}
	if b.read >= b.Header.Scored {
		return fmt.Errorf("%w %s: all %d rows already read", ErrBadBase, b.Name, b.Header.Scored)
	}
	if _, err := io.ReadFull(b.r, b.rec); err != nil {
		return fmt.Errorf("%w %s: row %d: %v", ErrBadBase, b.Name, b.read, err)
	}
	b.read++
	le := binary.LittleEndian
	v := b.Header.Meta.VocabSize
	row.Scale, row.MinLP = llamaRowHead(b.rec)
	row.Q = kernels.Grow(row.Q, v)
	for j := range row.Q {
		row.Q[j] = le.Uint16(b.rec[8+2*j:])
	}
	return nil
}

// llamaRowHead is a stored row's scale and minimum log-probability, its
// first 8 bytes.
func llamaRowHead(rec []byte) (scale, minLP float32) {
	le := binary.LittleEndian
	return math.Float32frombits(le.Uint32(rec[0:])), math.Float32frombits(le.Uint32(rec[4:]))
}

// expf is C's expf to within an ulp.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// CompareFull compares one token's full logit row with a llama.cpp base
// row exactly as llama-perplexity --kl-divergence does (§4.3): NLLs and
// Δp in f32, KL(base ‖ run) = Σ over ids whose base log-probability is
// above −16 of f32 terms p_b·(lp_b − l + M), summed in f64, with M = max +
// f32(ln S). Top5 is the run's argmax among the base's five largest codes.
func CompareFull(target int32, logits []float32, mx float32, argMax int32, sumExp float64, row *LlamaRow) TokenComparison {
	lse := float32(math.Log(sumExp))
	m := mx + lse
	nll := m - logits[target]
	nllB := -row.LogProb(int(target))
	var kld, mass float64
	var top [5]int
	ntop := 0
	for j, q := range row.Q {
		lpb := row.LogProb(j)
		if lpb > -llamaLogRange {
			p := expf(lpb)
			kld += float64(p * float32(float32(lpb-logits[j])+m))
			mass += float64(p)
		}
		// Keep the five largest codes, the first index first among ties.
		if ntop < len(top) || q > row.Q[top[len(top)-1]] {
			i := min(ntop, len(top)-1)
			for i > 0 && q > row.Q[top[i-1]] {
				top[i] = top[i-1]
				i--
			}
			top[i] = j
			ntop = min(ntop+1, len(top))
		}
	}
	c := TokenComparison{NLL: float64(nll), BaseNLL: float64(nllB), KLD: kld, BaseTopMass: mass,
		DeltaP: float64(expf(-nll) - expf(-nllB)), SameTop: ntop > 0 && int32(top[0]) == argMax}
	for _, j := range top[:ntop] {
		if int32(j) == argMax {
			c.Top5 = true
		}
	}
	if ntop > 0 {
		c.BaseTop, c.BaseTopP = int32(top[0]), math.Exp(float64(row.LogProb(top[0])))
	}
	return c
}

// LlamaBaseWriter streams a llama.cpp base: header and tokens at creation,
// then one row per scored token in scoring order.
type LlamaBaseWriter struct {
	path      string
	out       *pendingFile
	vocab     int
	want, got int
	rec       []byte
	err       error
}

// CreateLlamaBase starts a llama.cpp base for chunks chunks of ctx tokens
// (tokens holds at least chunks·ctx ids; only those are stored).
func CreateLlamaBase(path string, ctx, vocab, chunks int, tokens []int32) (*LlamaBaseWriter, error) {
	switch {
	case ctx < 4 || ctx > baseMaxCtx || vocab < 1 || vocab > llamaMaxVocab || chunks < 1:
		return nil, fmt.Errorf("kld base %s: llama.cpp format cannot hold ctx %d, vocabulary %d, %d chunks", path, ctx, vocab, chunks)
	case len(tokens) < chunks*ctx:
		return nil, fmt.Errorf("kld base %s: %d tokens for %d chunks of %d", path, len(tokens), chunks, ctx)
	}
	out, err := createPending("kld base", path)
	if err != nil {
		return nil, err
	}
	w := &LlamaBaseWriter{path: path, out: out, vocab: vocab, want: chunks * llamaRows(ctx),
		rec: make([]byte, 2*llamaRowWords(vocab))}
	le := binary.LittleEndian
	var hdr [llamaHeader]byte
	copy(hdr[:], llamaMagic)
	le.PutUint32(hdr[8:], uint32(ctx))
	le.PutUint32(hdr[12:], uint32(vocab))
	le.PutUint32(hdr[16:], uint32(chunks))
	w.write(hdr[:])
	writeTokenIDs(w.write, tokens[:chunks*ctx])
	if w.err != nil {
		w.Abort()
		return nil, fmt.Errorf("kld base %s: %w", path, w.err)
	}
	return w, nil
}

func (w *LlamaBaseWriter) write(p []byte) {
	if w.err == nil {
		_, w.err = w.out.bw.Write(p)
	}
}

// EncodeLlamaRow encodes one logit row as llama.cpp does (§3) into rec
// (2·nv bytes): the stored range is clamped to 16 nats below the maximum,
// codes are round-half-even of (l − min)/scale in f32. mx is the row's
// maximum and sumExp = Σ f64(expf(l − mx)).
func EncodeLlamaRow(logits []float32, mx float32, sumExp float64, rec []byte) {
	mn := logits[0]
	for _, l := range logits {
		mn = min(mn, l)
	}
	mn = max(mn, mx-llamaLogRange)
	lse := float32(math.Log(sumExp))
	minlp := float32(mn-mx) - lse
	scale := (mx - mn) / llamaCodeScale
	le := binary.LittleEndian
	le.PutUint32(rec[0:], math.Float32bits(scale))
	le.PutUint32(rec[4:], math.Float32bits(minlp))
	var inv float32
	if scale != 0 {
		inv = 1 / scale
	}
	for j, l := range logits {
		var q uint16
		if scale != 0 && l > mn {
			q = uint16(min(llamaCodeScale, math.RoundToEven(float64(inv*float32(l-mn)))))
		}
		le.PutUint16(rec[8+2*j:], q)
	}
	for j := 8 + 2*len(logits); j < len(rec); j++ {
		rec[j] = 0 // the pad word of an odd vocabulary
	}
}

// Append adds the next scored token's full logit row (V values).
func (w *LlamaBaseWriter) Append(logits []float32, mx float32, sumExp float64) error {
	if w.err != nil {
		return fmt.Errorf("kld base %s: %w", w.path, w.err)
	}
	if len(logits) != w.vocab {
		return fmt.Errorf("kld base %s: row of %d logits, want %d", w.path, len(logits), w.vocab)
	}
	if w.got >= w.want {
		return fmt.Errorf("kld base %s: more than the %d rows the header promises", w.path, w.want)
	}
	EncodeLlamaRow(logits, mx, sumExp, w.rec)
	w.write(w.rec)
	w.got++
	if w.err != nil {
		return fmt.Errorf("kld base %s: %w", w.path, w.err)
	}
	return nil
}

// Close renames the base into place; it fails, leaving nothing at the
// path, unless every promised row was appended.
func (w *LlamaBaseWriter) Close() error {
	if w.got != w.want {
		w.Abort()
		return fmt.Errorf("kld base %s: %d of %d rows written; base discarded", w.path, w.got, w.want)
	}
	if w.err != nil {
		w.Abort()
		return fmt.Errorf("kld base %s: %w", w.path, w.err)
	}
	if err := w.out.commit(); err != nil {
		return fmt.Errorf("kld base %s: %w", w.path, err)
	}
	return nil
}

// Abort discards the base; safe after Close.
func (w *LlamaBaseWriter) Abort() { w.out.abort() }
