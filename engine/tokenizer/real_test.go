package tokenizer

// Tests against the real vocabularies, texts and golden figures in
// /work/shared/data: llama.cpp's tokenizer test vectors, the stories260K
// token hashes, and decode∘encode round trips on wikitext.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/internal/shareddata"
)

// dataDir is the shared data folder, or "" when absent (fuzz seeds and
// benchmarks use it when there).
var dataDir, _ = shareddata.Find()

// dataFile returns the path of rel under the shared data folder, skipping
// the test (or failing it under CI) when the folder is absent.
func dataFile(tb testing.TB, rel string) string {
	tb.Helper()
	p := shareddata.Path(tb, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s is missing from the shared data", p)
	}
	return p
}

// loaded caches tokenizers across tests: big vocabularies take a while to load.
var loaded sync.Map // path → *Tokenizer

func loadTokenizer(tb testing.TB, path string) *Tokenizer {
	tb.Helper()
	if t, ok := loaded.Load(path); ok {
		return t.(*Tokenizer)
	}
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	t, err := FromGGUF(f)
	if err != nil {
		tb.Fatal(err)
	}
	loaded.Store(path, t)
	return t
}

// readVectors reads a llama.cpp test-tokenizer-0 pair: strings separated by
// "\n__ggml_vocab_test__\n", and one line of space-separated ids per string.
func readVectors(tb testing.TB, inp string) ([]string, [][]int32) {
	tb.Helper()
	in, err := os.ReadFile(inp)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := os.ReadFile(strings.TrimSuffix(inp, ".inp") + ".out")
	if err != nil {
		tb.Fatal(err)
	}
	texts := strings.Split(string(in), "\n__ggml_vocab_test__\n")
	lines := strings.Split(string(out), "\n")
	// Both files end with a separator / newline, leaving one empty tail.
	if n := len(texts); n > 0 && texts[n-1] == "" {
		texts = texts[:n-1]
	}
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if len(texts) != len(lines) {
		tb.Fatalf("%s: %d strings but %d id lines", inp, len(texts), len(lines))
	}
	ids := make([][]int32, len(lines))
	for i, l := range lines {
		for _, f := range strings.Fields(l) {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				tb.Fatalf("%s line %d: %v", inp, i+1, err)
			}
			ids[i] = append(ids[i], int32(v))
		}
	}
	return texts, ids
}

