package gguf

// Re-serialising real files: the writer must reproduce the reader's view.

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// rewrite copies every KV and tensor of f into a new writer's output.
func rewrite(t *testing.T, f *File) []byte {
	t.Helper()
	w := NewWriter()
	for _, kv := range f.KVs {
		w.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRewriteReal(t *testing.T) {
	paths := realFiles(t, "models/*q8_0.gguf")
	paths = append(paths, realFiles(t, "vocab/qwen3-vocab.gguf")...)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out := rewrite(t, f)
			g, err := parseBytes(out, "rewrite")
			if err != nil {
				t.Fatal(err)
			}
			if len(g.KVs) != len(f.KVs) || len(g.Tensors) != len(f.Tensors) {
				t.Fatalf("%d KVs / %d tensors, want %d / %d", len(g.KVs), len(g.Tensors), len(f.KVs), len(f.Tensors))
			}
			for i := range f.KVs {
				a, b := f.KVs[i], g.KVs[i]
				if a.Key != b.Key || a.Value.Type != b.Value.Type || a.Value.ElemType != b.Value.ElemType ||
					!reflect.DeepEqual(a.Value.Interface(), b.Value.Interface()) {
					t.Errorf("KV %q differs after rewrite", a.Key)
				}
			}
			if !reflect.DeepEqual(f.Tensors, g.Tensors) {
				t.Error("tensor index differs after rewrite")
			}
			// A v3 file laid out by gguf-py uses the same canonical layout, so the
			// bytes match exactly (the trailing padding may be absent in the original).
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Version == 3 && !bytes.Equal(orig, out[:min(len(out), len(orig))]) {
				t.Errorf("rewrite of a v3 file is not byte-identical (%d vs %d bytes)", len(out), len(orig))
			}
		})
	}
}

// BenchmarkOpenVocab measures loading the largest real vocabulary (the
// qwen3 151k-token one): header, metadata and tokens, through the mapping.
func BenchmarkOpenVocab(b *testing.B) {
	path := filepath.Join(dataDir, "vocab/qwen3-vocab.gguf")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("%s absent", path)
	}
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkParseVocab is the same load through a ReaderAt (os.File).
func BenchmarkParseVocab(b *testing.B) {
	path := filepath.Join(dataDir, "vocab/qwen3-vocab.gguf")
	fd, err := os.Open(path)
	if err != nil {
		b.Skipf("%s absent", path)
	}
	defer fd.Close()
	st, _ := fd.Stat()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(fd, st.Size(), path); err != nil {
			b.Fatal(err)
		}
	}
}
