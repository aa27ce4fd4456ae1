package scoring

// trace.go owns a run's token trace: for every scored token what
// `plexbench worst` lists (the run's NLL, top id and its probability;
// against a base also the KLD, the base's NLL, top id and probability),
// with the text's token ids and the pieces of every id it names, so that
// excerpts decode without the model. Run builds it (Report.Trace); a
// record keeps it in a sidecar (results.TracePath); shards' traces merge
// (MergeShards). Values are f32: a listing shows a few digits, and the
// report's statistics are summed in f64 from the unrounded values.
//
// File layout (little-endian):
//
//	8   magic "PLXTRACE"
//	4   u32 version (1)
//	4   u32 flags: 1 = compared against a base
//	4   u32 id width W: 2 when every id is below 65536, else 4
//	32  SHA-256 of the run's whole token id stream (Report.TokenIDsSHA256)
//	16  u32 token ids T, u32 pieces P, u32 short tokens S, u32 windows N
//	T × W      the token ids, up to the end of the plan's last window
//	P × (W id, u16 length L, L bytes)  the pieces of the ids named, ascending
//	S × (u32 token index, u32 bytes)   tokens adding fewer bytes than their
//	                                   piece (SPM's dropped leading space)
//	N × (u32 index, u32 begin, u32 first target, u32 scored)  windows, ascending
//	per scored token, window by window:
//	    f32 NLL, W run top id, f32 run top probability,
//	    with a base also: f32 KLD, f32 base NLL, W base top id, f32 its probability
//	32  SHA-256 of everything before it
//
// A scored token takes 8+W bytes, 20+2W against a base, and each token id
// of the text W more.

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
)

const (
	traceMagic   = "PLXTRACE"
	traceVersion = 1
	traceHeader  = 8 + 4 + 4 + 4 + 32 + 16
	maxTrace     = 1 << 32 // bytes ReadTrace accepts
)

// ErrBadTrace marks a token trace that cannot be read or does not belong
// to its record.
var ErrBadTrace = errors.New("bad token trace")

// TokenTrace is a run's per-token trace.
type TokenTrace struct {
	// TokenIDsSHA256 is the hash of the run's whole token stream (hex);
	// Tokens its first ids, up to the end of the plan's last window.
	TokenIDsSHA256 string
	Tokens         []int32
	Pieces         map[int32]string // of every id in Tokens and every top id
	Short          map[int32]int32  // token index → bytes it adds, where fewer than its piece
	HasBase        bool
	Windows        []TraceWindow // ascending index
}

// TraceWindow is one scored window: its targets are FirstTarget,
// FirstTarget+1, … in Tokens order.
type TraceWindow struct {
	Index, Begin, FirstTarget int
	Tokens                    []TokenScore
}

// TokenScore is one scored token; the base's fields are zero without one.
type TokenScore struct {
	NLL     float32
	RunTop  int32
	RunTopP float32
	KLD     float32 // may be +Inf
	BaseNLL float32
	BaseTop int32
	BaseP   float32 // the base's top id's probability
}

// tokenScore is a scored token's trace entry: its NLL, the run's argmax
// and its probability (1/Σ exp(l − max)), and the comparison when there is
// one (whose NLL, against a llama.cpp base, is llama.cpp's f32 one).
func tokenScore(nll float64, res *RowResult, c *TokenComparison) TokenScore {
	return traceTop(nll, res.ArgMax, float32(1/res.SumExp), c)
}

// traceTop is tokenScore from the run's top id and probability.
func traceTop(nll float64, top int32, topP float32, c *TokenComparison) TokenScore {
	s := TokenScore{NLL: float32(nll), RunTop: top, RunTopP: topP}
	if c != nil {
		s.NLL, s.KLD, s.BaseNLL = float32(c.NLL), float32(c.KLD), float32(c.BaseNLL)
		s.BaseTop, s.BaseP = c.BaseTop, float32(c.BaseTopP)
	}
	return s
}

