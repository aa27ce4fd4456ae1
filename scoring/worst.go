package scoring

// worst.go owns what `plexbench worst` and the TUI list from a token
// trace: the scored tokens ranked by KLD, by NLL increase over the base or
// by the drop in the true token's probability, each with its text either
// side, and the windows ranked by the same measure's mean with their
// opening text. Both list the same rows, drawn by WorstLines.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What a listing ranks by.
const (
	WorstByKLD    = "kld"     // the token's KLD against the base, largest first
	WorstByNLL    = "nll"     // its NLL increase over the base (without one, its NLL), largest first
	WorstByDeltaP = "delta_p" // the change in the true token's probability, most negative first
)

// WorstN is how many tokens and windows a listing shows unless asked.
const WorstN = 20

// DefaultWorstBy is what a listing of t ranks by unless asked: the KLD,
// or without a base the NLL.
func DefaultWorstBy(t *TokenTrace) string {
	if t.HasBase {
		return WorstByKLD
	}
	return WorstByNLL
}

// ExcerptRunes is how many characters of text a listing shows either
// side of a token, and twice that of a window's opening.
const ExcerptRunes = 40

// ErrNoBase marks a listing that needs a comparison of a run without one.
var ErrNoBase = errors.New("compared against no base")

// WorstList is a listing: `worst --json` prints it as it is.
type WorstList struct {
	Tokens  []WorstToken  `json:"tokens"`
	Windows []WorstWindow `json:"windows"`
}

// WorstToken is one listed token. Fields a run without a base lacks are
// null; kld is null too when the KLD is infinite (kld_infinite).
type WorstToken struct {
	Window     int      `json:"window"`
	Position   int      `json:"position"` // in the window: the token's index less the window's begin
	KLD        *float64 `json:"kld"`
	NLL        float64  `json:"nll"`
	DeltaP     *float64 `json:"delta_p"`
	Token      string   `json:"token"`
	BaseTop    *string  `json:"base_top"`
	RunTop     string   `json:"run_top"`
	TextBefore string   `json:"text_before"`
	TextAfter  string   `json:"text_after"`

	Index       int      `json:"token_index"` // in the text's tokens
	TokenID     int32    `json:"token_id"`
	KLDInfinite bool     `json:"kld_infinite,omitempty"`
	BaseNLL     *float64 `json:"base_nll"`
	P           float64  `json:"p"`      // the true token's probability under the run
	BaseP       *float64 `json:"base_p"` // and under the base
	BaseTopID   *int32   `json:"base_top_id"`
	BaseTopP    *float64 `json:"base_top_p"`
	RunTopID    int32    `json:"run_top_id"`
	RunTopP     float64  `json:"run_top_p"`
}

// WorstWindow is one listed window: means over its scored tokens (the
// KLD's over its finite ones).
type WorstWindow struct {
	Window          int      `json:"window"`
	Begin           int      `json:"begin"`
	Scored          int      `json:"scored"`
	MeanKLD         *float64 `json:"mean_kld"`
	MeanNLL         float64  `json:"mean_nll"`
	MeanNLLIncrease *float64 `json:"mean_nll_increase"`
	MeanDeltaP      *float64 `json:"mean_delta_p"`
	Text            string   `json:"text"` // its opening
}

