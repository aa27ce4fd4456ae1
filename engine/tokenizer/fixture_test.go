package tokenizer

// Synthetic vocabularies written as GGUF files with the project's own writer:
// a byte-level BPE vocabulary trained on a small mixed-script corpus, and an
// SPM vocabulary with byte fallback. They need no shared data.

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"plexbench/engine/gguf"
)

// corpus mixes English, code, digits, accents, CJK and emoji so the trained
// merges touch every scanner branch.
const corpus = `The quick brown fox jumps over the lazy dog. I've been told he's there, we'll see.
func main() { fmt.Println("hello, world") } // 12345 + 678 = 13023
Führer Äpfel naïve café — нещо на Български, 我想在apple工作1314151天～ ` +
	"🦙🦙 3.14159 ----==== '''''' \t\ttabs\r\nCRLF  two  spaces   three\n\n\nend"

// trainBPE learns n merges on corpus words (split before spaces) in the
// byte-level alphabet, returning the tokens (256 byte characters in byte
// order, then merge results) and the merges.
func trainBPE(n int) (tokens, merges []string) {
	bm := newByteMap()
	for b := 0; b < 256; b++ {
		tokens = append(tokens, string(bm.toRune[b]))
	}
	seen := map[string]bool{}
	for _, t := range tokens {
		seen[t] = true
	}
	var words [][]string
	for _, w := range strings.SplitAfter(corpus, " ") {
		var syms []string
		for _, r := range string(bm.encode(nil, w)) {
			syms = append(syms, string(r))
		}
		words = append(words, syms)
	}
	for len(merges) < n {
		counts := map[[2]string]int{}
		for _, w := range words {
			for i := 1; i < len(w); i++ {
				counts[[2]string{w[i-1], w[i]}]++
			}
		}
		if len(counts) == 0 {
			break
		}
		pairs := make([][2]string, 0, len(counts))
		for p := range counts {
			pairs = append(pairs, p)
		}
		sort.Slice(pairs, func(i, j int) bool {
			if counts[pairs[i]] != counts[pairs[j]] {
				return counts[pairs[i]] > counts[pairs[j]]
			}
			return pairs[i][0]+" "+pairs[i][1] < pairs[j][0]+" "+pairs[j][1]
		})
		best := pairs[0]
		merges = append(merges, best[0]+" "+best[1])
		if m := best[0] + best[1]; !seen[m] {
			seen[m] = true
			tokens = append(tokens, m)
		}
		for k, w := range words {
			var out []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					out = append(out, best[0]+best[1])
					i++
					continue
				}
				out = append(out, w[i])
			}
			words[k] = out
		}
	}
	return tokens, merges
}

// writeGGUF writes kv as a vocab-only GGUF file and returns its path.
func writeGGUF(tb testing.TB, kv map[string]any) string {
	tb.Helper()
	w := gguf.NewWriter()
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.Set(k, kv[k])
	}
	p := filepath.Join(tb.TempDir(), "vocab.gguf")
	if err := w.WriteFile(p); err != nil {
		tb.Fatal(err)
	}
	return p
}

// openTokenizer writes kv and loads it with FromGGUF.
func openTokenizer(tb testing.TB, kv map[string]any) (*Tokenizer, error) {
	tb.Helper()
	f, err := gguf.Open(writeGGUF(tb, kv))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	return FromGGUF(f)
}

// bpeVocabKV is a byte-level BPE vocabulary with pre-tokenizer pre, plus a
// CONTROL <|endoftext|> (BOS/EOS) and USER_DEFINED <think> and "  ".
func bpeVocabKV(pre string) map[string]any {
	tokens, merges := trainBPE(300)
	types := make([]int32, len(tokens))
	for i := range types {
		types[i] = 1
	}
	tokens = append(tokens, "<|endoftext|>", "<think>", "  ")
	types = append(types, 3, 4, 4)
	eot := uint32(len(tokens) - 3)
	kv := map[string]any{
		"general.architecture":         "llama",
		"tokenizer.ggml.model":         "gpt2",
		"tokenizer.ggml.tokens":        tokens,
		"tokenizer.ggml.token_type":    types,
		"tokenizer.ggml.merges":        merges,
		"tokenizer.ggml.bos_token_id":  eot,
		"tokenizer.ggml.eos_token_id":  eot,
		"tokenizer.ggml.add_bos_token": true,
	}
	if pre != "" {
		kv["tokenizer.ggml.pre"] = pre
	}
	return kv
}

// spmVocabKV is an SPM vocabulary: <unk> <s> </s>, the 256 byte tokens,
// then pieces (the more common, the higher the score), and a USER_DEFINED
// <sep>.
func spmVocabKV() map[string]any {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	scores := []float32{0, 0, 0}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, "<0x"+hex2(b)+">")
		types = append(types, 6)
		scores = append(scores, 0)
	}
	pieces := []string{"▁", "e", "t", "h", "o", "a", "▁t", "he", "▁the", "▁a", "in", "er", "▁w", "or",
		"ld", "▁wor", "▁world", "ll", "▁he", "▁hell", "▁hello", "lo", "ow", "▁▁", "▁▁▁", "s", "▁s",
		"Ä", "pf", "el", "🦙", "▁3", "1", "2", "3", "12", "123", ".", ",", "!", "\n", "d", "l", "r", "w"}
	for i, p := range pieces {
		tokens = append(tokens, p)
		types = append(types, 1)
		scores = append(scores, -float32(i))
	}
	tokens = append(tokens, "<sep>")
	types = append(types, 4)
	scores = append(scores, 0)
	return map[string]any{
		"general.architecture":      "llama",
		"tokenizer.ggml.model":      "llama",
		"tokenizer.ggml.tokens":     tokens,
		"tokenizer.ggml.scores":     scores,
		"tokenizer.ggml.token_type": types,
	}
}

func hex2(b int) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// clone copies a fixture map so a test can change keys.
func clone(kv map[string]any) map[string]any {
	out := make(map[string]any, len(kv))
	for k, v := range kv {
		out[k] = v
	}
	return out
}