// newTrace is the trace of a run over tokens (bytes: Engine.TokenBytes of
// them) with the given windows, the pieces from piece.
func newTrace(tokens, bytes []int32, plan Plan, windows []TraceWindow, hasBase bool, piece func(int32) string) (*TokenTrace, error) {
	n := 0
	if len(plan.Windows) > 0 {
		n = plan.Windows[len(plan.Windows)-1].End
	}
	sum := TokenIDsSHA256(tokens)
	t := &TokenTrace{TokenIDsSHA256: hex.EncodeToString(sum[:]), Tokens: tokens[:n], HasBase: hasBase,
		Windows: windows, Pieces: map[int32]string{}, Short: map[int32]int32{}}
	for id := range t.ids() {
		t.Pieces[id] = piece(id)
	}
	for i, id := range t.Tokens {
		switch p := len(t.Pieces[id]); {
		case int(bytes[i]) > p:
			return nil, fmt.Errorf("token %d (id %d) adds %d bytes, more than its piece %q", i, id, bytes[i], t.Pieces[id])
		case int(bytes[i]) < p:
			t.Short[int32(i)] = bytes[i]
		}
	}
	return t, nil
}

// ids yields every id the trace names: its tokens and the top ids.
func (t *TokenTrace) ids() func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for _, id := range t.Tokens {
			if !yield(id) {
				return
			}
		}
		for _, w := range t.Windows {
			for _, s := range w.Tokens {
				if !yield(s.RunTop) || (t.HasBase && !yield(s.BaseTop)) {
					return
				}
			}
		}
	}
}

// Scored is the number of scored tokens the trace holds.
func (t *TokenTrace) Scored() int {
	n := 0
	for _, w := range t.Windows {
		n += len(w.Tokens)
	}
	return n
}

// Text is what token i adds to the text: the end of its piece.
func (t *TokenTrace) Text(i int) string {
	p := t.Pieces[t.Tokens[i]]
	if n, ok := t.Short[int32(i)]; ok {
		return p[len(p)-int(n):]
	}
	return p
}

// idWidth is 2 when every id fits 16 bits, else 4.
func (t *TokenTrace) idWidth() int {
	for id := range t.ids() {
		if id < 0 || id > math.MaxUint16 {
			return 4
		}
	}
	return 2
}

// Encode is the trace's file.
func (t *TokenTrace) Encode() ([]byte, error) {
	sum, err := hex.DecodeString(t.TokenIDsSHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("token trace: token hash %q", t.TokenIDsSHA256)
	}
	w := traceWriter{w: t.idWidth()}
	w.b = append(w.b, traceMagic...)
	var flags uint32
	if t.HasBase {
		flags = 1
	}
	w.u32(traceVersion, flags, uint32(w.w))
	w.b = append(w.b, sum...)
	w.u32(uint32(len(t.Tokens)), uint32(len(t.Pieces)), uint32(len(t.Short)), uint32(len(t.Windows)))
	w.ids(t.Tokens...)
	for _, id := range slices.Sorted(maps.Keys(t.Pieces)) {
		p := t.Pieces[id]
		if len(p) > math.MaxUint16 {
			return nil, fmt.Errorf("token trace: the piece of id %d is %d bytes long", id, len(p))
		}
		w.ids(id)
		w.b = binary.LittleEndian.AppendUint16(w.b, uint16(len(p)))
		w.b = append(w.b, p...)
	}
	for _, i := range slices.Sorted(maps.Keys(t.Short)) {
		w.u32(uint32(i), uint32(t.Short[i]))
	}
	for _, tw := range t.Windows {
		w.u32(uint32(tw.Index), uint32(tw.Begin), uint32(tw.FirstTarget), uint32(len(tw.Tokens)))
	}
	for _, tw := range t.Windows {
		for _, s := range tw.Tokens {
			w.f32(s.NLL)
			w.ids(s.RunTop)
			w.f32(s.RunTopP)
			if t.HasBase {
				w.f32(s.KLD, s.BaseNLL)
				w.ids(s.BaseTop)
				w.f32(s.BaseP)
			}
		}
	}
	h := sha256.Sum256(w.b)
	return append(w.b, h[:]...), nil
}

// traceWriter appends little-endian fields.
type traceWriter struct {
	b []byte
	w int // id width
}

func (w *traceWriter) u32(v ...uint32) {
	for _, x := range v {
		w.b = binary.LittleEndian.AppendUint32(w.b, x)
	}
}

