// Package demo holds the small model and text that plexbench scores when
// it is given none: the embedded default behind `make demo`.
package demo

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"plexbench/internal/outfile"
)

//go:embed stories260K-f32.gguf
var model []byte

//go:embed tinystories-100k.txt
var text []byte

// Names shown in reports for the embedded inputs.
const (
	ModelName = "stories260K-f32.gguf"
	TextName  = "tinystories-100k.txt"
)

// Text is the embedded TinyStories excerpt.
func Text() []byte { return text }

// ModelPath writes the embedded model into the user's cache folder (once;
// the file name carries its digest) and returns its path, so the engine can
// memory-map it like any other GGUF.
func ModelPath() (string, error) {
	sum := sha256.Sum256(model)
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "plexbench")
	path := filepath.Join(dir, hex.EncodeToString(sum[:6])+"-"+ModelName)
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(model)) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("demo model: %w", err)
	}
	if err := outfile.WriteFile(path, model); err != nil {
		return "", fmt.Errorf("demo model: %w", err)
	}
	return path, nil
}
