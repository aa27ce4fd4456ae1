// pending.go owns pendingFile, the one temp-then-rename writer behind every
// streamed output of scoring (plexbench and llama.cpp base files): bytes go
// to a hidden temporary file beside the target, which is renamed into place
// only by commit, so an aborted run never leaves a valid-looking file.
package scoring

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

type pendingFile struct {
	path, tmp string
	f         *os.File
	bw        *bufio.Writer
}

// createPending opens a temporary file for path; what names the kind of
// file in errors ("kld base").
func createPending(what, path string) (*pendingFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes 0600; outputs are shared like reports
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return &pendingFile{path: path, tmp: f.Name(), f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

// commit flushes, syncs and renames the file into place; on any failure
// the temporary file is removed and path is left as it was.
func (p *pendingFile) commit() error {
	if p.f == nil {
		return fmt.Errorf("already closed")
	}
	err := p.bw.Flush()
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f = nil
	if err == nil {
		err = os.Rename(p.tmp, p.path)
	}
	if err != nil {
		os.Remove(p.tmp)
		return err
	}
	syncDir(filepath.Dir(p.path))
	return nil
}

// abort removes the temporary file; safe after commit.
func (p *pendingFile) abort() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
		os.Remove(p.tmp)
	}
}
