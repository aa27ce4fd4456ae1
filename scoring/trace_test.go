package scoring

import (
	"context"
	"crypto/sha256"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// argMax64 is the first index of row's largest value and its probability
// (float64 softmax).
func argMax64(row []float32) (int32, float64) {
	m := 0
	for j := range row {
		if row[j] > row[m] {
			m = j
		}
	}
	return int32(m), math.Exp(float64(row[m]) - logSumExp64(row))
}

// TestTraceMatchesBruteForce: a comparison run's trace holds, for every
// scored token, the float64 reference's KLD over the base's top k plus
// the rest, both NLLs and both argmaxes with their probabilities, to f32;
// its windows are the plan's and its pieces the engine's.
func TestTraceMatchesBruteForce(t *testing.T) {
	tokens := randomTokens(7, 700, 48)
	a := newFake(48, 6, 5, 0)
	b := a.withNoise(0.2, 8)
	path, _ := recordBase(t, a, Request{Tokens: tokens, Ctx: 160, KLDTopK: 7})
	rep, err := Run(context.Background(), b, Request{KLDBase: path})
	if err != nil {
		t.Fatal(err)
	}
	tr := rep.Trace
	plan, _ := PlanWindows(len(tokens), Geometry{Ctx: 160})
	if tr == nil || !tr.HasBase || len(tr.Windows) != len(plan.Windows) || tr.TokenIDsSHA256 != rep.TokenIDsSHA256 {
		t.Fatalf("trace %+v", tr)
	}
	near := func(what string, got float32, want float64) {
		if math.Abs(float64(got)-want) > 2e-5*math.Abs(want)+2e-6 {
			t.Errorf("%s: trace %v, reference %v", what, got, want)
		}
	}
	for wi, w := range plan.Windows {
		tw := tr.Windows[wi]
		if tw.Index != w.Index || tw.Begin != w.Begin || tw.FirstTarget != w.FirstTarget || len(tw.Tokens) != w.Scored {
			t.Fatalf("window %d: trace %d %d %d %d", w.Index, tw.Index, tw.Begin, tw.FirstTarget, len(tw.Tokens))
		}
		in := w.Input(tokens, nil)
		ha, hb := a.hiddenRows(in), b.hiddenRows(in)
		for p := w.FirstRow; p <= w.LastRow(); p++ {
			ra, rb := a.logits(ha[p*a.h:(p+1)*a.h]), b.logits(hb[p*b.h:(p+1)*b.h])
			tgt := tokens[w.Begin+p+1]
			_, coarse, _ := compareRows(ra, rb, tgt, 7)
			s := tw.Tokens[p-w.FirstRow]
			near("kld", s.KLD, coarse)
			near("nll", s.NLL, logSumExp64(rb)-float64(rb[tgt]))
			near("base nll", s.BaseNLL, logSumExp64(ra)-float64(ra[tgt]))
			bt, bp := argMax64(ra)
			rt, rp := argMax64(rb)
			near("base top p", s.BaseP, bp)
			near("run top p", s.RunTopP, rp)
			if s.BaseTop != bt || s.RunTop != rt {
				t.Errorf("window %d row %d: tops %d/%d, reference %d/%d", w.Index, p, s.BaseTop, s.RunTop, bt, rt)
			}
		}
	}
	for i, id := range tr.Tokens {
		if tr.Text(i) != b.Piece(id) {
			t.Fatalf("token %d: text %q, piece %q", i, tr.Text(i), b.Piece(id))
		}
	}
}

// randomTrace is a trace over a random text of multi-byte characters cut
// into pieces at random byte offsets (some inside a character, as byte
// tokens cut them), some pieces adding one byte less than they hold (a
// dropped leading space), and random scores; wide ids need 4 bytes.
func randomTrace(seed uint64, hasBase, wide bool) (*TokenTrace, string) {
	r := rand.New(rand.NewPCG(seed, 5))
	chars := []string{"a", "b", " ", "\n", "é", "€", "🦙", "x", "y"}
	var text strings.Builder
	for range 300 + r.IntN(200) {
		text.WriteString(chars[r.IntN(len(chars))])
	}
	full := text.String()
	t := &TokenTrace{TokenIDsSHA256: strings.Repeat("ab", 32), HasBase: hasBase, Pieces: map[int32]string{}, Short: map[int32]int32{}}
	idOf := map[string]int32{}
	newID := func() int32 {
		id := int32(len(idOf) + 3)
		if wide {
			id += 70000
		}
		return id
	}
	for at := 0; at < len(full); {
		n := min(1+r.IntN(5), len(full)-at)
		piece, short := full[at:at+n], false
		if r.IntN(8) == 0 {
			piece, short = " "+piece, true
		}
		id, ok := idOf[piece]
		if !ok {
			id = newID()
			idOf[piece] = id
			t.Pieces[id] = piece
		}
		if short {
			t.Short[int32(len(t.Tokens))] = int32(n)
		}
		t.Tokens = append(t.Tokens, id)
		at += n
	}
	ids := slices.Collect(func(yield func(int32) bool) {
		for id := range t.Pieces {
			yield(id)
		}
	})
	slices.Sort(ids)
	for begin, wi := 0, 0; begin+20 < len(t.Tokens); begin, wi = begin+20, wi+2 {
		tw := TraceWindow{Index: wi, Begin: begin, FirstTarget: begin + 1 + r.IntN(5)}
		for range begin + 20 - tw.FirstTarget {
			s := TokenScore{NLL: float32(5 * r.Float64()), RunTop: ids[r.IntN(len(ids))], RunTopP: float32(r.Float64())}
			if hasBase {
				s.KLD, s.BaseNLL = float32(r.ExpFloat64()), float32(5*r.Float64())
				if r.IntN(40) == 0 {
					s.KLD = float32(math.Inf(1))
				}
				s.BaseTop, s.BaseP = ids[r.IntN(len(ids))], float32(r.Float64())
			}
			tw.Tokens = append(tw.Tokens, s)
		}
		t.Windows = append(t.Windows, tw)
	}
	return t, full
}

func TestTraceEncodeRoundTrip(t *testing.T) {
	for _, c := range []struct{ base, wide bool }{{true, false}, {false, false}, {true, true}, {false, true}} {
		tr, _ := randomTrace(3, c.base, c.wide)
		if err := tr.check(); err != nil {
			t.Fatal(err)
		}
		data, err := tr.Encode()
		if err != nil {
			t.Fatal(err)
		}
		w, rec := 2, 10
		if c.wide {
			w, rec = 4, 12
		}
		if c.base {
			rec += 12 + w
		}
		pieces := 0
		for _, p := range tr.Pieces {
			pieces += w + 2 + len(p)
		}
		if want := traceHeader + w*len(tr.Tokens) + pieces + 8*len(tr.Short) + 16*len(tr.Windows) + rec*tr.Scored() + 32; len(data) != want {
			t.Errorf("%+v: %d bytes, the layout gives %d", c, len(data), want)
		}
		got, err := DecodeTrace(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tr) {
			t.Fatalf("%+v: decoded trace differs", c)
		}
		for _, n := range []int{0, 8, traceHeader, len(data) / 2, len(data) - 1} {
			if _, err := DecodeTrace(data[:n]); err == nil {
				t.Errorf("%+v: %d of %d bytes decoded", c, n, len(data))
			}
		}
		bad := slices.Clone(data)
		bad[len(bad)/3] ^= 0x10
		if _, err := DecodeTrace(bad); err == nil {
			t.Errorf("%+v: a flipped byte decoded", c)
		}
	}
}

func FuzzDecodeTrace(f *testing.F) {
	tr, _ := randomTrace(4, true, false)
	data, err := tr.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:traceHeader+32])
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checksum guards the body; rehash it so the fuzzer reaches
		// the section checks.
		if len(data) >= traceHeader+32 {
			data = rehash(data)
		}
		got, err := DecodeTrace(data)
		if err != nil {
			return
		}
		again, err := got.Encode()
		if err != nil {
			return // a piece too long to encode cannot have decoded; ids alone differ in width
		}
		back, err := DecodeTrace(again)
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded trace does not decode the same: %v", err)
		}
	})
}