// Worst lists t's n worst tokens and n worst windows by by.
func Worst(t *TokenTrace, by string, n int) (WorstList, error) {
	switch {
	case by != WorstByKLD && by != WorstByNLL && by != WorstByDeltaP:
		return WorstList{}, fmt.Errorf("--by %q: give kld, nll or delta_p", by)
	case by != WorstByNLL && !t.HasBase:
		return WorstList{}, fmt.Errorf("%w: --by %s needs a comparison; this run has only its own NLLs (--by nll)", ErrNoBase, by)
	case n < 1:
		return WorstList{}, fmt.Errorf("-n %d: list at least one", n)
	}
	type ranked struct {
		key  float64
		w, j int // window, its j-th scored token
	}
	var toks []ranked
	for w, tw := range t.Windows {
		for j, s := range tw.Tokens {
			toks = append(toks, ranked{worstKey(by, s, t.HasBase), w, j})
		}
	}
	worst := func(a, b ranked) int {
		if c := cmp.Compare(b.key, a.key); c != 0 {
			return c
		}
		return cmp.Compare(t.Windows[a.w].FirstTarget+a.j, t.Windows[b.w].FirstTarget+b.j)
	}
	slices.SortFunc(toks, worst)
	l := WorstList{Tokens: []WorstToken{}, Windows: []WorstWindow{}}
	for _, r := range toks[:min(n, len(toks))] {
		l.Tokens = append(l.Tokens, t.worstToken(r.w, r.j))
	}
	var wins []ranked
	for w, tw := range t.Windows {
		if k, ok := windowKey(by, tw.Tokens, t.HasBase); ok {
			wins = append(wins, ranked{k, w, 0})
		}
	}
	slices.SortFunc(wins, worst)
	for _, r := range wins[:min(n, len(wins))] {
		l.Windows = append(l.Windows, t.worstWindow(r.w))
	}
	return l, nil
}

// worstKey is a token's rank by by: larger is worse. A NaN KLD ranks as
// an infinite one.
func worstKey(by string, s TokenScore, hasBase bool) float64 {
	switch {
	case by == WorstByKLD && math.IsNaN(float64(s.KLD)):
		return math.Inf(1)
	case by == WorstByKLD:
		return float64(s.KLD)
	case by == WorstByDeltaP:
		return -deltaP(s)
	case hasBase:
		return float64(s.NLL) - float64(s.BaseNLL)
	}
	return float64(s.NLL)
}

// deltaP is the change in the true token's probability, run less base.
func deltaP(s TokenScore) float64 {
	return math.Exp(-float64(s.NLL)) - math.Exp(-float64(s.BaseNLL))
}

