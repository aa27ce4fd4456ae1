package tokenizer

// Fuzz targets: Encode never panics and yields in-range ids; byte-level BPE
// round-trips every valid UTF-8 string, SPM every valid UTF-8 string it can
// represent.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are the corpus lines, the test-vector strings when present, and
// some malformed UTF-8.
func fuzzSeeds(f *testing.F) {
	for _, s := range strings.Split(corpus, "\n") {
		f.Add(s)
	}
	if b, err := os.ReadFile(filepath.Join(dataDir, "vocab", "qwen3-vocab.gguf.inp")); err == nil {
		for _, s := range strings.Split(string(b), "\n__ggml_vocab_test__\n") {
			f.Add(s)
		}
	}
	for _, s := range []string{"", " ", "\xff\xfe", "a\xE2\x96", "\xC0\x80x", "\xF5\x80\x80\x80", "<think>  <|endoftext|>", "▁▁x"} {
		f.Add(s)
	}
}

// realTokenizers loads whichever of the named shared-data files exist.
func realTokenizers(tb testing.TB, rels ...string) []*Tokenizer {
	var out []*Tokenizer
	for _, rel := range rels {
		p := filepath.Join(dataDir, rel)
		if _, err := os.Stat(p); err == nil {
			out = append(out, loadTokenizer(tb, p))
		}
	}
	return out
}

func checkRange(t *testing.T, tok *Tokenizer, s string, ids []int32) {
	for _, id := range ids {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("%s/%s: id %d out of range for %q", tok.Kind(), tok.Pre(), id, s)
		}
	}
}

func FuzzBPE(f *testing.F) {
	fuzzSeeds(f)
	var toks []*Tokenizer
	for _, pre := range preTypeNames {
		tok, err := openTokenizer(f, bpeVocabKV(pre))
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	toks = append(toks, realTokenizers(f, "vocab/ggml-vocab-gpt-2.gguf", "vocab/qwen3-vocab.gguf",
		"vocab/llama3-vocab.gguf", "vocab/ggml-vocab-deepseek-coder.gguf", "vocab/ggml-vocab-mpt.gguf")...)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids := tok.Encode(s, true, false)
			checkRange(t, tok, s, ids)
			if utf8.ValidString(s) {
				if back := tok.Decode(ids); back != s {
					t.Fatalf("%s: round trip %q → %q", tok.Pre(), s, back)
				}
			}
			checkRange(t, tok, s, tok.Encode(s, false, true))
		}
	})
}

func FuzzSPM(f *testing.F) {
	fuzzSeeds(f)
	tok, err := openTokenizer(f, spmVocabKV())
	if err != nil {
		f.Fatal(err)
	}
	toks := append([]*Tokenizer{tok}, realTokenizers(f, "models/stories260K-f32.gguf", "vocab/ggml-vocab-llama-spm.gguf")...)
	f.Fuzz(func(t *testing.T, s string) {
	next:
		for _, tok := range toks {
			ids := tok.Encode(s, true, false)
			checkRange(t, tok, s, ids)
			checkRange(t, tok, s, tok.Encode(s, false, true))
			// SPM reads "▁" as a space, a malformed lead byte swallows the
			// "▁" of a following space into its byte fallback, and merging
			// may spell a CONTROL token such as "<s>" out of plain text;
			// elsewhere it must round-trip.
			if strings.Contains(s, spaceEscape) || !utf8.ValidString(s) {
				continue
			}
			body := ids
			if tok.AddBOS() {
				body = ids[1:]
			}
			for _, id := range body {
				if tok.attrs[id]&(attrControl|attrUnknown) != 0 {
					continue next
				}
			}
			if back := tok.Decode(ids); back != s {
				t.Fatalf("round trip %q → %q", s, back)
			}
		}
	})
}

// preTypeNames has one tokenizer.ggml.pre value for each distinct list of
// pre-tokenizer steps (and flags) lookupPre knows.
var preTypeNames = []string{"default", "falcon", "gpt-2", "llama-bpe", "dbrx", "qwen2", "qwen35", "smollm", "deepseek-coder"}

// FuzzPreSplit: every pre-tokenizer splits any text, valid UTF-8 or not,
// into non-empty words that cover it in order.
func FuzzPreSplit(f *testing.F) {
	fuzzSeeds(f)
	var steps [][]splitStep
	for _, name := range preTypeNames {
		pt, ok := lookupPre(name)
		if !ok {
			f.Fatalf("pre-type %q unknown", name)
		}
		steps = append(steps, pt.steps)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cps, _, _ := decodeLenient(s, nil, nil)
		fl := make([]uint16, len(cps))
		for i, c := range cps {
			fl[i] = cpFlags(c)
		}
		for i, st := range steps {
			ends, _ := preSplit(st, cps, fl, nil, nil)
			prev := 0
			for _, e := range ends {
				if int(e) <= prev || int(e) > len(cps) {
					t.Fatalf("%s: word end %d after %d (of %d code points) for %q", preTypeNames[i], e, prev, len(cps), s)
				}
				prev = int(e)
			}
			if prev != len(cps) {
				t.Fatalf("%s: words end at %d of %d code points for %q", preTypeNames[i], prev, len(cps), s)
			}
		}
	})
}
