// Package outfile owns how plexbench writes an output file without damaging
// what the path names: a regular file (or a path not there yet) is written
// to a temporary file in its directory, fsynced and renamed over it, with
// the directory fsynced after; a path that exists and is not a regular file
// (a character or block device such as /dev/null, a FIFO, a socket) is
// opened and written in place, never truncated, renamed or replaced; a
// symlink is followed (also a dangling one) and its target written as
// above, so the link stays a link; "-" is stdout (for WriteFileTo, the
// writer given for it).
//
// Temporary files are removed on every error path, and RemoveTemps removes
// the ones still being written, for a signal handler that is about to end
// the process. Temporaries carry the writer's pid in their name, so one
// left by a killed process (SIGKILL cannot be handled) is removed the next
// time the same path is written.
//
// It imports only the standard library so that every writer can use it.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Stdout is the path that means standard output.
const Stdout = "-"

// WriteFile writes data to path as the package describes.
func WriteFile(path string, data []byte) error { return WriteFileTo(path, data, os.Stdout) }

// WriteFileTo is WriteFile with stdout as what "-" names: a command run
// in process with its own output writes there.
func WriteFileTo(path string, data []byte, stdout io.Writer) error {
	f, err := createTo(path, stdout, nil)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is an output being written: Write, then Commit to put it in place,
// or Abort to leave the path as it was (a direct write, to a device or a
// FIFO, cannot be taken back; Abort only closes it).
type File struct {
	path   string // as given, for messages
	target string // symlinks resolved
	tmp    *os.File
	direct io.WriteCloser // device, FIFO, socket or stdout
	err    error
	fault  func(stage string) error // tests only: fail at a stage
	done   bool
}

// Create starts writing path.
func Create(path string) (*File, error) { return create(path, nil) }

func create(path string, fault func(string) error) (*File, error) {
	return createTo(path, os.Stdout, fault)
}

// createTo is create with stdout as what "-" names.
func createTo(path string, stdout io.Writer, fault func(string) error) (*File, error) {
	f := &File{path: path, fault: fault}
	if path == Stdout {
		f.direct = nopCloser{stdout}
		return f, nil
	}
	if path == "" {
		return nil, errors.New("write: empty output path")
	}
	target, fi, err := resolve(path)
	if err != nil {
		return nil, f.wrap(err)
	}
	f.target = target
	if fi != nil && !fi.Mode().IsRegular() {
		if fi.IsDir() {
			return nil, f.wrap(errors.New("is a directory"))
		}
		if f.direct, err = openDirect(target, fi); err != nil {
			return nil, f.wrap(err)
		}
		return f, nil
	}
	perm := os.FileMode(0o644)
	if fi != nil {
		perm = fi.Mode().Perm() // replacing a file keeps its permissions
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	sweep(dir, base)
	tmp, err := os.CreateTemp(dir, tempPrefix(base, os.Getpid())+"*")
	if err != nil {
		return nil, f.wrap(err)
	}
	f.tmp = tmp
	register(tmp.Name())
	if err := f.stage("chmod", func() error { return tmp.Chmod(perm) }); err != nil {
		f.Abort()
		return nil, err
	}
	return f, nil
}

// Write writes p; after an error every later call fails the same way.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.done {
		return 0, f.wrap(errors.New("write after Commit or Abort"))
	}
	var n int
	err := f.stage("write", func() error {
		var err error
		if f.tmp != nil {
			n, err = f.tmp.Write(p)
		} else {
			n, err = f.direct.Write(p)
		}
		return err
	})
	if err != nil {
		f.err = err
	}
	return n, err
}

// Temp is the temporary file behind an atomic write, for a writer that
// must patch what it wrote before Commit; nil for a direct write.
func (f *File) Temp() *os.File { return f.tmp }

// Name is the path as given.
func (f *File) Name() string { return f.path }

