package scoring

// journal.go owns the run journal: a file appended and fsynced after each
// window, holding what the report and a base being recorded need from that
// window, so that a stopped or killed run can be continued (Request.Resume)
// from its last complete window and end byte-identical, timings aside, to
// an uninterrupted one.
//
// Layout (little-endian):
//
//	8      magic "PLXJRNL\x00"
//	4      u32 version (4)
//	4      u32 identity length H (<= 1 MiB)
//	H      identity JSON: model file, text, protocol, base, engine config
//	       (that of the run that began the journal: its backend and device
//	       say where it began; a resume elsewhere is not refused for them)
//	4      u32 CRC-32C of the identity
//	then one record per window, in window order:
//	4      u32 payload length L
//	L      u32 window index, u32 scored n, f64 seconds,
//	       n × f64 NLL, n × (i32 run's top id, f32 its probability),
//	       comparing: n × (f64 NLL, f64 base NLL, f64 KLD, f64 Δp, f64 base top mass,
//	         i32 base's top id, f64 its probability, u8 same-top|top5<<1)
//	         (the comparison's own NLL: against a llama.cpp base it is llama.cpp's f32 one),
//	       recording a base with top-k K: n × K × (i32 id, f32 log-prob)
//	4      u32 CRC-32C of the payload
//
// A record cut short or failing its checksum (a kill mid-append) ends the
// journal: it and anything after it are dropped when the run resumes.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
)

const (
	journalMagic     = "PLXJRNL\x00"
	journalVersion   = 4
	journalMaxHeader = 1 << 20
	modelHeadBytes   = 1 << 20 // hashed from the model file's start
)

// ErrJournalMismatch marks a journal written by a run with another model
// file, text, protocol or engine configuration; ErrBadJournal one whose
// header is unreadable.
var (
	ErrJournalMismatch = errors.New("run journal is from another run")
	ErrBadJournal      = errors.New("bad run journal")
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// journalIdentity is what a journal and the run continuing it must share.
// Fields are compared in this order, nested ones by their JSON keys.
type journalIdentity struct {
	Model          modelIdentity `json:"model"`
	TextSHA256     string        `json:"text_sha256,omitempty"`
	TokenIDsSHA256 string        `json:"token_ids_sha256"`
	Tokens         int           `json:"tokens"`
	Method         string        `json:"method"`
	Ctx            int           `json:"ctx"`
	Stride         int           `json:"stride"`
	ChunkLimit     int           `json:"chunk_limit"`
	Windows        int           `json:"windows"`
	KLDBase        *baseIdentity `json:"kld_base,omitempty"`
	KLDBaseOutTopK int           `json:"kld_base_out_top_k"`
	Config         EngineConfig  `json:"config"`
}

// modelIdentity names a model file without hashing all of it.
type modelIdentity struct {
	Size       int64  `json:"size"`
	ModTime    string `json:"mtime,omitempty"`
	HeadSHA256 string `json:"head_sha256,omitempty"` // of its first MiB
}

// baseIdentity names the base a run compares against.
type baseIdentity struct {
	Size     int64  `json:"size"`
	Checksum string `json:"sha256"` // the base file's own trailing checksum
}

func modelIdentityOf(info ModelInfo) modelIdentity {
	id := modelIdentity{Size: info.Size}
	f, err := os.Open(info.Path)
	if err != nil {
		return id // an engine without a file (tests): its size alone
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		id.Size, id.ModTime = st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, modelHeadBytes); err == nil || errors.Is(err, io.EOF) {
		id.HeadSHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return id
}

// textSHA256 is a text's SHA-256 in hex; "" for no text (token ids).
func textSHA256(text string) string {
	if text == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// idField is one flattened identity field.
type idField struct{ name, value string }

// fields flattens the identity in field order.
func (id journalIdentity) fields() []idField {
	var out []idField
	v := reflect.ValueOf(id)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		out = flatten(out, name, v.Field(i).Interface())
	}
	return out
}

func flatten(out []idField, prefix string, x any) []idField {
	data, _ := json.Marshal(x)
	var v any
	json.Unmarshal(data, &v)
	return flattenValue(out, prefix, v)
}

func flattenValue(out []idField, prefix string, v any) []idField {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = flattenValue(out, prefix+"."+k, m[k])
		}
		return out
	}
	data, _ := json.Marshal(v)
	return append(out, idField{prefix, string(data)})
}

