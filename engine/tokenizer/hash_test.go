package tokenizer

import (
	"slices"
	"testing"
)

// TestHash: a tokenizer's hash is stable, ignores metadata the tokenizer
// does not read, and moves with each thing it does read.
func TestHash(t *testing.T) {
	hashOf := func(kv map[string]any) string {
		t.Helper()
		tk, err := openTokenizer(t, kv)
		if err != nil {
			t.Fatal(err)
		}
		return tk.Hash()
	}
	with := func(kv map[string]any, key string, v any) map[string]any {
		kv = clone(kv)
		kv[key] = v
		return kv
	}
	edit := func(kv map[string]any, key string, f func(any) any) map[string]any {
		return with(kv, key, f(kv[key]))
	}
	spm, bpe := spmVocabKV(), bpeVocabKV("llama3")
	for _, base := range []map[string]any{spm, bpe} {
		h := hashOf(base)
		if len(h) != 64 || hashOf(clone(base)) != h {
			t.Fatalf("hash %q is not a stable SHA-256", h)
		}
		for name, kv := range map[string]map[string]any{
			"general.name":       with(base, "general.name", "another model"),
			"an unread id key":   with(base, "tokenizer.ggml.padding_token_id", uint32(0)),
			"add_bos restated":   with(base, "tokenizer.ggml.add_bos_token", true),
			"an unrelated key":   with(base, "general.license", "mit"),
			"architecture named": with(base, "general.architecture", "qwen3"),
		} {
			if hashOf(kv) != h {
				t.Errorf("%s moved the hash", name)
			}
		}
	}
	renamed := func(v any) any {
		s := slices.Clone(v.([]string))
		s[len(s)-2] += "x"
		return s
	}
	retyped := func(v any) any {
		s := slices.Clone(v.([]int32))
		s[len(s)-2] = 4
		return s
	}
	changes := map[string][2]map[string]any{
		"a token's text": {spm, edit(spm, "tokenizer.ggml.tokens", renamed)},
		"a token's type": {spm, edit(spm, "tokenizer.ggml.token_type", retyped)},
		"a score": {spm, edit(spm, "tokenizer.ggml.scores", func(v any) any {
			s := slices.Clone(v.([]float32))
			s[270] -= 0.5
			return s
		})},
		"add_bos":           {spm, with(spm, "tokenizer.ggml.add_bos_token", false)},
		"add_eos":           {spm, with(spm, "tokenizer.ggml.add_eos_token", true)},
		"add_space_prefix":  {spm, with(spm, "tokenizer.ggml.add_space_prefix", false)},
		"the bos id":        {spm, with(spm, "tokenizer.ggml.bos_token_id", uint32(2))},
		"the pre-tokenizer": {bpe, with(bpe, "tokenizer.ggml.pre", "qwen2")},
		"a merge dropped": {bpe, edit(bpe, "tokenizer.ggml.merges", func(v any) any {
			return slices.Clone(v.([]string))[1:]
		})},
		"two merges swapped": {bpe, edit(bpe, "tokenizer.ggml.merges", func(v any) any {
			s := slices.Clone(v.([]string))
			s[3], s[4] = s[4], s[3]
			return s
		})},
		"a BPE token's text": {bpe, edit(bpe, "tokenizer.ggml.tokens", renamed)},
	}
	for name, c := range changes {
		if hashOf(c[0]) == hashOf(c[1]) {
			t.Errorf("%s left the hash as it was", name)
		}
	}
}
