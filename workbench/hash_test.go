package workbench

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestModelHashRemembered: a model file is read once per version; a
// rewrite (same size, new time) or another file at the path is read again
// and gives its own hash; a damaged cache only costs a read.
func TestModelHashRemembered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache", "model-hashes.json")
	reads := 0
	h := &modelHasher{cache: cache, read: func(p string) (string, error) { reads++; return hashFile(p) }}

	model := filepath.Join(dir, "m.gguf")
	want := func(data []byte) string { s := sha256.Sum256(data); return hex.EncodeToString(s[:]) }
	check := func(step string, data []byte, wantReads int) {
		t.Helper()
		got, err := h.hash(model)
		if err != nil {
			t.Fatal(err)
		}
		if got != want(data) || reads != wantReads {
			t.Fatalf("%s: hash %s after %d reads, want %s after %d", step, got, reads, want(data), wantReads)
		}
	}
	a, b := []byte("first version of the model"), []byte("other version of the model")
	os.WriteFile(model, a, 0o644)
	check("first", a, 1)
	check("again", a, 1)
	os.WriteFile(model, b, 0o644) // same size
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(model, later, later)
	check("rewritten", b, 2)
	check("rewritten again", b, 2)
	os.WriteFile(model+".new", a, 0o644) // written while the old one holds its inode
	os.Chtimes(model+".new", later, later)
	os.Rename(model+".new", model) // same size and time, another inode
	check("replaced", a, 3)
	os.WriteFile(cache, []byte("{not json"), 0o644)
	check("damaged cache", a, 4)
	check("after the damaged cache", a, 4)
}