// windowKey is a window's rank: the mean of its tokens' keys (the finite
// ones for the KLD); false when it has none.
func windowKey(by string, ss []TokenScore, hasBase bool) (float64, bool) {
	var sum float64
	n := 0
	for _, s := range ss {
		k := worstKey(by, s, hasBase)
		if by == WorstByKLD && math.IsInf(k, 0) {
			continue
		}
		sum += k
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// worstToken is the listing of window w's j-th scored token.
func (t *TokenTrace) worstToken(w, j int) WorstToken {
	tw, s := t.Windows[w], t.Windows[w].Tokens[j]
	i := tw.FirstTarget + j
	x := WorstToken{Window: tw.Index, Position: i - tw.Begin, NLL: short(s.NLL), Token: t.Text(i),
		RunTop: t.Pieces[s.RunTop], TextBefore: t.before(i, ExcerptRunes), TextAfter: t.after(i+1, ExcerptRunes),
		Index: i, TokenID: t.Tokens[i], P: math.Exp(-float64(s.NLL)), RunTopID: s.RunTop, RunTopP: short(s.RunTopP)}
	if !t.HasBase {
		return x
	}
	if k := short(s.KLD); math.IsInf(k, 0) || math.IsNaN(k) {
		x.KLDInfinite = true
	} else {
		x.KLD = &k
	}
	dp, bn, bp, btp := deltaP(s), short(s.BaseNLL), math.Exp(-float64(s.BaseNLL)), short(s.BaseP)
	top, id := t.Pieces[s.BaseTop], s.BaseTop
	x.DeltaP, x.BaseNLL, x.BaseP, x.BaseTopP, x.BaseTop, x.BaseTopID = &dp, &bn, &bp, &btp, &top, &id
	return x
}

// short is an f32 value as the float64 of its shortest decimal, so JSON
// shows the digits it holds and no more.
func short(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

// worstWindow is the listing of window w.
func (t *TokenTrace) worstWindow(w int) WorstWindow {
	tw := t.Windows[w]
	x := WorstWindow{Window: tw.Index, Begin: tw.Begin, Scored: len(tw.Tokens), Text: t.after(tw.Begin, 2*ExcerptRunes)}
	x.MeanNLL, _ = windowKey(WorstByNLL, tw.Tokens, false)
	if t.HasBase {
		inc, _ := windowKey(WorstByNLL, tw.Tokens, true)
		dp, _ := windowKey(WorstByDeltaP, tw.Tokens, true)
		dp = -dp
		x.MeanNLLIncrease, x.MeanDeltaP = &inc, &dp
		if k, ok := windowKey(WorstByKLD, tw.Tokens, true); ok {
			x.MeanKLD = &k
		}
	}
	return x
}

// before is up to n characters of the text before token i: whole
// characters, from whole tokens.
func (t *TokenTrace) before(i, n int) string {
	var b []byte
	// A few characters more than n: a character cut across tokens counts
	// one per byte until all of it is in.
	for j := i - 1; j >= 0 && utf8.RuneCount(b) <= n+utf8.UTFMax; j-- {
		b = append([]byte(t.Text(j)), b...)
	}
	for utf8.RuneCount(b) > n || (len(b) > 0 && !utf8.RuneStart(b[0])) {
		_, size := utf8.DecodeRune(b)
		b = b[size:]
	}
	return string(b)
}

// after is up to n characters of the text from token i on.
func (t *TokenTrace) after(i, n int) string {
	var b []byte
	for j := i; j < len(t.Tokens) && utf8.RuneCount(b) <= n+utf8.UTFMax; j++ {
		b = append(b, t.Text(j)...)
	}
	for utf8.RuneCount(b) > n || (len(b) > 0 && !utf8.FullRune(b[lastRuneStart(b):])) {
		_, size := utf8.DecodeLastRune(b)
		b = b[:len(b)-size]
	}
	return string(b)
}

// lastRuneStart is where b's last character begins (a stray
// continuation byte counts as one).
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b) - 1
}

// Visible shows text on one line: newlines, tabs and other control
// characters as symbols, bytes that are not UTF-8 as <0xHH>.
func Visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "<0x%02X>", s[i])
		case r == '\n':
			b.WriteString("⏎")
		case r == '\t':
			b.WriteString("⇥")
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('␡')
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// WorstLines draws a listing's tokens (or, with windows, its windows),
// two lines each: the figures, then the text with the token marked ⟦ ⟧.
func WorstLines(l WorstList, windows bool) []string {
	var out []string
	if windows {
		for i, w := range l.Windows {
			out = append(out, fmt.Sprintf("%3d. window %d (from token %d, %d scored)  mean KLD %s  mean NLL %.4f (%s)  mean Δp %s",
				i+1, w.Window, w.Begin, w.Scored, fmtOpt(w.MeanKLD, "%.5f"), w.MeanNLL, fmtOpt(w.MeanNLLIncrease, "%+.4f"),
				fmtOpt(w.MeanDeltaP, "%+.4f")), "     "+Visible(w.Text))
		}
		return out
	}
	for i, x := range l.Tokens {
		kld := fmtOpt(x.KLD, "%.5f")
		if x.KLDInfinite {
			kld = "inf"
		}
		base := "n/a"
		if x.BaseTop != nil {
			base = fmt.Sprintf("%q %.3f", Visible(*x.BaseTop), *x.BaseTopP)
		}
		out = append(out, fmt.Sprintf("%3d. window %d pos %d  KLD %s  NLL %.4f (base %s)  Δp %s  token %q  base top %s  run top %q %.3f",
			i+1, x.Window, x.Position, kld, x.NLL, fmtOpt(x.BaseNLL, "%.4f"), fmtOpt(x.DeltaP, "%+.4f"),
			Visible(x.Token), base, Visible(x.RunTop), x.RunTopP),
			"     "+Visible(x.TextBefore)+"⟦"+Visible(x.Token)+"⟧"+Visible(x.TextAfter))
	}
	return out
}

// fmtOpt formats *v, or "n/a" when there is none.
func fmtOpt(v *float64, format string) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf(format, *v)
}
