package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFilesCheck: an output that is an input (also through a symlink or a
// hard link) or another output (also one not there yet, also through a
// symlinked folder) is refused in one line naming both flags and paths;
// a folder, a missing folder or a file where a folder should be is
// refused naming the flag; stdout, a device and a FIFO collide with
// nothing.
func TestFilesCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, n := range []string{"m.gguf", "t.txt", "afile"} {
		if err := os.WriteFile(at(n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(at("D"), 0o755)
	os.Symlink("m.gguf", at("link.gguf"))
	os.Symlink("D", at("dlink"))
	os.Link(at("t.txt"), at("hard.txt"))
	fifo := at("fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(dir)
	inputs := func(f *Files) {
		f.In("--model", at("m.gguf"))
		f.In("--perplexity", at("t.txt"))
		f.In("--perplexity-kld", at("missing.kld")) // unreadable inputs are the command's to report
	}
	cases := []struct {
		name string
		outs [][2]string // flag, path
		dirs [][2]string
		want []string // substrings of the one line; nil: accepted
	}{
		{"distinct", [][2]string{{"--perplexity-output", at("r.json")}, {"--perplexity-kld-base-out", at("D/b.kld")}}, nil, nil},
		{"stdout and devices", [][2]string{{"--perplexity-output", "-"}, {"--card", "-"}, {"--a", "/dev/null"}, {"--b", "/dev/null"}, {"--c", fifo}, {"--d", fifo}}, nil, nil},
		{"base over the model", [][2]string{{"--perplexity-kld-base-out", at("m.gguf")}}, nil,
			[]string{"--perplexity-kld-base-out " + at("m.gguf"), "--model " + at("m.gguf")}},
		{"report over the text", [][2]string{{"--perplexity-output", at("t.txt")}}, nil, []string{"--perplexity-output", "--perplexity " + at("t.txt")}},
		{"through a symlink", [][2]string{{"--perplexity-output", at("link.gguf")}}, nil, []string{"--perplexity-output " + at("link.gguf"), "--model"}},
		{"through a hard link", [][2]string{{"--card", at("hard.txt")}}, nil, []string{"--card " + at("hard.txt"), "--perplexity " + at("t.txt")}},
		{"two outputs not there yet", [][2]string{{"--perplexity-output", at("x")}, {"--perplexity-kld-base-out", at("x")}}, nil,
			[]string{"--perplexity-output " + at("x") + " and --perplexity-kld-base-out " + at("x") + " are the same file"}},
		{"through a symlinked folder", [][2]string{{"--card", at("D/o.md")}, {"--perplexity-output", at("dlink/o.md")}}, nil, []string{"--card", "--perplexity-output", "same file"}},
		{"a folder", [][2]string{{"--perplexity-output", at("D")}}, nil, []string{"--perplexity-output " + at("D") + ": is a folder"}},
		{"under a file", [][2]string{{"--perplexity-output", at("afile/o.json")}}, nil, []string{"--perplexity-output", at("afile") + " is not a folder"}},
		{"missing folder", [][2]string{{"--card", at("no/o.md")}}, nil, []string{"--card", "folder " + at("no") + " does not exist"}},
		{"results root a file", nil, [][2]string{{"--results", at("afile")}}, []string{"--results", "is not a folder"}},
		{"results root to make", nil, [][2]string{{"--results", at("new/deeper")}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Files
			inputs(&f)
			for _, o := range c.outs {
				f.Out(o[0], o[1])
			}
			for _, d := range c.dirs {
				f.OutDir(d[0], d[1])
			}
			err := f.Check()
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v: want one line wrapping ErrRefused", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("the check wrote into the folder: %d entries, %d before", len(after), len(before))
	}
}
