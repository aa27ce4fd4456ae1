package gguf

// Tests against the real GGUF files in ../shared/data.

import (
	"os"
	"path/filepath"
	"testing"

	"plexbench/internal/shareddata"
)

// dataDir is the shared data folder, or "" when absent (fuzz seeds and
// benchmarks use it when there).
var dataDir, _ = shareddata.Find()

// realFiles lists the files matching glob under the shared data folder,
// skipping (or failing under CI) when the folder is absent.
func realFiles(t testing.TB, glob string) []string {
	t.Helper()
	dir := shareddata.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, glob))
	if len(files) == 0 {
		t.Fatalf("no files match %s/%s", dir, glob)
	}
	return files
}

func TestRealModels(t *testing.T) {
	for _, path := range realFiles(t, "models/*.gguf") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.FileSize != st.Size() {
				t.Errorf("FileSize %d, stat says %d", f.FileSize, st.Size())
			}
			if got := f.Architecture(); got != "llama" {
				t.Errorf("architecture %q, want llama", got)
			}
			nLayer, ok := f.Uint("llama.block_count")
			if !ok || nLayer == 0 {
				t.Fatalf("llama.block_count missing or zero")
			}
			// llama: token_embd, output_norm, optional output, and 9 tensors per layer.
			if n := uint64(len(f.Tensors)); n != 2+9*nLayer && n != 3+9*nLayer {
				t.Errorf("%d tensors for %d layers", n, nLayer)
			}
			if f.DataOffset%f.Alignment != 0 {
				t.Errorf("data offset %d not aligned to %d", f.DataOffset, f.Alignment)
			}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				end := f.DataOffset + ti.Offset + ti.Size
				if ti.Offset < 0 || end > f.FileSize {
					t.Errorf("tensor %q [%d,+%d) outside file of %d bytes", ti.Name, ti.Offset, ti.Size, f.FileSize)
				}
				if d := f.TensorData(ti); int64(len(d)) != ti.Size {
					t.Errorf("tensor %q: TensorData has %d bytes, want %d", ti.Name, len(d), ti.Size)
				}
				if ti.Elements()%int64(ti.Type.BlockSize()) != 0 {
					t.Errorf("tensor %q: %d elements not whole %s blocks", ti.Name, ti.Elements(), ti.Type)
				}
			}
			emb, ok := f.Tensor("token_embd.weight")
			if !ok {
				t.Fatal("token_embd.weight missing")
			}
			nEmbd, _ := f.Uint("llama.embedding_length")
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok {
				t.Fatal("tokenizer.ggml.tokens missing")
			}
			if len(emb.Dims) != 2 || uint64(emb.Dims[0]) != nEmbd || int(emb.Dims[1]) != len(toks) {
				t.Errorf("token_embd dims %v, want [%d %d]", emb.Dims, nEmbd, len(toks))
			}
			if sc, ok := f.Float32s("tokenizer.ggml.scores"); ok && len(sc) != len(toks) {
				t.Errorf("%d scores for %d tokens", len(sc), len(toks))
			}
			if f.Close() != nil || f.TensorData(emb) != nil {
				t.Error("TensorData after Close should be nil")
			}
		})
	}
}

func TestRealVocabs(t *testing.T) {
	for _, path := range realFiles(t, "vocab/*.gguf") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != 0 {
				t.Errorf("vocab-only file has %d tensors", len(f.Tensors))
			}
			if f.Architecture() == "" {
				t.Error("general.architecture missing")
			}
			model, ok := f.String("tokenizer.ggml.model")
			if !ok || model == "" {
				t.Error("tokenizer.ggml.model missing")
			}
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(toks) < 1000 {
				t.Fatalf("tokenizer.ggml.tokens: %d tokens, ok=%v", len(toks), ok)
			}
			if tt, ok := f.Int32s("tokenizer.ggml.token_type"); ok && len(tt) != len(toks) {
				t.Errorf("%d token types for %d tokens", len(tt), len(toks))
			}
			// Parse through a ReaderAt must agree with the mapped parse.
			fd, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fd.Close()
			g, err := Parse(fd, f.FileSize, path)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.KVs) != len(f.KVs) || g.DataOffset != f.DataOffset {
				t.Fatalf("Parse: %d KVs / data offset %d, Open: %d / %d", len(g.KVs), g.DataOffset, len(f.KVs), f.DataOffset)
			}
			gt, _ := g.Strings("tokenizer.ggml.tokens")
			for i := range toks {
				if toks[i] != gt[i] {
					t.Fatalf("token %d: Open %q, Parse %q", i, toks[i], gt[i])
				}
			}
		})
	}
}
