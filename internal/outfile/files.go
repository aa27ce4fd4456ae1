package outfile

// files.go owns the check a command runs on its files before any work:
// each output can be written (its folder is there and writable, it is not
// a folder) and names no file the command also reads or writes. A
// collision found after scoring would cost the run, and one never found
// destroys an input (a base written over the model), so both are refused
// at start, in one line naming the two flags.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrRefused marks an error of Files.Check: an output that cannot be
// written, or two flags naming the same file. Commands exit 2 for it.
var ErrRefused = errors.New("paths refused")

type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return ErrRefused }

func refuse(format string, a ...any) error { return &refusal{fmt.Sprintf(format, a...)} }

// Files is the set of files one command reads and writes, each under the
// flag (or role, as "the run journal") that names it. Its zero value is
// an empty set.
type Files struct {
	ins, outs, dirs []named
}

type named struct{ flag, path string }

// In adds inputs; "" is skipped.
func (f *Files) In(flag string, paths ...string) {
	for _, p := range paths {
		if p != "" {
			f.ins = append(f.ins, named{flag, p})
		}
	}
}

// Out adds outputs; "" and "-" (stdout) are skipped.
func (f *Files) Out(flag string, paths ...string) {
	for _, p := range paths {
		if p != "" && p != Stdout {
			f.outs = append(f.outs, named{flag, p})
		}
	}
}

// OutDir adds a folder outputs are written into, made (with its parents)
// when missing, as the results root is; "" is skipped.
func (f *Files) OutDir(flag, path string) {
	if path != "" {
		f.dirs = append(f.dirs, named{flag, path})
	}
}

// Add adds g's files to f.
func (f *Files) Add(g *Files) {
	if g != nil {
		f.ins, f.outs, f.dirs = append(f.ins, g.ins...), append(f.outs, g.outs...), append(f.dirs, g.dirs...)
	}
}

// Outputs is the outputs' paths, as given, in the order added.
func (f *Files) Outputs() []string {
	out := make([]string, len(f.outs))
	for i, o := range f.outs {
		out[i] = o.path
	}
	return out
}

// Check refuses, wrapping ErrRefused, the first output that cannot be
// written (its folder missing or not writable, a folder where a file is
// to go) or that is the same file — by device and inode, symlinks
// followed — as an input or another output. A device, FIFO or socket
// output is written through in place (see the package), so it collides
// with nothing. An input that cannot be read is left for the command to
// report.
func (f *Files) Check() error {
	for _, d := range f.dirs {
		if err := checkDir(d); err != nil {
			return err
		}
	}
	ins := make([]os.FileInfo, len(f.ins))
	for i, in := range f.ins {
		ins[i], _ = os.Stat(in.path)
	}
	outs := make([]outTarget, len(f.outs))
	for i, o := range f.outs {
		t, err := target(o)
		if err != nil {
			return err
		}
		outs[i] = t
		if t.stream {
			continue
		}
		for j, in := range f.ins {
			if t.fi != nil && ins[j] != nil && os.SameFile(t.fi, ins[j]) {
				return refuse("%s %s is the file %s %s reads: writing it would destroy that input; nothing written",
					o.flag, o.path, in.flag, in.path)
			}
		}
		for j := range i {
			if !outs[j].stream && t.same(outs[j]) {
				p := f.outs[j]
				return refuse("%s %s and %s %s are the same file: give each output its own path; nothing written",
					p.flag, p.path, o.flag, o.path)
			}
		}
	}
	return nil
}

// outTarget is an output's file as a write would reach it.
type outTarget struct {
	fi     os.FileInfo // the file there (symlinks followed); nil when none yet
	dir    os.FileInfo // its folder
	base   string      // its name in the folder
	stream bool        // a device, FIFO or socket, written in place
}

// same reports whether two outputs name one file.
func (t outTarget) same(u outTarget) bool {
	if t.fi != nil || u.fi != nil {
		return t.fi != nil && u.fi != nil && os.SameFile(t.fi, u.fi)
	}
	return t.base == u.base && os.SameFile(t.dir, u.dir)
}

// target resolves output o and checks it can be written.
func target(o named) (outTarget, error) {
	path, fi, err := resolve(o.path)
	if err != nil {
		if derr := checkParent(o, filepath.Dir(o.path)); derr != nil {
			return outTarget{}, derr // afile/o.json: "afile is not a folder"
		}
		return outTarget{}, refuse("%s %s: %v", o.flag, o.path, err)
	}
	if fi != nil {
		if fi.IsDir() {
			return outTarget{}, refuse("%s %s: is a folder; name a file in it", o.flag, o.path)
		}
		if !fi.Mode().IsRegular() {
			return outTarget{stream: true}, nil
		}
	}
	dir := filepath.Dir(path)
	if err := checkParent(o, dir); err != nil {
		return outTarget{}, err
	}
	di, err := os.Stat(dir)
	if err != nil {
		return outTarget{}, refuse("%s %s: %v", o.flag, o.path, err)
	}
	return outTarget{fi: fi, dir: di, base: filepath.Base(path)}, nil
}

// checkParent checks that output o's folder dir is a writable folder.
func checkParent(o named, dir string) error {
	di, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return refuse("%s %s: folder %s does not exist", o.flag, o.path, dir)
	case errors.Is(err, syscall.ENOTDIR) || err == nil && !di.IsDir():
		return refuse("%s %s: %s is not a folder", o.flag, o.path, dir)
	case err != nil:
		return refuse("%s %s: %v", o.flag, o.path, err)
	case !writable(dir):
		return refuse("%s %s: folder %s is not writable", o.flag, o.path, dir)
	}
	return nil
}

// checkDir checks that folder d is one, or can be made: its nearest
// existing parent is a writable folder.
func checkDir(d named) error {
	p := d.path
	for {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			return refuse("%s %s: %s is not a folder", d.flag, d.path, p)
		case err == nil && !writable(p):
			return refuse("%s %s: folder %s is not writable", d.flag, d.path, p)
		case err == nil:
			return nil
		case !errors.Is(err, os.ErrNotExist):
			return refuse("%s %s: %v", d.flag, d.path, err)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