// rehash replaces data's trailing checksum by the right one.
func rehash(data []byte) []byte {
	out := slices.Clone(data[:len(data)-32])
	h := sha256.Sum256(out)
	return append(out, h[:]...)
}

// TestWorstRanksAsAReference: on random traces, each measure's listing is
// the n tokens (and windows) a plain sort of the measure computed here
// ranks first, ties by position in the text, with their figures.
func TestWorstRanksAsAReference(t *testing.T) {
	for seed := range uint64(4) {
		tr, _ := randomTrace(seed, true, seed%2 == 1)
		type ref struct {
			key   float64
			index int
		}
		measures := map[string]func(s TokenScore) float64{
			WorstByKLD: func(s TokenScore) float64 { return float64(s.KLD) },
			WorstByNLL: func(s TokenScore) float64 { return float64(s.NLL) - float64(s.BaseNLL) },
			WorstByDeltaP: func(s TokenScore) float64 {
				return -(math.Exp(-float64(s.NLL)) - math.Exp(-float64(s.BaseNLL)))
			},
		}
		for by, key := range measures {
			var all, wins []ref
			for _, w := range tr.Windows {
				var sum float64
				n := 0
				for j, s := range w.Tokens {
					k := key(s)
					all = append(all, ref{k, w.FirstTarget + j})
					if !math.IsInf(k, 0) {
						sum += k
						n++
					}
				}
				wins = append(wins, ref{sum / float64(n), w.Index})
			}
			order := func(a, b ref) int {
				if a.key != b.key {
					if a.key > b.key {
						return -1
					}
					return 1
				}
				return a.index - b.index
			}
			slices.SortFunc(all, order)
			slices.SortFunc(wins, order)
			l, err := Worst(tr, by, 15)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Tokens) != 15 || len(l.Windows) != min(15, len(tr.Windows)) {
				t.Fatalf("%s: %d tokens, %d windows", by, len(l.Tokens), len(l.Windows))
			}
			for i, x := range l.Tokens {
				if x.Index != all[i].index {
					t.Fatalf("seed %d %s: #%d is token %d, the reference's %d", seed, by, i, x.Index, all[i].index)
				}
				checkListed(t, tr, x)
			}
			for i, w := range l.Windows {
				if w.Window != wins[i].index {
					t.Fatalf("seed %d %s: window #%d is %d, the reference's %d", seed, by, i, w.Window, wins[i].index)
				}
			}
		}
	}
}

