package outfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// temps lists the temporary files left in dir.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRegularFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := WriteFile(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != "two" {
		t.Fatalf("content %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the replaced file's 0600", fi.Mode())
	}
	if tt := temps(t, dir); len(tt) > 0 {
		t.Errorf("left %v", tt)
	}
	err := WriteFile(filepath.Join(dir, "no", "such", "dir", "x"), nil)
	if err == nil || !strings.Contains(err.Error(), "no/such/dir") || strings.Count(err.Error(), "no/such") != 1 {
		t.Errorf("error %v: want one mention of the path", err)
	}
	if err := WriteFile(dir, nil); err == nil {
		t.Error("writing over a directory worked")
	}
}

func TestSymlinkStaysLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("target.json", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	if got := readFile(t, target); got != "new" {
		t.Fatalf("target holds %q", got)
	}

	// A dangling link (through a second link) gets its target created.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(sub, "made.json"), filepath.Join(dir, "hop"))
	os.Symlink("hop", dangling)
	if err := WriteFile(dangling, []byte("made")); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(sub, "made.json")); got != "made" {
		t.Fatalf("dangling target holds %q", got)
	}
	for _, l := range []string{dangling, filepath.Join(dir, "hop")} {
		if fi, _ := os.Lstat(l); fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink", l)
		}
	}
	if tt := append(temps(t, dir), temps(t, sub)...); len(tt) > 0 {
		t.Errorf("left %v", tt)
	}

	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := WriteFile(loop, nil); err == nil {
		t.Error("a symlink loop was written")
	}
}

func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFile(p, []byte("through the fifo")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "through the fifo" {
			t.Fatalf("reader got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader got nothing")
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("fifo replaced: %v %v", fi.Mode(), err)
	}
	if tt := temps(t, dir); len(tt) > 0 {
		t.Errorf("left %v", tt)
	}
}

// TestCharDevice writes through a character device made like /dev/null
// (1,3) and checks it is still one afterwards; it needs root for mknod.
func TestCharDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	before, err := os.Lstat(p)
	if err != nil || before.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("before: %v %v", before.Mode(), err)
	}
	for _, path := range []string{p, "/dev/null"} {
		if err := WriteFile(path, []byte("gone")); err != nil {
			t.Fatal(err)
		}
		f, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("streamed"))
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		after, err := os.Lstat(path)
		if err != nil || after.Mode()&os.ModeCharDevice == 0 || after.Mode().Type() != os.ModeDevice|os.ModeCharDevice {
			t.Fatalf("%s after: %v %v", path, after.Mode(), err)
		}
	}
	if tt := temps(t, dir); len(tt) > 0 {
		t.Errorf("left %v", tt)
	}
}

// TestNoTempOnError fails each stage in turn, for the whole-buffer and the
// streamed form, and checks the old file is intact and no temporary is left.
func TestNoTempOnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.kld")
	os.WriteFile(p, []byte("old"), 0o644)
	boom := errors.New("injected")
	for _, stage := range []string{"chmod", "write", "sync", "close", "rename"} {
		fault := func(s string) error {
			if s == stage {
				return boom
			}
			return nil
		}
		f, err := create(p, fault)
		if err == nil {
			for range 3 {
				if _, err = f.Write([]byte("new")); err != nil {
					break
				}
			}
			if err == nil {
				err = f.Commit()
			} else {
				f.Abort()
			}
		}
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), p) {
			t.Errorf("stage %s: error %v", stage, err)
		}
		if got := readFile(t, p); got != "old" {
			t.Errorf("stage %s: file now %q", stage, got)
		}
		if tt := temps(t, dir); len(tt) > 0 {
			t.Errorf("stage %s: left %v", stage, tt)
		}
	}
	// An abandoned stream.
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort()
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort worked")
	}
	if tt := temps(t, dir); len(tt) > 0 || readFile(t, p) != "old" {
		t.Errorf("after Abort: left %v", tt)
	}
}

func TestStaleTempSwept(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.kld")
	// A pid that is not running: a reaped child's.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, tempPrefix("b.kld", cmd.Process.Pid)+"123")
	mine := filepath.Join(dir, tempPrefix("b.kld", os.Getpid())+"456")
	other := filepath.Join(dir, tempPrefix("c.kld", cmd.Process.Pid)+"789")
	for _, s := range []string{stale, mine, other} {
		os.WriteFile(s, nil, 0o644)
	}
	if err := WriteFile(p, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a dead process's temporary was kept")
	}
	for _, s := range []string{mine, other} {
		if _, err := os.Stat(s); err != nil {
			t.Errorf("%s removed", s)
		}
	}
}

// The child half of TestSignalRemovesTemps: it starts a streamed write,
// says so, and waits for a signal, handled as cmd/plexbench does for the
// signal that ends the process.
func TestMain(m *testing.M) {
	if p := os.Getenv("OUTFILE_SIGNAL_CHILD"); p != "" {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		f, err := Create(p)
		if err != nil {
			os.Exit(3)
		}
		f.Write([]byte("streaming"))
		os.Stdout.WriteString("ready\n")
		<-sig
		RemoveTemps()
		os.Exit(130)
	}
	os.Exit(m.Run())
}

func TestSignalRemovesTemps(t *testing.T) {
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(s.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "OUTFILE_SIGNAL_CHILD="+filepath.Join(dir, "base.kld"))
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 6)
			if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
				t.Fatalf("child: %q %v", buf, err)
			}
			if tt := temps(t, dir); len(tt) != 1 {
				t.Fatalf("while writing: %v", tt)
			}
			cmd.Process.Signal(s)
			cmd.Wait()
			if tt := temps(t, dir); len(tt) > 0 {
				t.Errorf("left %v", tt)
			}
		})
	}
}

func TestStdoutAndAtomic(t *testing.T) {
	f, err := Create(Stdout)
	if err != nil || f.Temp() != nil {
		t.Fatal(err)
	}
	f.Abort()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o600)
	for p, want := range map[string]bool{"-": false, "": false, filepath.Join(dir, "new"): true, fifo: false, "/dev/null": false} {
		if got := Atomic(p); got != want {
			t.Errorf("Atomic(%q) = %v", p, got)
		}
	}
}

// TestWriteFileTo: "-" goes to the writer given, a write error naming the
// path; any other path is written as WriteFile writes it, the writer
// untouched.
func TestWriteFileTo(t *testing.T) {
	var out strings.Builder
	if err := WriteFileTo(Stdout, []byte("report"), &out); err != nil || out.String() != "report" {
		t.Fatalf("to the writer: %q, %v", out.String(), err)
	}
	boom := errors.New("closed")
	if err := WriteFileTo(Stdout, []byte("report"), failWriter{boom}); !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "write -: ") {
		t.Errorf("a failing writer: %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	out.Reset()
	if err := WriteFileTo(p, []byte("file"), &out); err != nil || readFile(t, p) != "file" || out.Len() != 0 {
		t.Errorf("to a file: %v, writer holds %q", err, out.String())
	}
	if tt := temps(t, dir); len(tt) > 0 {
		t.Errorf("left %v", tt)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestCheckInput: a regular file (also through a symlink) passes; a
// directory, a FIFO and a character device are refused at once, naming
// the path and what it is.
func TestCheckInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		if err := CheckInput(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for p, want := range map[string]string{dir: "is a directory", fifo: "is a FIFO", "/dev/zero": "is a character device"} {
		err := CheckInput(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
	}
}
