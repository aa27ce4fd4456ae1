package scoring

// baseverify.go owns what `plexbench bases` reads of a base file: its
// header and identity cheaply (ReadBaseInfo, for listings), or the whole
// file checked record by record as a run opening it checks it
// (VerifyBase), for both formats.

import (
	"fmt"
	"io"
)

// BaseInfo is a base file's header and identity.
type BaseInfo struct {
	Path   string
	Format string // BaseFormatPlexbench or BaseFormatLlama
	Size   int64
	Header BaseHeader
	ID     BaseID
}

// baseFormatOf is the format r's magic names; "" when neither.
func baseFormatOf(r io.ReaderAt, size int64) string {
	var magic [8]byte
	if size < int64(len(magic)) {
		return ""
	}
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return ""
	}
	switch string(magic[:]) {
	case baseMagic:
		return BaseFormatPlexbench
	case llamaMagic:
		return BaseFormatLlama
	}
	return ""
}

// IsBaseFile reports whether path starts with either base format's magic.
func IsBaseFile(path string) bool {
	f, err := openBaseFile(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular() && baseFormatOf(f, st.Size()) != ""
}

// ReadBaseInfo reads path's header, checked against the file's size, and
// its identity, without reading its records: a truncated base is an
// error, a corrupted record is not (VerifyBase finds those).
func ReadBaseInfo(path string) (BaseInfo, error) {
	f, err := openBaseFile(path)
	if err != nil {
		return BaseInfo{}, fmt.Errorf("kld base: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return BaseInfo{}, fmt.Errorf("kld base %s: %w", path, err)
	}
	bi := BaseInfo{Path: path, Size: st.Size(), Format: baseFormatOf(f, st.Size())}
	switch bi.Format {
	case BaseFormatPlexbench:
		h, mlen, err := parseBaseHeader(f, bi.Size, path)
		if err != nil {
			return bi, err
		}
		if err := readBaseMeta(f, mlen, path, &h); err != nil {
			return bi, err
		}
		bi.Header = h
	case BaseFormatLlama:
		b, err := readLlamaBase(f, bi.Size, path)
		if err != nil {
			return bi, err
		}
		bi.Header = b.Header
	default:
		return bi, fmt.Errorf("%w %s: neither a plexbench nor a llama.cpp KLD base", ErrBadBase, path)
	}
	bi.ID, err = IdentifyBase(path)
	return bi, err
}

// VerifyBase checks the whole base file at path as every run opening it
// does (ReadBase): the header against the file size, the checksum
// (plexbench), the token ids against their hash and the vocabulary, the
// window and token counts against the header's geometry, and every
// record (basecheck.go). The first problem is the error, naming the file.
func VerifyBase(path string) (BaseInfo, error) {
	b, err := OpenBase(path)
	if err != nil {
		return BaseInfo{}, err
	}
	defer b.Close()
	bi := BaseInfo{Path: path, Format: b.Format, Size: b.size, Header: b.Header}
	if b.Format == BaseFormatLlama {
		bi.Size = LlamaBaseSize(b.Header.Ctx, b.Header.Meta.VocabSize, b.Header.Windows)
	}
	bi.ID, err = IdentifyBase(path)
	return bi, err
}

// baseWindows checks a plexbench header's windows and scored tokens
// against the windows its geometry cuts from its tokens (all of them, or
// for a partial base its first ones) and returns those windows. A
// llama.cpp base's counts are its header's, so need no check.
func baseWindows(h *BaseHeader, path string) ([]Window, error) {
	g := Geometry{Method: h.Method, Ctx: h.Ctx, Stride: h.Stride, Chunks: h.ChunkLimit}
	if h.Partial() {
		g.Chunks = h.Windows
	}
	plan, err := PlanWindows(h.Tokens, g)
	if err != nil {
		return nil, fmt.Errorf("%w %s: its geometry does not plan: %v", ErrBadBase, path, err)
	}
	if len(plan.Windows) != h.Windows || plan.Scored != h.Scored {
		return nil, fmt.Errorf("%w %s: the header counts %d windows / %d scored tokens, its geometry (%s, ctx %d, stride %d) over %d tokens gives %d / %d",
			ErrBadBase, path, h.Windows, h.Scored, h.Method, h.Ctx, h.Stride, h.Tokens, len(plan.Windows), plan.Scored)
	}
	return plan.Windows, nil
}