func (w *traceWriter) f32(v ...float32) {
	for _, x := range v {
		w.u32(math.Float32bits(x))
	}
}

func (w *traceWriter) ids(v ...int32) {
	for _, id := range v {
		if w.w == 2 {
			w.b = binary.LittleEndian.AppendUint16(w.b, uint16(id))
		} else {
			w.u32(uint32(id))
		}
	}
}

// ReadTrace reads the trace file at path.
func ReadTrace(path string) (*TokenTrace, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("token trace: %w", err)
	}
	if st.Size() > maxTrace {
		return nil, fmt.Errorf("%w %s: %d bytes is too large", ErrBadTrace, path, st.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token trace: %w", err)
	}
	t, err := DecodeTrace(data)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrBadTrace, path, err)
	}
	return t, nil
}

// DecodeTrace decodes a trace file, checking every count against the
// bytes there before it allocates, and the trailing checksum.
func DecodeTrace(data []byte) (*TokenTrace, error) {
	if len(data) < traceHeader+sha256.Size {
		return nil, fmt.Errorf("%d bytes is too short", len(data))
	}
	if string(data[:8]) != traceMagic {
		return nil, fmt.Errorf("not a plexbench token trace (magic %q)", data[:8])
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], sum) {
		return nil, errors.New("checksum mismatch (damaged or cut short)")
	}
	r := traceReader{b: body[8:]}
	version, flags, width := r.u32(), r.u32(), r.u32()
	switch {
	case version != traceVersion:
		return nil, fmt.Errorf("format version %d, this build reads %d", version, traceVersion)
	case flags > 1:
		return nil, fmt.Errorf("unknown flags %#x", flags)
	case width != 2 && width != 4:
		return nil, fmt.Errorf("id width %d", width)
	}
	r.w = int(width)
	t := &TokenTrace{TokenIDsSHA256: hex.EncodeToString(r.take(sha256.Size)), HasBase: flags == 1}
	nt, np, ns, nw := r.u32(), r.u32(), r.u32(), r.u32()
	if err := r.decode(t, int64(nt), int64(np), int64(ns), int64(nw)); err != nil {
		return nil, err
	}
	return t, nil
}

// decode reads the sections after the header into t.
func (r *traceReader) decode(t *TokenTrace, nt, np, ns, nw int64) error {
	if int64(len(r.b)) < nt*int64(r.w)+np*int64(r.w+2)+ns*8+nw*16 {
		return errors.New("counts exceed the file")
	}
	t.Tokens = r.idList(int(nt))
	t.Pieces, t.Short = make(map[int32]string, np), make(map[int32]int32, ns)
	for range np {
		if len(r.b) < r.w+2 {
			return errors.New("pieces exceed the file")
		}
		id := r.id()
		n := int(r.u16())
		if _, dup := t.Pieces[id]; dup || len(r.b) < n {
			return fmt.Errorf("piece of id %d repeated or cut short", id)
		}
		t.Pieces[id] = string(r.take(n))
	}
	if int64(len(r.b)) < ns*8+nw*16 {
		return errors.New("windows exceed the file")
	}
	for range ns {
		i, n := r.u32(), r.u32()
		t.Short[int32(i)] = int32(n)
	}
	counts := make([]int, nw)
	t.Windows = make([]TraceWindow, nw)
	total := 0
	for i := range t.Windows {
		t.Windows[i] = TraceWindow{Index: int(r.u32()), Begin: int(r.u32()), FirstTarget: int(r.u32())}
		counts[i] = int(r.u32())
		if total += counts[i]; total > len(r.b) {
			return errors.New("scored tokens exceed the file")
		}
	}
	rec := 8 + r.w
	if t.HasBase {
		rec += 12 + r.w
	}
	if total*rec != len(r.b) {
		return fmt.Errorf("%d scored tokens of %d bytes in %d bytes", total, rec, len(r.b))
	}
	for i, n := range counts {
		t.Windows[i].Tokens = r.scores(n, t.HasBase)
	}
	return t.check()
}

// scores reads n scored tokens.
func (r *traceReader) scores(n int, hasBase bool) []TokenScore {
	v := make([]TokenScore, n)
	for i := range v {
		s := &v[i]
		s.NLL, s.RunTop, s.RunTopP = r.f32(), r.id(), r.f32()
		if hasBase {
			s.KLD, s.BaseNLL, s.BaseTop, s.BaseP = r.f32(), r.f32(), r.id(), r.f32()
		}
	}
	return v
}