// Commit finishes the write: for a temporary file fsync, close, rename over
// the target and fsync the directory. On error nothing is left behind.
func (f *File) Commit() error {
	if f.done {
		return f.wrap(errors.New("already committed or aborted"))
	}
	if f.err != nil {
		f.Abort()
		return f.err
	}
	f.done = true
	if f.tmp == nil {
		if err := f.stage("close", f.direct.Close); err != nil {
			return err
		}
		return nil
	}
	tmp := f.tmp.Name()
	err := f.stage("sync", f.tmp.Sync)
	if cerr := f.stage("close", f.tmp.Close); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.stage("rename", func() error { return os.Rename(tmp, f.target) })
	}
	unregister(tmp)
	if err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(f.target))
	return nil
}

// Abort discards the write: the temporary file is removed and the path is
// left as it was. Safe after Commit (then it does nothing).
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.tmp == nil {
		f.direct.Close()
		return
	}
	f.tmp.Close()
	os.Remove(f.tmp.Name())
	unregister(f.tmp.Name())
}

// stage runs op, after the test fault for stage when one is set; errors
// name the path.
func (f *File) stage(stage string, op func() error) error {
	if f.fault != nil {
		if err := f.fault(stage); err != nil {
			return f.wrap(err)
		}
	}
	if err := op(); err != nil {
		return f.wrap(err)
	}
	return nil
}

func (f *File) wrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is named once, below
	}
	return fmt.Errorf("write %s: %w", f.path, err)
}

// Atomic reports whether path would be written through a temporary file
// and a rename (a regular file, a path not there yet, or a symlink to one):
// only then is a file beside it (a journal) a sensible thing to keep.
func Atomic(path string) bool {
	if path == "" || path == Stdout {
		return false
	}
	_, fi, err := resolve(path)
	return err == nil && (fi == nil || fi.Mode().IsRegular())
}

// Resolve returns the path a write to path goes to: symlinks followed,
// also a dangling one's target.
func Resolve(path string) (string, error) {
	t, _, err := resolve(path)
	return t, err
}

// resolve follows symlinks from path and returns the final path and its
// Lstat info (nil when nothing is there yet).
func resolve(path string) (string, os.FileInfo, error) {
	p := path
	for range 40 { // as Linux's limit on nested links
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return p, fi, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = link
	}
	return "", nil, errors.New("too many levels of symbolic links")
}

// openDirect opens a non-regular file for writing in place.
func openDirect(path string, fi os.FileInfo) (io.WriteCloser, error) {
	if fi.Mode()&os.ModeSocket != 0 {
		return net.Dial("unix", path)
	}
	// No O_TRUNC, no O_CREATE: a device or FIFO is written as it is.
	return os.OpenFile(path, os.O_WRONLY, 0)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// syncDir makes a rename durable where the platform allows; failure is not
// an error because some filesystems refuse directory syncs.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

func tempPrefix(base string, pid int) string {
	return "." + base + ".tmp-" + strconv.Itoa(pid) + "-"
}

// sweep removes temporaries of base in dir left by processes that no
// longer run.
func sweep(dir, base string) {
	prefix := "." + base + ".tmp-"
	names, err := filepath.Glob(filepath.Join(dir, globEscape(prefix)+"*"))
	if err != nil {
		return
	}
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), prefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.Remove(name)
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// live is the set of temporary files being written by this process. It is
// process-wide on purpose: a signal handler has no other way to reach them.
var live = struct {
	sync.Mutex
	m map[string]struct{}
}{m: map[string]struct{}{}}

func register(name string) {
	live.Lock()
	live.m[name] = struct{}{}
	live.Unlock()
}

func unregister(name string) {
	live.Lock()
	delete(live.m, name)
	live.Unlock()
}

// RemoveTemps removes every temporary file this process is writing, for a
// signal handler that ends the process next. Writers still holding them
// fail their next write or Commit.
func RemoveTemps() {
	live.Lock()
	defer live.Unlock()
	for name := range live.m {
		os.Remove(name)
		delete(live.m, name)
	}
}
