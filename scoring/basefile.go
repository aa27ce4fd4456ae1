package scoring

// basefile.go owns the compact KLD base file: what a recording run writes
// and a comparison run reads back. Per scored token it holds the base's NLL
// and its top-k (id, log-probability) pairs instead of llama.cpp's full
// 16-bit logit rows.
//
// Layout (little-endian, no padding):
//
//	off  size   field
//	0    8      magic "PLXKLDB\x00"
//	8    4      u32 format version (1)
//	12   4      u32 method (1 chunks, 2 sliding)
//	16   4      u32 ctx
//	20   4      u32 stride
//	24   4      u32 chunk limit (0 = all)
//	28   4      u32 top_k (1..1024)
//	32   8      u64 token count N
//	40   8      u64 windows
//	48   8      u64 scored tokens S
//	56   32     SHA-256 of the token ids as little-endian int32
//	88   8      u64 model file size
//	96   4      u32 meta length M (<= 1 MiB)
//	100  M      meta JSON: model file name, architecture, vocab size, run config
//	…    4N     token ids (int32), as tokenized (no BOS substitution)
//	…    S×(8+8K) records in scoring order: f64 NLL, then K × (i32 id, f32 log-prob)
//	…    32     SHA-256 of every byte before it
//
// A partial base, kept when a recording stopped early, is the same format
// holding only the complete windows: windows and S in the fixed header
// count what it holds, and the meta's windows_planned the windows the run
// had planned (absent in bases from older builds, which are all complete).
// A comparison may use the first windows of a partial base, never more.
//
// A base is written through outfile (to a temporary file renamed into
// place by Close only after every promised record arrived), so an aborted
// run never leaves a valid-looking base (Abort removes the temporary).

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"

	"plexbench/internal/outfile"
)

// Base file constants.
const (
	BaseVersion     = 1
	baseMagic       = "PLXKLDB\x00"
	baseFixedHeader = 100
	baseMaxMeta     = 1 << 20
	baseMaxCtx      = 1 << 24
)

// ErrBadBase marks a base file that is corrupt, truncated or unreadable;
// ErrBaseMismatch one that is valid but was made for other tokens or
// settings.
var (
	ErrBadBase      = errors.New("bad KLD base file")
	ErrBaseMismatch = errors.New("KLD base does not match this run")
)

// BaseRecordBytes is the size of one scored token's record.
func BaseRecordBytes(k int) int { return 8 + 8*k }

// BaseMeta is the free-form part of the header.
type BaseMeta struct {
	ModelFile         string       `json:"model_file"`
	ModelArchitecture string       `json:"model_architecture"`
	VocabSize         int          `json:"vocab_size"`
	Config            EngineConfig `json:"config"`
	// WindowsPlanned is the recording run's window count; more than the
	// header's windows marks a partial base. 0 (older files): complete.
	WindowsPlanned int `json:"windows_planned,omitempty"`
}

// BaseHeader describes a base file.
type BaseHeader struct {
	Version        int
	Method         string
	Ctx            int
	Stride         int
	ChunkLimit     int
	TopK           int
	Tokens         int
	Windows        int
	Scored         int
	TokenIDsSHA256 [32]byte
	ModelSize      int64
	Meta           BaseMeta
}

// Partial reports whether the base holds fewer windows than its recording
// run planned (it was stopped early).
func (h *BaseHeader) Partial() bool { return h.Meta.WindowsPlanned > h.Windows }

// TokenHash is the hex SHA-256 of the header's token ids.
func (h *BaseHeader) TokenHash() string { return hex.EncodeToString(h.TokenIDsSHA256[:]) }

