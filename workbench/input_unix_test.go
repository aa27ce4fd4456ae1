//go:build unix

package workbench

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"plexbench/profiles"
)

// TestInputNotRegular: a FIFO, a device or a directory as a text, token
// file or task file is refused at once, naming it; checkInputs names the
// flag and leaves a missing file to the read.
func TestInputNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "text.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, path := range []string{fifo, os.DevNull, dir} {
		if _, err := ReadText(path); err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadText(%s): %v", path, err)
		}
		if _, err := readTokenFile(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("readTokenFile(%s): %v", path, err)
		}
		if _, err := loadChoice(ChoiceMode{Flag: "--hellaswag", Path: path}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("loadChoice(%s): %v", path, err)
		}
	}
	p := profiles.Default()
	p.Corpora = []string{filepath.Join(dir, "absent.txt"), fifo}
	if err := checkInputs(p); err == nil || err.Error() != "--perplexity: "+fifo+": is a FIFO, not a regular file" {
		t.Errorf("checkInputs: %v", err)
	}
	p = profiles.Default()
	p.Tokens = filepath.Join(dir, "absent.json")
	if err := checkInputs(p); err != nil {
		t.Errorf("a missing file: %v", err)
	}
}
