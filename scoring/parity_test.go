package scoring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestTokenParity: on fresh random streams, the reported position is the
// first index where the streams differ (a naive scan), the excerpt marks
// that token on both sides, and equal streams of one tokenizer pass.
func TestTokenParity(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	decode := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&b, "<%d>", id)
		}
		return b.String()
	}
	for trial := range 200 {
		a := randomTokens(uint64(trial), 5+r.IntN(60), 9)
		b := slices.Clone(a)
		switch trial % 3 {
		case 0:
			b[r.IntN(len(b))] = 9 // outside a's alphabet: always a change
		case 1:
			b = b[:r.IntN(len(b))]
		}
		want := -1
		for i := range max(len(a), len(b)) {
			if i >= len(a) || i >= len(b) || a[i] != b[i] {
				want = i
				break
			}
		}
		err := TokenParity(TokenSide{Name: "A", Hash: "aa", Tokens: a, Decode: decode},
			TokenSide{Name: "B", Hash: "aa", Tokens: b, Decode: decode})
		if trial%3 == 2 {
			if err != nil {
				t.Fatalf("equal streams: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrTokenizerMismatch) || !strings.Contains(err.Error(), fmt.Sprintf("first different at token %d ", want)) {
			t.Fatalf("trial %d: want position %d: %v", trial, want, err)
		}
		markB := "[end]"
		if want < len(b) {
			markB = fmt.Sprintf("[<%d>]", b[want])
		}
		if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("[<%d>]", a[want])) || !strings.Contains(msg, markB) {
			t.Fatalf("trial %d: excerpts do not mark token %d: %s", trial, want, msg)
		}
	}
	// Different tokenizers are refused even on equal streams; an unknown
	// hash leaves the streams to decide.
	ids := []int32{1, 2, 3}
	if err := TokenParity(TokenSide{Name: "A", Hash: "aa", Tokens: ids}, TokenSide{Name: "B", Hash: "bb", Tokens: ids}); !errors.Is(err, ErrTokenizerMismatch) ||
		!strings.Contains(err.Error(), "tokenizers differ: A (tokenizer aa…) and B (tokenizer bb…): the 3 tokens agree") {
		t.Fatalf("two tokenizers: %v", err)
	}
	if err := TokenParity(TokenSide{Name: "A", Tokens: ids}, TokenSide{Name: "B", Hash: "bb", Tokens: ids}); err != nil {
		t.Fatalf("an unknown hash: %v", err)
	}
	// What to do: across tokenizers, bits per byte; with one tokenizer the
	// texts differ, so the same text (against a base, the base's).
	other := []int32{1, 2, 4}
	for _, c := range []struct {
		a, b TokenSide
		want string
	}{
		{TokenSide{Name: "A", Hash: "aa", Tokens: ids}, TokenSide{Name: "B", Hash: "bb", Tokens: other}, "compare them by bits per byte only (--allow-tokenizer-mismatch)"},
		{TokenSide{Name: "this run", Hash: "aa", Tokens: ids}, TokenSide{Name: "the base b.kld", Hash: "aa", Tokens: other, Base: true},
			"the tokenizer is the same, so the texts differ: use the base's text (leave out --perplexity and --perplexity-tokens to score the base's own tokens)"},
		{TokenSide{Name: "A", Hash: "aa", Tokens: ids}, TokenSide{Name: "B", Hash: "aa", Tokens: other}, "the tokenizer is the same, so the texts differ: score the same text on both"},
	} {
		err := TokenParity(c.a, c.b)
		if msg := fmt.Sprint(err); !strings.HasSuffix(msg, "; "+c.want) || (c.a.Hash == c.b.Hash && strings.Contains(msg, "bits per byte")) {
			t.Errorf("%s vs %s: %v\nwant it to end %q", c.a.Name, c.b.Name, err, c.want)
		}
	}
}