// placementFields are the engine config's fields that say only where a
// run computes, not what it computes: the backend, the device and which
// ops ran on it or fell back to the CPU. A journal begun on one backend
// or device continues on another (a fault on the device, resumed on the
// CPU), so they are not compared; its windows agree with this run's to
// the backends' own spread (TestResumeAcrossBackends). Everything that
// changes the numbers (ctx, batch and ubatch, the KV cache type,
// FlashPrefill, the CPU kernels chosen, threads, the CPU level) still is.
var placementFields = []string{
	"config.backend", "config.device_arch", "config.device_ops", "config.device_blas",
	"config.cpu_fallback_allowed", "config.cpu_fallback_ops",
	"config.device_traffic.weight_bytes", "config.device_traffic.weight_read_bytes", "config.device_traffic.passes",
}

// mismatch names the first field where the journal (j) and this run (r)
// differ, placement aside; "" when none does.
func identityMismatch(j, r journalIdentity) string {
	jf, rf := j.fields(), r.fields()
	rm := map[string]string{}
	for _, f := range rf {
		rm[f.name] = f.value
	}
	jm := map[string]bool{}
	for _, f := range placementFields {
		jm[f] = true
	}
	for _, f := range jf {
		if jm[f.name] {
			continue
		}
		jm[f.name] = true
		if v, ok := rm[f.name]; !ok || v != f.value {
			if !ok {
				v = "absent"
			}
			return fmt.Sprintf("%s is %s in the journal, %s in this run", f.name, f.value, v)
		}
	}
	for _, f := range rf {
		if !jm[f.name] {
			return fmt.Sprintf("%s is absent in the journal, %s in this run", f.name, f.value)
		}
	}
	return ""
}

// placement names where a run with config c computes: "cpu", or the
// backend and its device's architecture, "cuda (sm_90)".
func placement(c EngineConfig) string {
	if c.Backend == "" || c.Backend == "cpu" {
		return "cpu"
	}
	return fmt.Sprintf("%s (%s)", c.Backend, c.DeviceArch)
}

// journal is an open run journal.
type journal struct {
	path string
	f    *os.File
	kld  bool // records carry comparisons
	k    int  // top-k of the base rows they carry; 0 none
	buf  []byte
}

// journalWindow is one decoded record; its slices are reused.
type journalWindow struct {
	Index   int
	Seconds float64
	Blocks  AttentionBlocks // the window's attention blocks kept / computed
	NLL     []float64
	Top     []int32   // the run's top id per token
	TopP    []float32 // its probability (TokenScore.RunTopP)
	Cmp     []TokenComparison
	IDs     []int32   // Scored × k
	LP      []float32 // Scored × k
}

// cmpRecord is the bytes of one token's comparison in a record.
const cmpRecord = 6*8 + 4 + 1

func (j *journal) payloadSize(scored int) int {
	n := 32 + 16*scored
	if j.kld {
		n += cmpRecord * scored
	}
	return n + 8*j.k*scored
}

