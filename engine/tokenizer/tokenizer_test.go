package tokenizer

// Unit tests on synthetic vocabularies: pre-tokenizer splits derived by
// hand from the regexes in ../shared/spec/tokenizers.md §4.2, metadata
// defaults and errors, special-token partition, SPM leading-space handling.

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// splitWords pre-tokenizes text with the steps of pre.
func splitWords(t *testing.T, pre, text string) []string {
	t.Helper()
	pt, ok := lookupPre(pre)
	if !ok {
		t.Fatalf("pre %q not supported", pre)
	}
	cps, offs, exact := decodeLenient(text, nil, nil)
	if !exact {
		t.Fatalf("%q is not canonical UTF-8", text)
	}
	fl := make([]uint16, len(cps))
	for i, c := range cps {
		fl[i] = cpFlags(c)
	}
	ends, _ := preSplit(pt.steps, cps, fl, nil, nil)
	var words []string
	lo := 0
	for _, e := range ends {
		words = append(words, text[offs[lo]:offs[e]])
		lo = int(e)
	}
	return words
}

func TestPreSplit(t *testing.T) {
	cases := []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello  world", []string{"Hello", " ", " world"}},
		{"gpt-2", "I've 's", []string{"I", "'ve", " '", "s"}},
		{"gpt-2", "a  \n b", []string{"a", "  \n", " b"}},
		{"gpt-2", "12345 x", []string{"12345", " x"}},
		{"gpt-2", "I'VE", []string{"I", "'", "VE"}}, // GPT-2 contractions are case-sensitive
		{"gpt-2", "end ", []string{"end", " "}},
		{"llama-bpe", "12345", []string{"123", "45"}},
		{"llama-bpe", "a\n\n  x", []string{"a", "\n\n", " ", " x"}},
		{"llama-bpe", "Hello, world!\n", []string{"Hello", ",", " world", "!\n"}},
		{"llama-bpe", "I'VE .abc", []string{"I", "'VE", " .", "abc"}},
		{"llama-bpe", "x.abc", []string{"x", ".abc"}},
		{"llama-bpe", "x \t\r\n y", []string{"x", " \t\r\n", " y"}},
		{"qwen2", "12345", []string{"1", "2", "3", "4", "5"}},
		{"qwen2", "e\u0301x", []string{"e", "\u0301x"}},
		{"qwen35", "e\u0301x", []string{"e\u0301x"}},
		{"qwen35", "a+\u0301", []string{"a", "+\u0301"}},
		{"default", "Hello, world! 12345", []string{"Hello", ",", " world", "!", " ", "123", "45"}},
		{"smollm", "abc 123", []string{"abc", " ", "1", "2", "3"}},
		{"deepseek-coder", "Hello, 世界!\n12", []string{"Hello", ",", " ", "世界", "!", "\n", "1", "2"}},
		{"deepseek-coder", "a\u3000b", []string{"a", "\u3000b"}}, // U+3000 is whitespace: \s?\p{L}+
		{"falcon", "a`b 1234", []string{"a", "`", "b", " ", "123", "4"}},
	}
	for _, c := range cases {
		if got := splitWords(t, c.pre, c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}

func TestDecodeLenient(t *testing.T) {
	cases := []struct {
		in    string
		want  []rune
		exact bool
	}{
		{"aé€😀", []rune{'a', 'é', '€', '😀'}, true},
		{"\x80a", []rune{0xFFFD, 'a'}, false},
		{"\xC0\x80", []rune{0}, false},              // overlong: decoded, not canonical
		{"\xED\xA0\x80", []rune{0xD800}, true},      // surrogate round-trips
		{"\xE2\x82", []rune{0xFFFD, 0xFFFD}, false}, // truncated
		{"\xF8\x88", []rune{0xFFFD, 0xFFFD}, false},
	}
	for _, c := range cases {
		got, offs, exact := decodeLenient(c.in, nil, nil)
		if !slices.Equal(got, c.want) || exact != c.exact || len(offs) != len(got)+1 {
			t.Errorf("%q: got %U exact %v offs %v; want %U exact %v", c.in, got, exact, offs, c.want, c.exact)
		}
		if c.exact {
			var b []byte
			for _, r := range got {
				b = encodeLenient(b, r)
			}
			if string(b) != c.in {
				t.Errorf("%q re-encodes to %q", c.in, b)
			}
		}
	}
}

// TestUnicodeVersion guards categoryFlags: llama.cpp's flag table was
// generated from Unicode 15.1 and we patch Go's 15.0 tables up to it. A Go
// release with newer tables would classify characters llama.cpp calls
// unassigned, so the patch list must be revisited then.
func TestUnicodeVersion(t *testing.T) {
	if unicode.Version != "15.0.0" {
		t.Errorf("Go's unicode tables are %s; categoryFlags assumes 15.0.0 patched to llama.cpp's 15.1", unicode.Version)
	}
	for _, c := range []struct {
		r    rune
		want uint16
	}{
		{0x2EBF0, fLetter}, {0x2EE5D, fLetter}, {0x2EE5E, fUndef}, {0x2FFC, fSymbol}, {0x31EF, fSymbol},
		{0x1C89, fUndef}, // added in Unicode 16: unassigned for llama.cpp
		{'a', fLetter}, {'5', fNumber}, {0x301, fMark}, {'!', fPunct}, {'$', fSymbol}, {0xA0, fSep | fSpace},
		{0x3000, fSep | fSpace}, {0x1C, fControl}, {0x85, fControl | fSpace}, {0xE000, fControl}, {0x110000, fUndef},
	} {
		if got := cpFlags(c.r); got != c.want {
			t.Errorf("flags(%U) = %#x, want %#x", c.r, got, c.want)
		}
	}
}

func TestByteMap(t *testing.T) {
	m := newByteMap()
	if m.toRune[' '] != 'Ġ' || m.toRune['\n'] != 'Ċ' || m.toRune['a'] != 'a' || m.toRune[0xAD] != 0x143 {
		t.Fatalf("byte map: space %U newline %U a %U 0xAD %U", m.toRune[' '], m.toRune['\n'], m.toRune['a'], m.toRune[0xAD])
	}
	seen := map[rune]bool{}
	for b := 0; b < 256; b++ {
		r := m.toRune[b]
		if seen[r] || m.toByte[r] != int16(b) {
			t.Fatalf("byte %#x: rune %U not a bijection", b, r)
		}
		seen[r] = true
	}
}

func TestLoadErrors(t *testing.T) {
	bpe := bpeVocabKV("gpt-2")
	cases := []struct {
		name string
		edit func(kv map[string]any)
		want error
	}{
		{"missing model", func(kv map[string]any) { delete(kv, "tokenizer.ggml.model") }, ErrInvalid},
		{"wordpiece", func(kv map[string]any) { kv["tokenizer.ggml.model"] = "bert" }, ErrUnsupported},
		{"unknown pre", func(kv map[string]any) { kv["tokenizer.ggml.pre"] = "no-such-pre" }, ErrUnsupported},
		{"tekken", func(kv map[string]any) { kv["tokenizer.ggml.pre"] = "tekken" }, ErrUnsupported},
		{"missing tokens", func(kv map[string]any) { delete(kv, "tokenizer.ggml.tokens") }, ErrInvalid},
		{"missing merges", func(kv map[string]any) { delete(kv, "tokenizer.ggml.merges") }, ErrInvalid},
		{"short types", func(kv map[string]any) { kv["tokenizer.ggml.token_type"] = []int32{1, 1} }, ErrInvalid},
		{"string types", func(kv map[string]any) { kv["tokenizer.ggml.token_type"] = []string{"x"} }, ErrInvalid},
		{"short scores", func(kv map[string]any) { kv["tokenizer.ggml.scores"] = []float32{0} }, ErrInvalid},
		{"duplicate token", func(kv map[string]any) {
			toks := slices.Clone(kv["tokenizer.ggml.tokens"].([]string))
			toks[5] = toks[6]
			kv["tokenizer.ggml.tokens"] = toks
		}, ErrInvalid},
		{"add_bos without bos", func(kv map[string]any) {
			// Ten tokens: the BPE default BOS (11) is out of range too.
			kv["tokenizer.ggml.tokens"] = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
			kv["tokenizer.ggml.token_type"] = []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
			kv["tokenizer.ggml.merges"] = []string{"a b"}
			kv["tokenizer.ggml.bos_token_id"] = uint32(1 << 30)
		}, ErrInvalid},
		{"bool as string", func(kv map[string]any) { kv["tokenizer.ggml.add_bos_token"] = "yes" }, ErrInvalid},
		{"id as string", func(kv map[string]any) { kv["tokenizer.ggml.eos_token_id"] = "2" }, ErrInvalid},
	}
	for _, c := range cases {
		kv := clone(bpe)
		c.edit(kv)
		_, err := openTokenizer(t, kv)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), "vocab.gguf") {
			t.Errorf("%s: error does not name the file: %v", c.name, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	cases := []struct {
		name    string
		kv      map[string]any
		drop    []string
		pre     string
		addBOS  bool
		bos     int32
		kind    string
		prefix  bool
		ignMrgs bool
	}{
		{"qwen2 default no bos", bpeVocabKV("qwen2"), []string{"tokenizer.ggml.add_bos_token"}, "qwen2", false, 0, KindBPE, false, false},
		{"llama-bpe default bos", bpeVocabKV("llama-bpe"), []string{"tokenizer.ggml.add_bos_token"}, "llama-bpe", true, 0, KindBPE, false, true},
		{"missing pre", bpeVocabKV(""), nil, "default", true, 0, KindBPE, false, false},
		{"spm", spmVocabKV(), nil, "default", true, 1, KindSPM, true, false},
	}
	for _, c := range cases {
		kv := clone(c.kv)
		for _, k := range c.drop {
			delete(kv, k)
		}
		tok, err := openTokenizer(t, kv)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		bos := c.bos
		if c.kind == KindBPE {
			bos = int32(tok.VocabSize() - 3) // the fixture's <|endoftext|>
		}
		if tok.Pre() != c.pre || tok.AddBOS() != c.addBOS || tok.BOS() != bos || tok.Kind() != c.kind ||
			tok.addSpacePrefix != c.prefix || tok.ignoreMerges != c.ignMrgs || tok.AddEOS() {
			t.Errorf("%s: pre %q add_bos %v bos %d kind %s prefix %v ignore_merges %v add_eos %v",
				c.name, tok.Pre(), tok.AddBOS(), tok.BOS(), tok.Kind(), tok.addSpacePrefix, tok.ignoreMerges, tok.AddEOS())
		}
	}

	// Keys override defaults; out-of-range ids keep the default, which is
	// itself dropped when out of range (BPE's 11 survives, SPM's 2 too).
	kv := spmVocabKV()
	kv["tokenizer.ggml.add_bos_token"] = false
	kv["tokenizer.ggml.add_eos_token"] = true
	kv["tokenizer.ggml.add_space_prefix"] = false
	kv["tokenizer.ggml.eos_token_id"] = uint32(4294967295)
	kv["tokenizer.ggml.bos_token_id"] = int32(-1) // "none": ignored, the default stays
	tok, err := openTokenizer(t, kv)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AddBOS() || !tok.AddEOS() || tok.EOS() != 2 || tok.BOS() != 1 || tok.addSpacePrefix {
		t.Errorf("overrides: add_bos %v add_eos %v eos %d bos %d prefix %v", tok.AddBOS(), tok.AddEOS(), tok.EOS(), tok.BOS(), tok.addSpacePrefix)
	}
	ids := tok.Encode("he", true, false)
	if len(ids) == 0 || ids[len(ids)-1] != 2 || ids[0] == 1 {
		t.Errorf("add_eos/no bos: %v", ids)
	}
	if tok.TokenText(1) != "<s>" || tok.TokenText(-1) != "" || tok.TokenText(int32(tok.VocabSize())) != "" {
		t.Error("TokenText")
	}
}

func TestEmptyTokenRenamed(t *testing.T) {
	kv := spmVocabKV()
	toks := slices.Clone(kv["tokenizer.ggml.tokens"].([]string))
	toks[len(toks)-2] = ""
	kv["tokenizer.ggml.tokens"] = toks
	tok, err := openTokenizer(t, kv)
	if err != nil {
		t.Fatal(err)
	}
	id := int32(len(toks) - 2)
	if got := tok.TokenText(id); got != "[EMPTY_"+strconv.Itoa(int(id))+"]" {
		t.Errorf("empty token text %q", got)
	}
}

func TestPartition(t *testing.T) {
	tok, err := openTokenizer(t, bpeVocabKV("gpt-2"))
	if err != nil {
		t.Fatal(err)
	}
	n := int32(tok.VocabSize())
	eot, think, twoSp := n-3, n-2, n-1
	ids := tok.Encode("a<think>b", false, false)
	if !slices.Contains(ids, think) {
		t.Errorf("USER_DEFINED <think> not split out: %v", ids)
	}
	if ids := tok.Encode("a<|endoftext|>b", false, false); slices.Contains(ids, eot) {
		t.Errorf("CONTROL token parsed from plain text: %v", ids)
	}
	if ids := tok.Encode("a<|endoftext|>b", false, true); !slices.Contains(ids, eot) {
		t.Errorf("CONTROL token not parsed with parseSpecial: %v", ids)
	}
	if ids := tok.Encode("x  y", false, false); !slices.Contains(ids, twoSp) {
		t.Errorf("USER_DEFINED two-space token not split out: %v", ids)
	}
	// Fragments around special tokens are tokenized independently.
	want := append(append(tok.Encode("a", false, false), think), tok.Encode("b", false, false)...)
	if got := tok.Encode("a<think>b", false, false); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := tok.Encode("", true, false); !slices.Equal(got, []int32{eot}) {
		t.Errorf("empty text with BOS: %v", got)
	}
}

func TestPhi3RStrip(t *testing.T) {
	kv := spmVocabKV()
	plain, err := openTokenizer(t, kv)
	if err != nil {
		t.Fatal(err)
	}
	kv["general.name"] = "Phi3"
	phi, err := openTokenizer(t, kv)
	if err != nil {
		t.Fatal(err)
	}
	a, b := phi.Encode("he<sep>  he", false, false), phi.Encode("he<sep>he", false, false)
	if !slices.Equal(a, b) {
		t.Errorf("phi-3 RSTRIP: %v vs %v", a, b)
	}
	if c := plain.Encode("he<sep>  he", false, false); slices.Equal(c, b) {
		t.Errorf("RSTRIP applied without the phi-3 name: %v", c)
	}
}

func TestSPMSpacePrefix(t *testing.T) {
	tok, err := openTokenizer(t, spmVocabKV())
	if err != nil {
		t.Fatal(err)
	}
	sep := int32(tok.VocabSize() - 1)
	hello := tok.Encode("hello", false, false)
	if len(hello) == 0 || tok.TokenText(hello[0]) != "▁hello" {
		t.Fatalf("first fragment not space-prefixed: %v", hello)
	}
	// The fragment after a special token is prefixed too.
	ids := tok.Encode("hello<sep>hello", false, false)
	want := append(append(slices.Clone(hello), sep), hello...)
	if !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
	for _, s := range []string{"hello", " hello", "  two", "hello<sep>world", "<sep> x", "a\nb\x00\xff€🦙", "", "12 3.14"} {
		if got := tok.Decode(tok.Encode(s, true, false)); got != s {
			t.Errorf("round trip %q → %q", s, got)
		}
	}
}

// TestSPMBarrierIsExact compares the run-split merge (barrier bytes) with
// one queue over the whole text.
func TestSPMBarrierIsExact(t *testing.T) {
	tok, err := openTokenizer(t, spmVocabKV())
	if err != nil {
		t.Fatal(err)
	}
	if !tok.spmBarrier['\n'] || tok.spmBarrier['e'] {
		t.Fatalf("barriers: newline %v, e %v", tok.spmBarrier['\n'], tok.spmBarrier['e'])
	}
	text := strings.Repeat("hello world\nthe\n\nhe ll o 123\n", 20) + corpus
	got := tok.Encode(text, true, false)
	noBarrier := *tok
	noBarrier.spmBarrier = [128]bool{}
	if want := noBarrier.Encode(text, true, false); !slices.Equal(got, want) {
		t.Error("barrier split changes the result")
	}
}

func TestBPERoundTripAllPres(t *testing.T) {
	for _, pre := range []string{"default", "falcon", "gpt-2", "mpt", "llama-bpe", "dbrx", "qwen2", "qwen35", "smollm", "starcoder", "deepseek-coder"} {
		tok, err := openTokenizer(t, bpeVocabKV(pre))
		if err != nil {
			t.Fatalf("%s: %v", pre, err)
		}
		for _, s := range strings.Split(corpus, "\n") {
			if got := tok.Decode(tok.Encode(s, true, false)); got != s {
				t.Errorf("%s: round trip %q → %q", pre, s, got)
			}
		}
	}
}

// TestPieceBytes checks that every prefix of a tokenization covers the
// bytes PieceBytes gives it: its sum over ids[:i] is len(Decode(ids[:i])),
// and each id adds the last of those bytes of its Piece,
// across SPM's space prefix (also after a special token), byte-fallback
// tokens inside one UTF-8 character and BPE's byte-level pieces.
func TestPieceBytes(t *testing.T) {
	spm, err := openTokenizer(t, spmVocabKV())
	if err != nil {
		t.Fatal(err)
	}
	toks := map[string]*Tokenizer{"spm": spm}
	for _, pre := range []string{"gpt-2", "llama-bpe", "qwen2"} {
		if toks[pre], err = openTokenizer(t, bpeVocabKV(pre)); err != nil {
			t.Fatal(err)
		}
	}
	texts := []string{"hello", " hello world", "  two", "hello<sep>world", "<sep> x", "a\nb\x00é€🦙", "12 3.14"}
	for name, tok := range toks {
		for _, s := range texts {
			ids := tok.Encode(s, true, false)
			n := tok.PieceBytes(ids)
			if sumBytes(n) != len(s) {
				t.Errorf("%s %q: pieces sum to %d bytes, want %d", name, s, sumBytes(n), len(s))
			}
			for i := range ids {
				if got, want := sumBytes(n[:i]), len(tok.Decode(ids[:i])); got != want {
					t.Errorf("%s %q: first %d ids cover %d bytes, Decode gives %d", name, s, i, got, want)
				}
				// In place, an id adds the end of its Piece: all of it, or
				// without the leading space SPM drops.
				p, d := tok.Piece(ids[i]), tok.Decode(ids[:i+1])
				if int(n[i]) > len(p) || len(p)-int(n[i]) > 1 || d != tok.Decode(ids[:i])+p[len(p)-int(n[i]):] {
					t.Errorf("%s %q: id %d adds %q (%d bytes), Piece %q", name, s, ids[i], d, n[i], p)
				}
			}
		}
	}
}

func sumBytes(n []int32) int {
	s := 0
	for _, v := range n {
		s += int(v)
	}
	return s
}