// TokenIDsSHA256 hashes token ids as little-endian int32.
func TokenIDsSHA256(tokens []int32) [32]byte {
	h := sha256.New()
	var b [4096]byte
	for len(tokens) > 0 {
		n := min(len(tokens), len(b)/4)
		for i, t := range tokens[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(t))
		}
		h.Write(b[:4*n])
		tokens = tokens[n:]
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func methodCode(m string) uint32 {
	switch m {
	case MethodChunks:
		return 1
	case MethodSliding:
		return 2
	}
	return 0
}

// baseSize is the exact file size a header promises.
func baseSize(metaLen int, h *BaseHeader) int64 {
	return int64(baseFixedHeader) + int64(metaLen) + 4*int64(h.Tokens) +
		int64(h.Scored)*int64(BaseRecordBytes(h.TopK)) + sha256.Size
}

// writeTokenIDs writes ids as little-endian uint32s through write, as
// both base formats store them.
func writeTokenIDs(write func([]byte), ids []int32) {
	var b [4096]byte
	for len(ids) > 0 {
		n := min(len(ids), len(b)/4)
		for i, id := range ids[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
		}
		write(b[:4*n])
		ids = ids[n:]
	}
}

// readTokenIDs fills ids from little-endian uint32s, as both base formats
// store them.
func readTokenIDs(r io.Reader, ids []int32) error {
	var b [4096]byte
	for len(ids) > 0 {
		n := min(len(ids), len(b)/4)
		if _, err := io.ReadFull(r, b[:4*n]); err != nil {
			return err
		}
		for j := range n {
			ids[j] = int32(binary.LittleEndian.Uint32(b[4*j:]))
		}
		ids = ids[n:]
	}
	return nil
}

// BaseWriter streams a base file.
type BaseWriter struct {
	path      string
	out       *pendingFile
	sum       hash.Hash
	w         io.Writer // out and sum together
	k         int
	want, got int
	body      int64 // bytes before the first record
	rec       []byte
	err       error
}

// CreateBase starts writing a base for tokens to path; h.Tokens and
// h.TokenIDsSHA256 are set from tokens. Records follow with Append.
func CreateBase(path string, h BaseHeader, tokens []int32) (*BaseWriter, error) {
	h.Version = BaseVersion
	h.Tokens = len(tokens)
	h.TokenIDsSHA256 = TokenIDsSHA256(tokens)
	mc := methodCode(h.Method)
	if mc == 0 || h.TopK < 1 || h.TopK > MaxTopK || h.Ctx < 1 || h.Ctx > baseMaxCtx ||
		h.Stride < 1 || h.ChunkLimit < 0 || h.Scored < 0 || h.Windows < 0 {
		return nil, fmt.Errorf("kld base %s: invalid header %+v", path, h)
	}
	meta, err := json.Marshal(h.Meta)
	if err != nil {
		return nil, fmt.Errorf("kld base %s: %w", path, err)
	}
	if len(meta) > baseMaxMeta {
		return nil, fmt.Errorf("kld base %s: header metadata too large (%d bytes)", path, len(meta))
	}
	out, err := createPending("kld base", path)
	if err != nil {
		return nil, err
	}
	w := &BaseWriter{path: path, out: out, sum: sha256.New(), k: h.TopK, want: h.Scored, rec: make([]byte, BaseRecordBytes(h.TopK)),
		body: int64(baseFixedHeader) + int64(len(meta)) + 4*int64(h.Tokens)}
	w.w = io.MultiWriter(out.bw, w.sum)

	hdr := make([]byte, baseFixedHeader, baseFixedHeader+len(meta))
	copy(hdr, baseMagic)
	le := binary.LittleEndian
	le.PutUint32(hdr[8:], BaseVersion)
	le.PutUint32(hdr[12:], mc)
	le.PutUint32(hdr[16:], uint32(h.Ctx))
	le.PutUint32(hdr[20:], uint32(h.Stride))
	le.PutUint32(hdr[24:], uint32(h.ChunkLimit))
	le.PutUint32(hdr[28:], uint32(h.TopK))
	le.PutUint64(hdr[32:], uint64(h.Tokens))
	le.PutUint64(hdr[40:], uint64(h.Windows))
	le.PutUint64(hdr[48:], uint64(h.Scored))
	copy(hdr[56:88], h.TokenIDsSHA256[:])
	le.PutUint64(hdr[88:], uint64(h.ModelSize))
	le.PutUint32(hdr[96:], uint32(len(meta)))
	hdr = append(hdr, meta...)
	w.write(hdr)
	writeTokenIDs(w.write, tokens)
	if w.err != nil {
		w.Abort()
		return nil, fmt.Errorf("kld base: %w", w.err) // outfile names the path
	}
	return w, nil
}

func (w *BaseWriter) write(p []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(p)
	}
}