// openJournal starts a journal at path for a run with identity id, or,
// when resume is set and one is there, opens it for continuing (it must
// have been written for the same identity, placement aside) and returns
// the identity it was begun with. A journal left by another run is never
// overwritten unless resuming it.
func openJournal(path string, id journalIdentity, resume, kld bool, k int) (*journal, *journalIdentity, error) {
	j := &journal{path: path, kld: kld, k: k}
	if resume {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			j.f = f
			begun, err := j.checkHeader(id)
			if err != nil {
				f.Close()
				return nil, nil, err
			}
			return j, &begun, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("run journal: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("run journal %s: an unfinished run's journal is there: continue it with --resume, or remove it", path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("run journal: %w", err)
	}
	j.f = f
	meta, err := json.Marshal(id)
	if err == nil && len(meta) > journalMaxHeader {
		err = fmt.Errorf("identity of %d bytes is too large", len(meta))
	}
	if err == nil {
		hdr := make([]byte, 16, 20+len(meta))
		copy(hdr, journalMagic)
		binary.LittleEndian.PutUint32(hdr[8:], journalVersion)
		binary.LittleEndian.PutUint32(hdr[12:], uint32(len(meta)))
		hdr = binary.LittleEndian.AppendUint32(append(hdr, meta...), crc32.Checksum(meta, crcTable))
		_, err = f.Write(hdr)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		j.remove()
		return nil, nil, fmt.Errorf("run journal %s: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return j, nil, nil
}

// syncDir makes a new file's directory entry durable where the platform
// allows; failure is not an error because some filesystems refuse it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// readJournalHeader reads and checks the header of a journal held by r and
// returns its identity and size in bytes.
func readJournalHeader(r io.Reader, name string) (journalIdentity, int64, error) {
	var id journalIdentity
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrBadJournal, name, fmt.Sprintf(format, args...))
	}
	var hdr [16]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return id, 0, bad("reading header: %v", err)
	}
	if string(hdr[:8]) != journalMagic {
		return id, 0, bad("not a plexbench run journal (magic %q)", hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != journalVersion {
		return id, 0, bad("format version %d, this build reads %d", v, journalVersion)
	}
	n := binary.LittleEndian.Uint32(hdr[12:])
	if n > journalMaxHeader {
		return id, 0, bad("identity length %d exceeds %d", n, journalMaxHeader)
	}
	meta := make([]byte, n+4)
	if _, err := io.ReadFull(r, meta); err != nil {
		return id, 0, bad("reading identity: %v", err)
	}
	if crc32.Checksum(meta[:n], crcTable) != binary.LittleEndian.Uint32(meta[n:]) {
		return id, 0, bad("identity checksum mismatch")
	}
	if err := json.Unmarshal(meta[:n], &id); err != nil {
		return id, 0, bad("identity: %v", err)
	}
	return id, 20 + int64(n), nil
}

// checkHeader reads the journal's identity and checks that the run id
// may continue it; it returns the journal's.
func (j *journal) checkHeader(id journalIdentity) (journalIdentity, error) {
	got, _, err := readJournalHeader(j.f, j.path)
	if err != nil {
		return got, err
	}
	if d := identityMismatch(got, id); d != "" {
		return got, fmt.Errorf("%w: %s: %s", ErrJournalMismatch, j.path, d)
	}
	return got, nil
}

// replay reads the records after the header, in window order, calling fn
// for each window of plan they complete, and returns how many were read.
// A record cut short, failing its checksum or out of order ends the
// journal there: the file is cut back to the last good record, and later
// appends follow it.
func (j *journal) replay(plan Plan, fn func(Window, *journalWindow) error) (int, error) {
	pos, err := j.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	br := bufio.NewReaderSize(j.f, 1<<20)
	var jw journalWindow
	n := 0
	for ; n < len(plan.Windows); n++ {
		w := plan.Windows[n]
		if !j.read(br, w, &jw) {
			break
		}
		if err := fn(w, &jw); err != nil {
			return n, err
		}
		pos += int64(8 + j.payloadSize(w.Scored))
	}
	if err := j.f.Truncate(pos); err != nil {
		return n, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	if _, err := j.f.Seek(pos, io.SeekStart); err != nil {
		return n, fmt.Errorf("run journal %s: %w", j.path, err)
	}
	return n, nil
}

// read decodes window w's record into jw; false when the journal ends
// before a whole, valid record for w.
func (j *journal) read(r io.Reader, w Window, jw *journalWindow) bool {
	size := j.payloadSize(w.Scored)
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil || binary.LittleEndian.Uint32(l[:]) != uint32(size) {
		return false
	}
	j.buf = slices.Grow(j.buf[:0], size+4)[:size+4]
	if _, err := io.ReadFull(r, j.buf); err != nil {
		return false
	}
	p := j.buf[:size]
	le := binary.LittleEndian
	if crc32.Checksum(p, crcTable) != le.Uint32(j.buf[size:]) ||
		le.Uint32(p) != uint32(w.Index) || le.Uint32(p[4:]) != uint32(w.Scored) {
		return false
	}
	n := w.Scored
	jw.Index, jw.Seconds = w.Index, math.Float64frombits(le.Uint64(p[8:]))
	jw.Blocks = AttentionBlocks{Kept: int64(le.Uint64(p[16:])), Total: int64(le.Uint64(p[24:]))}
	p = p[32:]
	jw.NLL = slices.Grow(jw.NLL[:0], n)[:n]
	for i := range n {
		jw.NLL[i] = math.Float64frombits(le.Uint64(p[8*i:]))
	}
	p = p[8*n:]
	jw.Top = slices.Grow(jw.Top[:0], n)[:n]
	jw.TopP = slices.Grow(jw.TopP[:0], n)[:n]
	for i := range n {
		jw.Top[i] = int32(le.Uint32(p[8*i:]))
		jw.TopP[i] = math.Float32frombits(le.Uint32(p[8*i+4:]))
	}
	p = p[8*n:]
	if j.kld {
		jw.Cmp = slices.Grow(jw.Cmp[:0], n)[:n]
		for i := range n {
			q := p[cmpRecord*i:]
			f := func(k int) float64 { return math.Float64frombits(le.Uint64(q[8*k:])) }
			jw.Cmp[i] = TokenComparison{NLL: f(0), BaseNLL: f(1), KLD: f(2), DeltaP: f(3), BaseTopMass: f(4),
				BaseTopP: f(5), BaseTop: int32(le.Uint32(q[48:])), SameTop: q[52]&1 != 0, Top5: q[52]&2 != 0}
		}
		p = p[cmpRecord*n:]
	}
	m := n * j.k
	jw.IDs = slices.Grow(jw.IDs[:0], m)[:m]
	jw.LP = slices.Grow(jw.LP[:0], m)[:m]
	for i := range m {
		jw.IDs[i] = int32(le.Uint32(p[8*i:]))
		jw.LP[i] = math.Float32frombits(le.Uint32(p[8*i+4:]))
	}
	return true
}

// append writes window w's record and fsyncs it.
func (j *journal) append(w Window, jw *journalWindow) error {
	b, err := j.encode(w, jw)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("run journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("run journal %s: %w", j.path, err)
	}
	return nil
}

// encode returns window w's record (in j.buf, valid until the next use).
func (j *journal) encode(w Window, jw *journalWindow) ([]byte, error) {
	size := j.payloadSize(w.Scored)
	le := binary.LittleEndian
	b := slices.Grow(j.buf[:0], size+8)
	b = le.AppendUint32(b, uint32(size))
	b = le.AppendUint32(b, uint32(w.Index))
	b = le.AppendUint32(b, uint32(w.Scored))
	b = le.AppendUint64(b, math.Float64bits(jw.Seconds))
	b = le.AppendUint64(b, uint64(jw.Blocks.Kept))
	b = le.AppendUint64(b, uint64(jw.Blocks.Total))
	for _, x := range jw.NLL {
		b = le.AppendUint64(b, math.Float64bits(x))
	}
	for i, id := range jw.Top {
		b = le.AppendUint32(b, uint32(id))
		b = le.AppendUint32(b, math.Float32bits(jw.TopP[i]))
	}
	if j.kld {
		for _, c := range jw.Cmp {
			for _, x := range []float64{c.NLL, c.BaseNLL, c.KLD, c.DeltaP, c.BaseTopMass, c.BaseTopP} {
				b = le.AppendUint64(b, math.Float64bits(x))
			}
			b = le.AppendUint32(b, uint32(c.BaseTop))
			var fl byte
			if c.SameTop {
				fl |= 1
			}
			if c.Top5 {
				fl |= 2
			}
			b = append(b, fl)
		}
	}
	for i := range jw.IDs {
		b = le.AppendUint32(b, uint32(jw.IDs[i]))
		b = le.AppendUint32(b, math.Float32bits(jw.LP[i]))
	}
	if len(b) != 4+size {
		return nil, fmt.Errorf("run journal %s: window %d record of %d bytes, want %d", j.path, w.Index, len(b)-4, size)
	}
	b = le.AppendUint32(b, crc32.Checksum(b[4:], crcTable))
	j.buf = b
	return b, nil
}

func (j *journal) close() { j.f.Close() }

// remove closes and deletes the journal.
func (j *journal) remove() {
	j.f.Close()
	os.Remove(j.path)
}

// RemoveJournal deletes the journal at path, for a caller that has written
// a complete run's outputs; a missing journal is not an error.
func RemoveJournal(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("run journal: %w", err)
	}
	return nil
}

// JournalWindows returns how many whole window records the journal at
// path holds (for tests and progress; the windows are not checked against
// a plan).
func JournalWindows(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("run journal: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if _, _, err := readJournalHeader(br, path); err != nil {
		return 0, err
	}
	n := 0
	var l [4]byte
	for {
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return n, nil
		}
		size := int64(binary.LittleEndian.Uint32(l[:]))
		if _, err := br.Discard(int(min(size+4, math.MaxInt32))); err != nil {
			return n, nil
		}
		n++
	}
}

// openJournal opens the request's journal (resuming it when asked) and
// replays the windows it holds; it returns how many.
func (r *runner) openJournal() (int, error) {
	tsum := TokenIDsSHA256(r.tokens)
	id := journalIdentity{
		Model: modelIdentityOf(r.info), TokenIDsSHA256: hex.EncodeToString(tsum[:]),
		Tokens: len(r.tokens), Method: r.plan.Method, Ctx: r.plan.Ctx, Stride: r.plan.Stride,
		ChunkLimit: r.plan.ChunkLimit, Windows: len(r.plan.Windows), KLDBaseOutTopK: r.recordTopK(), Config: r.cfg,
		TextSHA256: textSHA256(r.req.Text),
	}
	if b := sourceFile(r.base); b != nil {
		id.KLDBase = &baseIdentity{Size: b.size, Checksum: hex.EncodeToString(b.checksum[:])}
	}
	j, begun, err := openJournal(r.req.Journal, id, r.req.Resume, r.kld != nil, r.recordTopK())
	if err != nil {
		return 0, err
	}
	r.journal = j
	if begun == nil {
		return 0, nil
	}
	n, err := j.replay(r.plan, r.replay)
	if err != nil {
		j.close()
		return 0, fmt.Errorf("resuming from %s: window %d: %w", j.path, n, err)
	}
	r.prefillResumed = r.prefillDone
	if from, on := placement(begun.Config), placement(r.cfg); n > 0 && from != on {
		r.resumedFrom = from
	}
	return n, nil
}

// replay adds a window taken from the journal as if it had just been
// scored: its tokens' NLLs and comparisons, and its base rows.
func (r *runner) replay(w Window, jw *journalWindow) error {
	r.wNLL, r.wTop = NLLStats{}, r.wTop[:0]
	for i, nll := range jw.NLL {
		r.wNLL.Add(nll)
		var c *TokenComparison
		if r.kld != nil {
			c = &jw.Cmp[i]
		}
		r.wTop = append(r.wTop, traceTop(nll, jw.Top[i], jw.TopP[i], c))
		if r.record != nil {
			k := r.record.topK()
			if err := r.record.replay(nll, jw.IDs[i*k:(i+1)*k], jw.LP[i*k:(i+1)*k]); err != nil {
				return err
			}
		}
		if r.kld != nil {
			if err := r.skipBase(1); err != nil {
				return err
			}
			r.kld.Add(w.Index, jw.Cmp[i])
		}
	}
	r.finishWindow(w, jw.Seconds, jw.Blocks)
	return nil
}

// JournalBase is the base the journal at path compares against, as its
// header names it: the base's size and its trailing checksum (hex; zeros
// for a llama.cpp base, which has none). ok is false when the journal's
// run compares against no base.
func JournalBase(path string) (size int64, checksum string, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", false, fmt.Errorf("run journal: %w", err)
	}
	defer f.Close()
	id, _, err := readJournalHeader(bufio.NewReader(f), path)
	if err != nil || id.KLDBase == nil {
		return 0, "", false, err
	}
	return id.KLDBase.Size, id.KLDBase.Checksum, true, nil
}