// TestVectors checks every .inp/.out pair: llama.cpp's test-tokenizer-0
// tokenizes each string with add_special=false, parse_special=false.
func TestVectors(t *testing.T) {
	dir := dataFile(t, "vocab")
	var inps []string
	for _, sub := range []string{"", "tests-2026-05"} {
		m, _ := filepath.Glob(filepath.Join(dir, sub, "*.gguf.inp"))
		inps = append(inps, m...)
	}
	if len(inps) == 0 {
		t.Fatalf("no test vectors under %s", dir)
	}
	for _, inp := range inps {
		base := strings.TrimSuffix(filepath.Base(inp), ".inp")
		if strings.Contains(base, "bert-bge") {
			continue // WordPiece is out of scope
		}
		rel, _ := filepath.Rel(dir, inp)
		t.Run(rel, func(t *testing.T) {
			tok := loadTokenizer(t, filepath.Join(dir, base))
			texts, want := readVectors(t, inp)
			bad := 0
			for i, s := range texts {
				got := tok.Encode(s, false, false)
				if !equalIDs(got, want[i]) {
					bad++
					if bad <= 5 {
						t.Errorf("string %d %q:\n got %v\nwant %v", i, s, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d strings differ", bad, len(texts))
			}
		})
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// perplexityText reads a file as llama-perplexity does: whole, with exactly
// one trailing newline dropped.
func perplexityText(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// idsSHA256 is the report's token_ids_sha256: SHA-256 of little-endian int32s.
func idsSHA256(ids []int32) string {
	buf := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(id))
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// TestStoriesGolden checks the stories260K token counts and hashes that
// llama.cpp produced (golden.json "tokenize").
func TestStoriesGolden(t *testing.T) {
	raw, err := os.ReadFile(dataFile(t, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Tokenize map[string]struct {
			Tokens   int     `json:"tokens"`
			SHA256   string  `json:"token_ids_sha256"`
			FirstIDs []int32 `json:"first_ids"`
		} `json:"tokenize"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	if len(golden.Tokenize) == 0 {
		t.Fatal("golden.json has no tokenize entries")
	}
	tok := loadTokenizer(t, dataFile(t, "models/stories260K-f32.gguf"))
	if tok.Kind() != KindSPM || tok.VocabSize() != 512 || tok.BOS() != 1 || !tok.AddBOS() || tok.AddEOS() {
		t.Fatalf("stories260K: kind %s vocab %d bos %d add_bos %v add_eos %v",
			tok.Kind(), tok.VocabSize(), tok.BOS(), tok.AddBOS(), tok.AddEOS())
	}
	for key, g := range golden.Tokenize {
		model, rel, ok := strings.Cut(key, "/")
		if !ok || model != "stories260K" {
			t.Errorf("unexpected golden key %q", key)
			continue
		}
		t.Run(rel, func(t *testing.T) {
			ids := tok.Encode(perplexityText(t, dataFile(t, rel)), true, false)
			if n := min(len(g.FirstIDs), len(ids)); !equalIDs(ids[:n], g.FirstIDs) {
				t.Errorf("first ids %v, want %v", ids[:n], g.FirstIDs)
			}
			if len(ids) != g.Tokens {
				t.Errorf("%d tokens, want %d", len(ids), g.Tokens)
			}
			if h := idsSHA256(ids); h != g.SHA256 {
				t.Errorf("token_ids_sha256 %s, want %s", h, g.SHA256)
			}
		})
	}
}

// TestRoundTripWikitext checks Decode(Encode(text)) == text on the whole
// wikitext test file for every vocabulary (BPE, and SPM where the text has
// no "▁" that SPM would turn into a space).
func TestRoundTripWikitext(t *testing.T) {
	text := perplexityText(t, dataFile(t, "wikitext-2-raw/wiki.test.raw"))
	if strings.Contains(text, spaceEscape) {
		t.Fatal("wikitext unexpectedly contains U+2581")
	}
	paths, _ := filepath.Glob(filepath.Join(dataFile(t, "vocab"), "*.gguf"))
	paths = append(paths, dataFile(t, "models/stories260K-f32.gguf"))
	for _, p := range paths {
		if strings.Contains(p, "bert-bge") {
			continue
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			tok := loadTokenizer(t, p)
			ids := tok.Encode(text, true, false)
			if n := sumBytes(tok.PieceBytes(ids)); n != len(text) {
				t.Errorf("piece bytes sum to %d, the text has %d", n, len(text))
			}
			if back := tok.Decode(ids); back != text {
				i := 0
				for i < len(back) && i < len(text) && back[i] == text[i] {
					i++
				}
				t.Errorf("round trip differs at byte %d: got %q, want %q",
					i, clip(back[i:], 40), clip(text[i:], 40))
			}
		})
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// BenchmarkEncodeWikitext tokenizes the 1.29 MB wikitext file with the
// 151k-entry Qwen3 vocabulary (and others for comparison); MB/s is reported
// from SetBytes.
func BenchmarkEncodeWikitext(b *testing.B) {
	text := perplexityText(b, dataFile(b, "wikitext-2-raw/wiki.test.raw"))
	for _, name := range []string{"qwen3-vocab.gguf", "llama3-vocab.gguf", "ggml-vocab-gpt-2.gguf", "../models/stories260K-f32.gguf"} {
		b.Run(strings.TrimSuffix(filepath.Base(name), ".gguf"), func(b *testing.B) {
			tok := loadTokenizer(b, dataFile(b, filepath.Join("vocab", name)))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(tok.Encode(text, true, false))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