// Append adds the next scored token's record: its NLL and the base's top-k
// ids with their log-probabilities (exactly k of each).
func (w *BaseWriter) Append(nll float64, ids []int32, logprobs []float32) error {
	if w.err != nil {
		return fmt.Errorf("kld base: %w", w.err)
	}
	if len(ids) != w.k || len(logprobs) != w.k {
		return fmt.Errorf("kld base %s: record with %d ids and %d log-probs, want %d", w.path, len(ids), len(logprobs), w.k)
	}
	if w.got >= w.want {
		return fmt.Errorf("kld base %s: more than the %d records the header promises", w.path, w.want)
	}
	le := binary.LittleEndian
	le.PutUint64(w.rec, math.Float64bits(nll))
	for i := range ids {
		le.PutUint32(w.rec[8+8*i:], uint32(ids[i]))
		le.PutUint32(w.rec[12+8*i:], math.Float32bits(logprobs[i]))
	}
	w.write(w.rec)
	w.got++
	if w.err != nil {
		return fmt.Errorf("kld base: %w", w.err)
	}
	return nil
}

// Close writes the checksum and renames the file into place. It fails, and
// leaves no file at path, unless every promised record was appended.
func (w *BaseWriter) Close() error {
	if w.out.f == nil {
		return fmt.Errorf("kld base %s: already closed", w.path)
	}
	if w.got != w.want {
		w.Abort()
		return fmt.Errorf("kld base %s: %d of %d records written; base discarded", w.path, w.got, w.want)
	}
	if w.err == nil {
		_, w.err = w.out.bw.Write(w.sum.Sum(nil))
	}
	if w.err != nil {
		w.Abort()
		return fmt.Errorf("kld base: %w", w.err)
	}
	if err := w.out.commit(); err != nil {
		return fmt.Errorf("kld base: %w", err)
	}
	return nil
}

// ClosePartial keeps the first scored records (the complete windows of a
// stopped run) as a partial base: it cuts what follows, sets the header's
// windows and scored counts, writes the checksum over the result and
// renames it into place. The header's meta must carry WindowsPlanned. A
// base written in place (a FIFO, a device) cannot be rewritten; it is
// discarded with an error.
func (w *BaseWriter) ClosePartial(windows, scored int) error {
	if w.out.f == nil {
		return fmt.Errorf("kld base %s: already closed", w.path)
	}
	tmp := w.out.f.Temp()
	switch {
	case windows < 1 || scored < 0 || scored > w.got:
		w.err = fmt.Errorf("partial base of %d windows and %d records, %d written", windows, scored, w.got)
	case tmp == nil:
		w.err = errors.New("a partial base cannot be kept in a file that is not a regular one")
	}
	if w.err == nil {
		w.err = w.out.bw.Flush()
	}
	end := w.body + int64(scored)*int64(len(w.rec))
	if w.err == nil {
		w.err = tmp.Truncate(end)
	}
	var counts [16]byte
	binary.LittleEndian.PutUint64(counts[:], uint64(windows))
	binary.LittleEndian.PutUint64(counts[8:], uint64(scored))
	if w.err == nil {
		_, w.err = tmp.WriteAt(counts[:], 40)
	}
	sum := sha256.New()
	if w.err == nil {
		_, w.err = io.Copy(sum, io.NewSectionReader(tmp, 0, end))
	}
	if w.err == nil {
		_, w.err = tmp.WriteAt(sum.Sum(nil), end)
	}
	if w.err != nil {
		w.Abort()
		return fmt.Errorf("kld base %s: %w; base discarded", w.path, w.err)
	}
	if err := w.out.commit(); err != nil { // the buffer is empty: committed as rewritten
		return fmt.Errorf("kld base: %w", err)
	}
	return nil
}

// Abort discards the base: the temporary file is removed and path is left
// as it was. Safe to call after Close.
func (w *BaseWriter) Abort() { w.out.abort() }

// BaseReader reads a verified base file record by record.
type BaseReader struct {
	Name   string
	Format string // BaseFormatPlexbench or BaseFormatLlama
	Header BaseHeader
	Tokens []int32

	closer   io.Closer
	size     int64
	checksum [sha256.Size]byte // the file's trailing checksum
	r        *bufio.Reader
	read     int
	rec      []byte
}

