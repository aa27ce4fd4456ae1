package gguf

// FuzzParse: no input may panic, and any accepted file must describe
// tensors that lie, sequentially and aligned, inside the file.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"plexbench/kernels"
)

func FuzzParse(f *testing.F) {
	f.Add(fixtureBytes(f))
	small := NewWriter()
	small.Set("general.architecture", "llama")
	small.Set("general.alignment", uint32(8))
	small.Set("tokenizer.ggml.tokens", []string{"<s>", "a", "b"})
	small.Set("llama.attention.head_count_kv", []int32{1, 2})
	if err := small.AddTensor("w", kernels.Q8_0, []int64{32, 1}, make([]byte, 34)); err != nil {
		f.Fatal(err)
	}
	if err := small.AddTensor("b", kernels.F16, []int64{3}, make([]byte, 6)); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := small.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(new(raw).header(3, 0, 0).Bytes())
	f.Add(new(raw).header(2, 1, 1).kvU32("k", 7).tensor("a", kernels.F32, 0, 2).withData(32, 8))
	// The smallest real model, cut to 4 KiB: real metadata, truncated.
	if models, _ := filepath.Glob(filepath.Join(dataDir, "models/*.gguf")); len(models) > 0 {
		smallest, size := "", int64(-1)
		for _, m := range models {
			if st, err := os.Stat(m); err == nil && (size < 0 || st.Size() < size) {
				smallest, size = m, st.Size()
			}
		}
		if b, err := os.ReadFile(smallest); err == nil {
			f.Add(b[:min(len(b), 4096)])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := parseBytes(b, "fuzz")
		h, err2 := Parse(bytes.NewReader(b), int64(len(b)), "fuzz")
		if (err == nil) != (err2 == nil) {
			t.Fatalf("mapped and ReaderAt parses disagree: %v / %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) &&
				!errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if len(g.Tensors) != len(h.Tensors) || len(g.KVs) != len(h.KVs) || g.DataOffset != h.DataOffset {
			t.Fatal("mapped and ReaderAt parses differ")
		}
		if !isPow2(g.Alignment) || (len(g.Tensors) > 0 && g.DataOffset%g.Alignment != 0) {
			t.Fatalf("alignment %d, data offset %d", g.Alignment, g.DataOffset)
		}
		var next int64
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			if ti.Offset != next || ti.Size < 0 || g.DataOffset+ti.Offset+ti.Size > int64(len(b)) {
				t.Fatalf("tensor %q [%d,+%d) bad (expected offset %d, file %d)", ti.Name, ti.Offset, ti.Size, next, len(b))
			}
			if len(ti.Dims) > MaxDims || len(ti.Name) >= MaxTensorName || !ti.Type.Known() {
				t.Fatalf("tensor %q: invalid record accepted", ti.Name)
			}
			next += (ti.Size + g.Alignment - 1) &^ (g.Alignment - 1)
		}
		// Every accepted file survives a writer round trip unchanged in content
		// (skipped for huge alignments, whose padding alone is gigabytes).
		if g.Alignment > 1<<16 {
			return
		}
		w := NewWriter()
		for _, kv := range g.KVs {
			w.Set(kv.Key, kv.Value)
		}
		for i := range g.Tensors {
			ti := &g.Tensors[i]
			lo := g.DataOffset + ti.Offset
			if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, b[lo:lo+ti.Size]); err != nil {
				t.Fatalf("rewrite: %v", err)
			}
		}
		var out bytes.Buffer
		if _, err := w.WriteTo(&out); err != nil {
			t.Fatalf("rewrite: %v", err)
		}
		r, err := parseBytes(out.Bytes(), "rewrite")
		if err != nil {
			t.Fatalf("rewritten file rejected: %v", err)
		}
		if len(r.KVs) != len(g.KVs) || len(r.Tensors) != len(g.Tensors) {
			t.Fatal("rewritten file differs")
		}
	})
}