// checkListed checks a listed token's figures against the trace entry.
func checkListed(t *testing.T, tr *TokenTrace, x WorstToken) {
	t.Helper()
	var s TokenScore
	for _, w := range tr.Windows {
		if w.Index == x.Window {
			s = w.Tokens[x.Index-w.FirstTarget]
			if x.Position != x.Index-w.Begin {
				t.Errorf("token %d: position %d in a window from %d", x.Index, x.Position, w.Begin)
			}
		}
	}
	p, bp := math.Exp(-float64(s.NLL)), math.Exp(-float64(s.BaseNLL))
	if float32(x.NLL) != s.NLL || float32(*x.BaseNLL) != s.BaseNLL || math.Abs(*x.DeltaP-(p-bp)) > 1e-15 ||
		x.RunTop != tr.Pieces[s.RunTop] || *x.BaseTop != tr.Pieces[s.BaseTop] || x.Token != tr.Text(x.Index) ||
		x.TokenID != tr.Tokens[x.Index] || float32(x.RunTopP) != s.RunTopP || float32(*x.BaseTopP) != s.BaseP {
		t.Errorf("token %d listed as %+v, trace %+v", x.Index, x, s)
	}
	if math.IsInf(float64(s.KLD), 1) != x.KLDInfinite || (x.KLD != nil && float32(*x.KLD) != s.KLD) {
		t.Errorf("token %d: kld %v (infinite %v), trace %v", x.Index, x.KLD, x.KLDInfinite, s.KLD)
	}
}

// TestWorstExcerpts: a token's text before and after are the longest runs
// of at most ExcerptRunes whole characters of the text beside it, cut
// where the text has a character boundary.
func TestWorstExcerpts(t *testing.T) {
	tr, full := randomTrace(9, false, false)
	off := 0
	for i := range tr.Tokens {
		tok := tr.Text(i)
		if full[off:off+len(tok)] != tok {
			t.Fatalf("token %d: text %q, the text has %q", i, tok, full[off:off+len(tok)])
		}
		boundary := func(p int) bool { return p == len(full) || utf8.RuneStart(full[p]) }
		p := off
		for q := off; q >= 0; q-- {
			if boundary(q) && utf8.RuneCountInString(full[q:off]) <= ExcerptRunes {
				p = q
			}
		}
		end, e := off+len(tok), off+len(tok)
		for q := end; q <= len(full); q++ {
			if boundary(q) && utf8.RuneCountInString(full[end:q]) <= ExcerptRunes {
				e = q
			}
		}
		if got := tr.before(i, ExcerptRunes); got != full[p:off] {
			t.Fatalf("token %d: before %q, want %q", i, got, full[p:off])
		}
		if got := tr.after(i+1, ExcerptRunes); got != full[end:e] {
			t.Fatalf("token %d: after %q, want %q", i, got, full[end:e])
		}
		off = end
	}
}

func TestWorstRefusals(t *testing.T) {
	tr, _ := randomTrace(1, false, false)
	if _, err := Worst(tr, WorstByKLD, 5); err == nil || !strings.Contains(err.Error(), "--by nll") {
		t.Errorf("--by kld without a base: %v", err)
	}
	if _, err := Worst(tr, "ppl", 5); err == nil {
		t.Error("--by ppl accepted")
	}
	if _, err := Worst(tr, WorstByNLL, 0); err == nil {
		t.Error("-n 0 accepted")
	}
	l, err := Worst(tr, WorstByNLL, 3)
	if err != nil || l.Tokens[0].KLD != nil || l.Tokens[0].BaseTop != nil || l.Windows[0].MeanKLD != nil {
		t.Errorf("without a base: %+v, %v", l, err)
	}
}

func TestVisible(t *testing.T) {
	if got, want := Visible("a\nb\tc\x01\x7f\xe2\x82é"), "a⏎b⇥c␁␡<0xE2><0x82>é"; got != want {
		t.Errorf("Visible: %q, want %q", got, want)
	}
}
