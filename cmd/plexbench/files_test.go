package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/results"
)

// filesFixture is a folder holding copies of the inputs a collision could
// destroy (the shared data must never be the one at risk): the model, a
// second model, the text and a base recorded from them.
type filesFixture struct {
	dir, model, model2, text, base string
}

func newFilesFixture(t *testing.T) filesFixture {
	t.Helper()
	dir := t.TempDir()
	f := filesFixture{dir: dir, model: filepath.Join(dir, "m.gguf"), model2: filepath.Join(dir, "q.gguf"),
		text: filepath.Join(dir, "t.txt"), base: filepath.Join(dir, "b.kld")}
	copyFile(t, stories(t, "q8_0"), f.model)
	copyFile(t, stories(t, "q4_0"), f.model2)
	copyFile(t, shareddata.Path(t, "tinystories", "tinystories-16k.txt"), f.text)
	if code, _, stderr := runCLI(t, append(f.score(), "--quiet", "--perplexity-kld-base-out", f.base)...); code != 0 {
		t.Fatalf("recording the base: %s", stderr)
	}
	return f
}

// score is the fewest windows of score on the fixture's model and text.
func (f filesFixture) score() []string {
	return []string{"score", "--model", f.model, "--perplexity", f.text, "--perplexity-ctx", "64", "--perplexity-chunks", "1"}
}

func (f filesFixture) at(name string) string { return filepath.Join(f.dir, name) }

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// folderState is every file in dir (not below) with its SHA-256.
func folderState(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		sum := "folder"
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			io.Copy(h, f)
			f.Close()
			sum = hex.EncodeToString(h.Sum(nil))
		}
		state[e.Name()] = sum
	}
	return state
}

// refusedAtStart runs args and checks that they are refused before any
// work: exit 2, nothing on stdout, one line on stderr holding each of
// want, every file in the fixture's folder byte-identical, nothing new
// there or in the results root.
func refusedAtStart(t *testing.T, f filesFixture, args []string, want ...string) {
	t.Helper()
	root := t.TempDir()
	before := folderState(t, f.dir)
	code, stdout, stderr := runCLIEnv(t, map[string]string{results.EnvRoot: root}, args...)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 2 || stdout != "" || len(lines) != 1 || !strings.HasPrefix(stderr, "plexbench: ") {
		t.Errorf("%q: exit %d, stdout %.80q, stderr %q: want exit 2 and one line", args[:1], code, stdout, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%q: stderr %q lacks %q", args, stderr, w)
		}
	}
	after := folderState(t, f.dir)
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%q changed %s", args, name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%q wrote %s", args, name)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) > 0 {
		t.Errorf("%q wrote %s in the results root", args, ents[0].Name())
	}
}

// TestScoreOutputCollisions: every output of score that is one of its
// inputs (model, text, tokens, the base compared against; also through a
// symlink or a hard link) or another output (report, base, card,
// progress, the journal) is refused before any work in one line naming
// both flags, exit 2, every input byte-identical after.
func TestScoreOutputCollisions(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	os.Symlink("m.gguf", f.at("link.gguf"))
	os.Link(f.base, f.at("hard.kld"))
	copyFile(t, f.base, f.at("r.json.journal"))
	if err := os.WriteFile(f.at("ids.json"), []byte("[1, 2, 3]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		flags []string // the two flags the line names, output first
		file  string   // the file named
	}{
		{"base over the model", []string{"--perplexity-kld-base-out", f.model}, []string{"--perplexity-kld-base-out", "--model"}, "m.gguf"},
		{"report over the text", []string{"--perplexity-output", f.text}, []string{"--perplexity-output", "--perplexity"}, "t.txt"},
		{"report over the model", []string{"--perplexity-output", f.model}, []string{"--perplexity-output", "--model"}, "m.gguf"},
		{"report and base one file", []string{"--perplexity-output", f.at("x"), "--perplexity-kld-base-out", f.at("x")},
			[]string{"--perplexity-output", "--perplexity-kld-base-out"}, "x"},
		{"report over the base compared", []string{"--perplexity-kld", f.base, "--perplexity-output", f.base}, []string{"--perplexity-output", "--perplexity-kld"}, "b.kld"},
		{"card and report one file", []string{"--card", f.at("o.json"), "--perplexity-output", f.at("o.json")}, []string{"--perplexity-output", "--card"}, "o.json"},
		{"base out over the base in", []string{"--perplexity-kld", f.base, "--perplexity-kld-base-out", f.base}, []string{"--perplexity-kld-base-out", "--perplexity-kld"}, "b.kld"},
		{"progress over the text", []string{"--progress-out", f.text}, []string{"--progress-out", "--perplexity"}, "t.txt"},
		{"report through a symlink", []string{"--perplexity-output", f.at("link.gguf")}, []string{"--perplexity-output", "--model"}, "link.gguf"},
		{"base through a hard link", []string{"--perplexity-kld", f.base, "--perplexity-kld-base-out", f.at("hard.kld")}, []string{"--perplexity-kld-base-out", "--perplexity-kld"}, "hard.kld"},
		{"journal over the base compared", []string{"--perplexity-kld", f.at("r.json.journal"), "--perplexity-output", f.at("r.json")}, []string{"the run journal", "--perplexity-kld"}, "r.json.journal"},
		{"card over the tokens", []string{"--perplexity-tokens", f.at("ids.json"), "--card", f.at("ids.json")}, []string{"--card", "--perplexity-tokens"}, "ids.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := f.score()
			if c.flags[1] == "--perplexity-tokens" {
				args = slices.Delete(args, 3, 5) // no --perplexity
			}
			refusedAtStart(t, f, append(args, c.args...), append(c.flags, c.file)...)
		})
	}
}