// openBaseFile opens a base file (either format) for reading, refusing at
// once a path that is not a regular file: a FIFO would block the open.
func openBaseFile(path string) (*os.File, error) {
	if err := outfile.CheckInput(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return os.Open(path)
}

// OpenBase opens and verifies a base file.
func OpenBase(path string) (*BaseReader, error) {
	f, err := openBaseFile(path)
	if err != nil {
		return nil, fmt.Errorf("kld base: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("kld base %s: %w", path, err)
	}
	b, err := ReadBase(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	b.closer = f
	return b, nil
}

// ReadBase verifies a base held by r (size bytes; name for messages),
// plexbench's or llama.cpp's as its magic says, and checks every record
// (basecheck.go) before returning: a damaged base is refused here, before
// a run scores anything. A plexbench base: the header's fields and sizes
// before anything is allocated, then one pass over the file that hashes
// it, reads its token ids and checks its records; what the pass found
// counts only once the checksum holds, then the token hash, the window
// counts, the records. A llama.cpp base: see readLlamaBase, then each
// row's scale and minimum. Records are then read in order with Next or
// NextLlama.
func ReadBase(r io.ReaderAt, size int64, name string) (*BaseReader, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrBadBase, name, fmt.Sprintf(format, args...))
	}
	var magic [8]byte
	if size >= int64(len(magic)) {
		if _, err := r.ReadAt(magic[:], 0); err == nil && string(magic[:]) == llamaMagic {
			b, err := readLlamaBase(r, size, name)
			if err == nil {
				err = checkLlamaRows(r, b)
			}
			if err != nil {
				return nil, err
			}
			return b, nil
		}
	}
	h, mlen, err := parseBaseHeader(r, size, name)
	if err != nil {
		return nil, err
	}

	// The size now matches the header, so what follows is bounded by the
	// file itself; nothing read is trusted before the checksum holds.
	metaErr := readBaseMeta(r, mlen, name, &h)
	var windows []Window
	countsErr := metaErr
	if countsErr == nil {
		windows, countsErr = baseWindows(&h, name)
	}
	body := size - sha256.Size
	off := int64(baseFixedHeader) + int64(mlen)
	sum := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(io.NewSectionReader(r, 0, body), sum), 1<<20)
	if _, err := br.Discard(int(off)); err != nil {
		return nil, bad("reading: %v", err)
	}
	tokens := make([]int32, h.Tokens)
	if err := readTokenIDs(br, tokens); err != nil {
		return nil, bad("reading token ids: %v", err)
	}
	b := &BaseReader{Name: name, Format: BaseFormatPlexbench, Header: h, Tokens: tokens, r: br,
		rec: make([]byte, BaseRecordBytes(h.TopK)), size: size}
	var badRecord error
	if metaErr == nil {
		if badRecord, err = checkTopKRecords(b, windows); err != nil {
			return nil, err
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil { // hashes what the check left unread
		return nil, bad("reading: %v", err)
	}
	if _, err := r.ReadAt(b.checksum[:], body); err != nil {
		return nil, bad("reading checksum: %v", err)
	}
	switch {
	case !bytes.Equal(sum.Sum(nil), b.checksum[:]):
		return nil, bad("checksum mismatch: the file is corrupt or was modified")
	case metaErr != nil:
		return nil, metaErr
	case TokenIDsSHA256(tokens) != h.TokenIDsSHA256:
		return nil, bad("token ids do not hash to the header's token_ids_sha256")
	case countsErr != nil:
		return nil, countsErr
	case badRecord != nil:
		return nil, badRecord
	}
	// The run reads the records again from the first, in the same buffer.
	rec := off + 4*int64(h.Tokens)
	br.Reset(io.NewSectionReader(r, rec, body-rec))
	b.read = 0
	return b, nil
}

// parseBaseHeader reads and checks a plexbench base's fixed header held
// by r: its fields, and the file size they promise against size. It
// returns the header (without its meta) and the meta's length.
func parseBaseHeader(r io.ReaderAt, size int64, name string) (BaseHeader, uint32, error) {
	bad := func(format string, args ...any) (BaseHeader, uint32, error) {
		return BaseHeader{}, 0, fmt.Errorf("%w %s: %s", ErrBadBase, name, fmt.Sprintf(format, args...))
	}
	var hdr [baseFixedHeader]byte
	if size < baseFixedHeader+sha256.Size {
		return bad("%d bytes is too short for a base file", size)
	}
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		return bad("reading header: %v", err)
	}
	if string(hdr[:8]) != baseMagic {
		return bad("neither a plexbench nor a llama.cpp KLD base (magic %q)", hdr[:8])
	}
	le := binary.LittleEndian
	h := BaseHeader{Version: int(le.Uint32(hdr[8:]))}
	if h.Version != BaseVersion {
		return bad("format version %d, this build reads %d", h.Version, BaseVersion)
	}
	switch le.Uint32(hdr[12:]) {
	case 1:
		h.Method = MethodChunks
	case 2:
		h.Method = MethodSliding
	default:
		return bad("unknown method code %d", le.Uint32(hdr[12:]))
	}
	ctx, stride, limit, k := le.Uint32(hdr[16:]), le.Uint32(hdr[20:]), le.Uint32(hdr[24:]), le.Uint32(hdr[28:])
	ntok, nwin, nscored := le.Uint64(hdr[32:]), le.Uint64(hdr[40:]), le.Uint64(hdr[48:])
	msize, mlen := le.Uint64(hdr[88:]), le.Uint32(hdr[96:])
	switch {
	case ctx < 1 || ctx > baseMaxCtx:
		return bad("ctx %d out of range", ctx)
	case stride < 1 || stride > ctx:
		return bad("stride %d out of range 1..ctx (%d)", stride, ctx)
	case limit > math.MaxInt32:
		return bad("chunk limit %d out of range", limit)
	case k < 1 || k > MaxTopK:
		return bad("top_k %d out of range 1..%d", k, MaxTopK)
	case ntok > math.MaxInt32 || nscored > ntok || nwin > ntok:
		return bad("counts out of range: %d tokens, %d windows, %d scored", ntok, nwin, nscored)
	case msize > math.MaxInt64:
		return bad("model size %d out of range", msize)
	case mlen > baseMaxMeta:
		return bad("metadata length %d exceeds %d", mlen, baseMaxMeta)
	}
	h.Ctx, h.Stride, h.ChunkLimit, h.TopK = int(ctx), int(stride), int(limit), int(k)
	h.Tokens, h.Windows, h.Scored = int(ntok), int(nwin), int(nscored)
	h.ModelSize = int64(msize)
	copy(h.TokenIDsSHA256[:], hdr[56:88])
	if want := baseSize(int(mlen), &h); size != want {
		return bad("%d bytes, the header promises %d (%d tokens, %d records of %d bytes): truncated or corrupt",
			size, want, h.Tokens, h.Scored, BaseRecordBytes(h.TopK))
	}
	return h, mlen, nil
}

// readBaseMeta reads the meta JSON (mlen bytes after the fixed header)
// into h.Meta.
func readBaseMeta(r io.ReaderAt, mlen uint32, name string, h *BaseHeader) error {
	meta := make([]byte, mlen)
	if _, err := r.ReadAt(meta, baseFixedHeader); err != nil {
		return fmt.Errorf("%w %s: reading metadata: %v", ErrBadBase, name, err)
	}
	if mlen > 0 {
		if err := json.Unmarshal(meta, &h.Meta); err != nil {
			return fmt.Errorf("%w %s: metadata: %v", ErrBadBase, name, err)
		}
	}
	return nil
}

// Remaining is the number of records not yet read.
func (b *BaseReader) Remaining() int { return b.Header.Scored - b.read }

// Next reads the next record into ids and logprobs (each TopK long) and
// returns the base's NLL for that token.
func (b *BaseReader) Next(ids []int32, logprobs []float32) (float64, error) {
	if b.Format == BaseFormatLlama {
		return 0, fmt.Errorf("kld base %s: a llama.cpp base is read with NextLlama", b.Name)
	}
	if b.read >= b.Header.Scored {
		return 0, fmt.Errorf("%w %s: all %d records already read", ErrBadBase, b.Name, b.Header.Scored)
	}
	k := b.Header.TopK
	if len(ids) < k || len(logprobs) < k {
		return 0, fmt.Errorf("kld base %s: Next needs room for %d ids", b.Name, k)
	}
	if _, err := io.ReadFull(b.r, b.rec); err != nil {
		return 0, fmt.Errorf("%w %s: record %d: %v", ErrBadBase, b.Name, b.read, err)
	}
	b.read++
	le := binary.LittleEndian
	for i := range k {
		ids[i] = int32(le.Uint32(b.rec[8+8*i:]))
		logprobs[i] = math.Float32frombits(le.Uint32(b.rec[12+8*i:]))
	}
	return math.Float64frombits(le.Uint64(b.rec)), nil
}

// Close releases the file.
func (b *BaseReader) Close() error {
	if b.closer != nil {
		err := b.closer.Close()
		b.closer = nil
		return err
	}
	return nil
}
