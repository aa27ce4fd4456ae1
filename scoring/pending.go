package scoring

// pending.go owns pendingFile, the buffered outfile.File the streamed
// bases (both formats) are written through: bytes go to outfile's temporary file beside the target
// (or straight into a device or FIFO), which only commit puts in place,
// so an aborted run never leaves a valid-looking file.

import (
	"bufio"
	"errors"
	"fmt"

	"plexbench/internal/outfile"
)

type pendingFile struct {
	f  *outfile.File
	bw *bufio.Writer
}

// createPending opens path for writing through outfile; what names the
// kind of file in errors ("kld base").
func createPending(what, path string) (*pendingFile, error) {
	f, err := outfile.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &pendingFile{f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

// commit flushes the buffer and commits the file; on any failure the
// temporary file is removed and path is left as it was.
func (p *pendingFile) commit() error {
	if p.f == nil {
		return errors.New("already closed")
	}
	f := p.f
	p.f = nil
	if err := p.bw.Flush(); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// abort removes the temporary file; safe after commit.
func (p *pendingFile) abort() {
	if p.f != nil {
		p.f.Abort()
		p.f = nil
	}
}