// TestScoreOutputPathsRefused: an output that is a folder, under a file
// or in a folder not there, and a results root that is a file, are
// refused before scoring (no progress line) in one line, exit 2: the run
// is never scored only to fail at the end.
func TestScoreOutputPathsRefused(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	os.Mkdir(f.at("D"), 0o755)
	os.WriteFile(f.at("afile"), []byte("a file"), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--perplexity-output", f.at("D")}, []string{"--perplexity-output", "is a folder"}},
		{[]string{"--perplexity-output", f.at("afile/o.json")}, []string{"--perplexity-output", "afile is not a folder"}},
		{[]string{"--perplexity-output", f.at("nodir/o.json")}, []string{"--perplexity-output", "nodir does not exist"}},
		{[]string{"--perplexity-kld-base-out", f.at("D")}, []string{"--perplexity-kld-base-out", "is a folder"}},
		{[]string{"--card", f.at("D")}, []string{"--card", "is a folder"}},
		{[]string{"--results", f.at("afile")}, []string{"--results", "is not a folder"}},
	} {
		refusedAtStart(t, f, append(f.score(), c.args...), c.want...)
	}
}

// TestOtherCommandsOutputCollisions: floor, noise, sweep, card, merge,
// plot and profile new refuse an output that is an input, or two outputs
// that are one file, as score does.
func TestOtherCommandsOutputCollisions(t *testing.T) {
	t.Parallel()
	f := newFilesFixture(t)
	os.Symlink("m.gguf", f.at("m.svg"))
	os.Symlink("t.txt", f.at("t.svg"))
	geom := []string{"--perplexity", f.text, "--perplexity-ctx", "64", "--perplexity-chunks", "1"}
	on := func(cmd string, args ...string) []string {
		return append(append([]string{cmd, "--model", f.model}, geom...), args...)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{on("floor", "--perplexity-kld-base-out", f.model), []string{"--perplexity-kld-base-out", "--model", "m.gguf"}},
		{on("floor", "--full-base-out", f.text), []string{"--full-base-out", "--perplexity", "t.txt"}},
		{on("floor", "--perplexity-output", f.at("x"), "--full-base-out", f.at("x")), []string{"--full-base-out", "--perplexity-output", "same file"}},
		{on("noise", "--perplexity-kld-base-out", f.text), []string{"--perplexity-kld-base-out", "--perplexity", "t.txt"}},
		{append([]string{"sweep", "--base", f.model, f.model2, "--perplexity-kld-base-out", f.model2}, geom...), []string{"--perplexity-kld-base-out", "the sweep model", "q.gguf"}},
		{append([]string{"sweep", "--base", f.model, f.model2, "--plot", f.at("m.svg")}, geom...), []string{"--plot", "--base", "m.svg"}},
		{[]string{"card", f.text, "-o", f.text}, []string{"-o", "the record", "t.txt"}},
		{[]string{"merge", f.text, "-o", f.text}, []string{"-o", "the shard record", "t.txt"}},
		{[]string{"plot", "ppl", "--record", f.text, "--out", f.at("t.svg")}, []string{"--out", "--record", "t.svg"}},
		{[]string{"profile", "new", "p", "--model", f.model, "-o", f.model}, []string{"-o", "--model", "m.gguf"}},
	} {
		refusedAtStart(t, f, c.args, c.want...)
	}
}