// check is what a trace must hold to be listed: windows ascending inside
// the tokens, a piece for every id named, short tokens inside their piece.
func (t *TokenTrace) check() error {
	for i, w := range t.Windows {
		if i > 0 && w.Index <= t.Windows[i-1].Index {
			return fmt.Errorf("window %d follows window %d", w.Index, t.Windows[i-1].Index)
		}
		if w.Begin > w.FirstTarget || w.FirstTarget+len(w.Tokens) > len(t.Tokens) {
			return fmt.Errorf("window %d (tokens %d..%d, %d scored) outside the %d tokens",
				w.Index, w.Begin, w.FirstTarget, len(w.Tokens), len(t.Tokens))
		}
	}
	for id := range t.ids() {
		if _, ok := t.Pieces[id]; !ok {
			return fmt.Errorf("no piece for id %d", id)
		}
	}
	for i, n := range t.Short {
		if i < 0 || int(i) >= len(t.Tokens) || n < 0 || int(n) >= len(t.Pieces[t.Tokens[i]]) {
			return fmt.Errorf("short token %d (%d bytes) does not fit its piece", i, n)
		}
	}
	return nil
}

// traceReader reads little-endian fields; callers check lengths first.
type traceReader struct {
	b []byte
	w int
}

func (r *traceReader) take(n int) []byte {
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *traceReader) u16() uint16  { return binary.LittleEndian.Uint16(r.take(2)) }
func (r *traceReader) u32() uint32  { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *traceReader) f32() float32 { return math.Float32frombits(r.u32()) }

func (r *traceReader) id() int32 {
	if r.w == 2 {
		return int32(r.u16())
	}
	return int32(r.u32())
}

func (r *traceReader) idList(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = r.id()
	}
	return v
}

// CheckTrace says whether t is rep's trace: the same tokens, windows and
// scored tokens, compared or not as rep was.
func CheckTrace(t *TokenTrace, rep *Report) error {
	switch {
	case t.TokenIDsSHA256 != rep.TokenIDsSHA256:
		return fmt.Errorf("its tokens (%.12s…) are not the record's (%.12s…)", t.TokenIDsSHA256, rep.TokenIDsSHA256)
	case len(t.Windows) != rep.WindowsScored || t.Scored() != rep.ScoredTokens:
		return fmt.Errorf("it holds %d windows, %d tokens; the record %d, %d",
			len(t.Windows), t.Scored(), rep.WindowsScored, rep.ScoredTokens)
	case t.HasBase != (rep.KLD != nil):
		return fmt.Errorf("it was compared against a base: %v, the record: %v", t.HasBase, rep.KLD != nil)
	}
	return nil
}

// mergeTraces combines shards' traces of one run: the same tokens, each
// window from one shard. Nil when a shard has none.
func mergeTraces(reps []Report) (*TokenTrace, error) {
	first := reps[0].Trace
	if first == nil {
		return nil, nil
	}
	out := &TokenTrace{TokenIDsSHA256: first.TokenIDsSHA256, Tokens: first.Tokens, HasBase: first.HasBase,
		Pieces: map[int32]string{}, Short: map[int32]int32{}}
	for _, r := range reps {
		t := r.Trace
		if t == nil {
			return nil, nil
		}
		if t.TokenIDsSHA256 != first.TokenIDsSHA256 || !slices.Equal(t.Tokens, first.Tokens) || t.HasBase != first.HasBase {
			return nil, errors.New("the shards' token traces are of different runs")
		}
		for id, p := range t.Pieces {
			if q, ok := out.Pieces[id]; ok && q != p {
				return nil, fmt.Errorf("the shards' token traces give id %d the pieces %q and %q", id, q, p)
			}
			out.Pieces[id] = p
		}
		maps.Copy(out.Short, t.Short)
		out.Windows = append(out.Windows, t.Windows...)
	}
	slices.SortFunc(out.Windows, func(a, b TraceWindow) int { return cmp.Compare(a.Index, b.Index) })
	return out, out.check()
}
