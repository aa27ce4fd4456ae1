package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestScoreOutputsNotDamaged: --perplexity-output and the base output go
// through a symlink (which stays one), into a FIFO read by cat, and into a
// character device (made with mknod as root), which is still one after.
func TestScoreOutputsNotDamaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"score", "--perplexity-chunks", "1", "--perplexity-ctx", "64", "--quiet"}
	ok := func(extra ...string) {
		t.Helper()
		if code, stdout, stderr := runCLI(t, append(args, extra...)...); code != 0 || stdout != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %s", extra, code, stdout, stderr)
		}
	}
	isReport := func(b []byte) {
		t.Helper()
		var rep map[string]any
		if err := json.Unmarshal(b, &rep); err != nil || rep["object"] != "lse.perplexity" {
			t.Fatalf("not a report (%v): %.80q", err, b)
		}
	}

	target := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	os.Symlink("real.json", link)
	baseLink := filepath.Join(dir, "link.kld")
	os.Symlink("real.kld", baseLink)
	ok("--perplexity-output", link, "--perplexity-kld-base-out", baseLink)
	for _, l := range []string{link, baseLink} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink", l)
		}
	}
	b, _ := os.ReadFile(target)
	isReport(b)
	if _, err := os.Stat(filepath.Join(dir, "real.kld")); err != nil {
		t.Fatal(err)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cat := exec.Command("cat", fifo)
	var out strings.Builder
	cat.Stdout = &out
	if err := cat.Start(); err != nil {
		t.Skipf("cat: %v", err)
	}
	ok("--perplexity-output", fifo)
	cat.Wait()
	isReport([]byte(out.String()))
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("fifo replaced: %v", fi.Mode())
	}

	if os.Geteuid() == 0 {
		null := filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			ok("--perplexity-output", null)
			if fi, _ := os.Lstat(null); fi.Mode()&os.ModeCharDevice == 0 {
				t.Fatalf("device replaced: %v", fi.Mode())
			}
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}
