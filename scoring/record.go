package scoring

// record.go owns records: a finished run's report with what makes it
// comparable and reproducible (the protocol, its digest, the model's
// identity and size, the machine, the plexbench version, wall times). A
// record is the JSON report with a "record" object added, so every reader
// of reports reads records. The results package names and writes them;
// GroupRecords puts records of one protocol together for `plexbench
// compare`.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RecordSchemaVersion is the version of RecordInfo's layout.
const RecordSchemaVersion = 1

// ErrBadRecord marks a file under a results root that is not a usable record.
var ErrBadRecord = errors.New("bad record")

// RecordInfo is the record part of a report.
type RecordInfo struct {
	SchemaVersion int    `json:"schema_version"`
	Name          string `json:"name"` // the file stem in the results folder (results.RecordName)
	// Digest hashes the protocol, the engine config and the model's
	// identity: two runs with the same digest ran the same thing.
	Digest         string      `json:"digest"`
	ProtocolDigest string      `json:"protocol_digest"`
	Protocol       Protocol    `json:"protocol"`
	Model          RecordModel `json:"model"`
	Machine        Machine     `json:"machine"`
	Version        string      `json:"plexbench_version"`
	Profile        string      `json:"profile,omitempty"` // the profile's name
	// ProfileDigest is the digest of the settings the run ran
	// (profiles.Profile.Digest: every setting, paths resolved, the name
	// aside), so that a resumed sweep knows a record of other settings
	// is not its own. Not in Digest: paths are not identity.
	ProfileDigest string    `json:"profile_digest,omitempty"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	WallSeconds   float64   `json:"wall_seconds"`
}

// Protocol is what makes two runs' numbers comparable: the same windows of
// the same tokens, against the same base. TokenIDsSHA256 is the witness.
type Protocol struct {
	Method         string `json:"method"`
	Ctx            int    `json:"ctx"`
	Stride         int    `json:"stride"`
	ChunkLimit     int    `json:"chunk_limit"`
	TokenIDsSHA256 string `json:"token_ids_sha256"`
	Text           string `json:"text,omitempty"` // the text's file name, for people; not in the digest
	// TextSHA256 is the text's content, when scored from a text: what runs
	// of different tokenizers share (GroupByText); not in the digest.
	TextSHA256 string `json:"text_sha256,omitempty"`
	// Base is the identity of the KLD base the run compared against or
	// recorded (BaseIdentity); TopK its ids per token.
	Base     string `json:"base,omitempty"`
	BaseName string `json:"base_name,omitempty"` // its file name, for people; not in the digest
	TopK     int    `json:"top_k,omitempty"`
	// Shard is "i/n" for a shard's record: shards are never grouped with
	// each other or with whole runs.
	Shard string `json:"shard,omitempty"`
	// TaskFileSHA256 and Tasks are a multiple-choice run's: its task file's
	// content and how many tasks it scored (the draw follows from both).
	TaskFileSHA256 string `json:"task_file_sha256,omitempty"`
	Tasks          int    `json:"tasks,omitempty"`
	// Corpora is the number of texts of a record of several corpora
	// (corpora.go); its token ids hash is over theirs.
	Corpora int `json:"corpora,omitempty"`
}

// RecordModel identifies the model file and its size in bits.
type RecordModel struct {
	File          string         `json:"file"` // base name only
	SHA256Prefix  string         `json:"sha256_prefix"`
	Size          int64          `json:"size"`
	Architecture  string         `json:"architecture"`
	EffectiveBPW  float64        `json:"effective_bpw"` // tensor bits over tensor elements
	TypeHistogram map[string]int `json:"type_histogram"`
	// TokenizerSHA256 pins the tokenizer the run used (ModelInfo's);
	// absent in records written before it.
	TokenizerSHA256 string `json:"tokenizer_sha256,omitempty"`
}

// Machine is where the run ran.
type Machine struct {
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUModel    string `json:"cpu_model,omitempty"`
	CPUs        int    `json:"cpus"`
	CPUFeatures string `json:"cpu_features,omitempty"` // what the kernels used
	CPULevel    string `json:"cpu_level,omitempty"`
	GPU         string `json:"gpu,omitempty"`
}

// digestOf is a short hex SHA-256 of v's JSON.
func digestOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}

// Digest hashes the fields that decide comparability (not the names).
func (p Protocol) Digest() string {
	p.Text, p.BaseName, p.TextSHA256 = "", "", ""
	return digestOf(p)
}

// Title says what runs of the protocol share, for a table's or a chart's
// heading: method, ctx (stride), chunk limit, text, token ids, base.
func (p Protocol) Title() string {
	if p.TaskFileSHA256 != "" {
		return fmt.Sprintf("%s, %d tasks of %s (file sha256 %.12s…)", p.Method, p.Tasks, p.Text, p.TaskFileSHA256)
	}
	s := fmt.Sprintf("%s, ctx %d", p.Method, p.Ctx)
	if p.Method == MethodSliding {
		s += fmt.Sprintf(", stride %d", p.Stride)
	}
	if p.ChunkLimit > 0 {
		s += fmt.Sprintf(", first %d windows", p.ChunkLimit)
	}
	text := p.Text
	switch {
	case text == "" && p.Base != "":
		text = "the base's tokens"
	case text == "":
		text = "tokens"
	}
	s += fmt.Sprintf(", %s (token ids %.12s…)", text, p.TokenIDsSHA256)
	if p.Base != "" {
		s += fmt.Sprintf(", base %s (%s, top-%d)", p.BaseName, p.Base, p.TopK)
	} else {
		s += ", no base"
	}
	return s
}

// ProtocolOf is the report's protocol; base identifies the base compared
// against, or else the one recorded (zero without one). A llama.cpp base
// holds only the chunks it scored, with no chunk limit: its runs' protocol
// takes the base's tokens and no limit, so the run that wrote it and the
// runs compared with it share one protocol.
func ProtocolOf(r *Report, base BaseID) Protocol {
	if len(r.Corpora) > 0 {
		return corporaProtocol(r)
	}
	if c := r.Choice(); c != nil {
		// The context window only decides whether a task fits.
		return Protocol{Method: c.Method, Text: filepath.Base(r.Text), TaskFileSHA256: c.TaskFileSHA256, Tasks: c.Tasks}
	}
	p := Protocol{Method: r.Method, Ctx: r.Ctx, Stride: r.Stride, ChunkLimit: r.ChunkLimit,
		TokenIDsSHA256: r.TokenIDsSHA256, Base: base.Identity}
	if base.Format == BaseFormatLlama {
		p.TokenIDsSHA256, p.ChunkLimit = base.TokenIDsSHA256, 0
	}
	p.Shard = r.ShardSpec().String()
	if r.Text != "" {
		p.Text = filepath.Base(r.Text)
	}
	p.TextSHA256 = r.TextSHA256
	switch {
	case r.KLD != nil:
		p.BaseName, p.TopK = filepath.Base(r.KLD.Base), r.KLD.TopK
	case r.KLDBaseOut != "":
		p.BaseName, p.TopK = filepath.Base(r.KLDBaseOut), r.KLDBaseTopK
	}
	if p.Base == "" {
		p.BaseName, p.TopK = "", 0
	}
	return p
}

// NewRecordInfo completes a record for rep: the protocol and the digests
// (over the protocol, rep's engine config without paths, and the model's
// hash) and the times; the caller names it (results.RecordName).
func NewRecordInfo(rep *Report, base BaseID, model RecordModel, m Machine, version string, started, finished time.Time) RecordInfo {
	ri := RecordInfo{SchemaVersion: RecordSchemaVersion, Protocol: ProtocolOf(rep, base), Model: model,
		Machine: m, Version: version, Started: started.UTC(), Finished: finished.UTC(),
		WallSeconds: finished.Sub(started).Seconds()}
	ri.seal(rep)
	return ri
}

// MergedRecordInfo is the record of shards merged into merged: the
// shards' protocol without the shard, their first start and last finish.
func MergedRecordInfo(shards []Report, merged *Report) RecordInfo {
	ri := *shards[0].Record
	for _, s := range shards[1:] {
		if s.Record.Started.Before(ri.Started) {
			ri.Started = s.Record.Started
		}
		if s.Record.Finished.After(ri.Finished) {
			ri.Finished = s.Record.Finished
		}
	}
	ri.WallSeconds = ri.Finished.Sub(ri.Started).Seconds()
	ri.Protocol.Shard = ""
	ri.seal(merged)
	return ri
}

// seal sets the digests from the protocol, rep's engine config, the
// model and, for a run a stopping rule ended before its last window, the
// rule and the windows it scored: a stopped run never shares its digest,
// nor so its name, with the complete run or a run stopped elsewhere (it
// stays in the complete run's protocol group, marked).
// The name is the results folder's (results.RecordName).
func (ri *RecordInfo) seal(rep *Report) {
	ri.ProtocolDigest = ri.Protocol.Digest()
	cfg := rep.Config
	cfg.Model = ModelInfo{}
	var stopped string
	if s := rep.StoppedEarly; s != nil {
		stopped = fmt.Sprintf("%s at window %d", s.Rule, s.Windows)
	}
	ri.Digest = digestOf(struct {
		Protocol string
		Engine   EngineConfig
		Model    string
		Stopped  string `json:",omitempty"` // absent for a complete run: its digest is as it always was
	}{ri.ProtocolDigest, cfg, ri.Model.SHA256Prefix, stopped})
}

// maxRecord bounds what ReadRecord reads; a report of a million windows is
// about 200 MB.
const maxRecord = 256 << 20

// ReadRecord reads one record. ok is false, with no error, for JSON that
// is not a report (an A/B summary) and for a stopped run's partial report
// (the TUI keeps those in its history); a complete report without a
// record, or without a schema_version, is an error.
func ReadRecord(path string) (rep Report, ok bool, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrBadRecord, path, fmt.Sprintf(format, args...))
	}
	st, err := os.Stat(path)
	if err != nil {
		return rep, false, fmt.Errorf("record: %w", err)
	}
	if st.Size() > maxRecord {
		return rep, false, bad("%d bytes is too large for a record", st.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, false, fmt.Errorf("record: %w", err)
	}
	var head struct {
		Object string          `json:"object"`
		Record json.RawMessage `json:"record"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return rep, false, bad("not JSON: %v", err)
	}
	if head.Object != ReportObject {
		return rep, false, nil
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return rep, false, bad("%v", err)
	}
	switch {
	case rep.Partial:
		return rep, false, nil
	case rep.Record == nil:
		return rep, false, bad("a report without record information (no schema_version); rerun it to make a record")
	case rep.Record.SchemaVersion == 0:
		return rep, false, bad("the record has no schema_version")
	case rep.Record.SchemaVersion > RecordSchemaVersion:
		return rep, false, bad("schema_version %d, this build reads %d", rep.Record.SchemaVersion, RecordSchemaVersion)
	}
	return rep, true, nil
}

// BaseID identifies a base file for records: a short content identity,
// cheap even for llama.cpp's multi-GiB files (a plexbench base's own
// SHA-256 trailer; for a llama.cpp base a hash of its size, header, token
// ids and first chunk of rows), its format and the hash of the token ids
// it holds.
type BaseID struct {
	Identity       string
	Format         string
	TokenIDsSHA256 string
}

// IdentifyBase reads a base file's BaseID.
func IdentifyBase(path string) (BaseID, error) {
	f, err := openBaseFile(path)
	if err != nil {
		return BaseID{}, fmt.Errorf("kld base: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return BaseID{}, fmt.Errorf("kld base %s: %w", path, err)
	}
	bad := func(err error) (BaseID, error) { return BaseID{}, fmt.Errorf("%w %s: %v", ErrBadBase, path, err) }
	var hdr [baseFixedHeader]byte
	if n, err := f.ReadAt(hdr[:], 0); n < 8 {
		return bad(fmt.Errorf("%d bytes: %v", n, err))
	}
	switch string(hdr[:8]) {
	case baseMagic:
		var sum [sha256.Size]byte
		if _, err := f.ReadAt(sum[:], st.Size()-sha256.Size); err != nil {
			return bad(err)
		}
		return BaseID{Identity: "plexbench:" + hex.EncodeToString(sum[:8]), Format: BaseFormatPlexbench,
			TokenIDsSHA256: hex.EncodeToString(hdr[56:88])}, nil
	case llamaMagic:
		b, err := readLlamaBase(f, st.Size(), path) // checks sizes, reads the token ids
		if err != nil {
			return BaseID{}, err
		}
		h := &b.Header
		head := llamaHeader + 4*int64(h.Tokens) + 2*int64(llamaRowWords(h.Meta.VocabSize))*int64(llamaRows(h.Ctx))
		sum := sha256.New()
		binary.Write(sum, binary.LittleEndian, st.Size())
		if _, err := io.Copy(sum, io.NewSectionReader(f, 0, head)); err != nil {
			return bad(err)
		}
		return BaseID{Identity: "llama:" + hex.EncodeToString(sum.Sum(nil)[:8]), Format: BaseFormatLlama,
			TokenIDsSHA256: h.TokenHash()}, nil
	}
	return BaseID{}, fmt.Errorf("%w %s: neither a plexbench nor a llama.cpp KLD base", ErrBadBase, path)
}

// RecordGroup is the records of one protocol, best first: a run that
// recorded the group's base first (its reference), then by mean KLD, or
// by perplexity when the group has no base, by accuracy (highest first)
// in a multiple-choice group.
type RecordGroup struct {
	Protocol Protocol  `json:"protocol"`
	Digest   string    `json:"protocol_digest"`
	Records  []*Report `json:"records"`
}

// Newest is the group's most recently finished record that has (a floor,
// a noise object), or nil.
func (g *RecordGroup) Newest(has func(*Report) bool) *Report {
	var out *Report
	for _, r := range g.Records {
		if has(r) && (out == nil || !r.Record.Finished.Before(out.Record.Finished)) {
			out = r
		}
	}
	return out
}

// newestByName is the newest record of each name, in recs' order.
func newestByName(recs []Report) []*Report {
	latest := map[string]int{}
	for i := range recs {
		r := recs[i].Record
		if j, ok := latest[r.Name]; !ok || recs[j].Record.Finished.Before(r.Finished) {
			latest[r.Name] = i
		}
	}
	var out []*Report
	for i := range recs {
		if latest[recs[i].Record.Name] == i {
			out = append(out, &recs[i])
		}
	}
	return out
}

// GroupByText groups records of one text across tokenizers, for a
// comparison by bits per byte alone: scored from a text of the same
// SHA-256 with the same method, ctx, stride and chunk limit (bases, top-k
// and token ids aside), newest of a name, best (lowest) bits per byte
// first. Records without a text hash (scored from token ids, from a
// base's tokens, written before the hash), shards and multiple-choice
// records are left out; skipped counts them.
func GroupByText(recs []Report) (groups []RecordGroup, skipped int) {
	byText := map[string]*RecordGroup{}
	var order []string
	for _, r := range newestByName(recs) {
		p := r.Record.Protocol
		if p.TextSHA256 == "" || p.Shard != "" || p.TaskFileSHA256 != "" || r.TextBytes <= 0 {
			skipped++
			continue
		}
		q := Protocol{Method: p.Method, Ctx: p.Ctx, Stride: p.Stride, ChunkLimit: p.ChunkLimit, TextSHA256: p.TextSHA256}
		d := digestOf(q) // the file's name aside
		g, ok := byText[d]
		if !ok {
			q.Text = p.Text
			g = &RecordGroup{Protocol: q, Digest: d}
			byText[d] = g
			order = append(order, d)
		}
		g.Records = append(g.Records, r)
	}
	for _, d := range order {
		g := byText[d]
		slices.SortStableFunc(g.Records, func(a, b *Report) int {
			if c := cmpFloat(a.BitsPerByte, b.BitsPerByte); c != 0 {
				return c
			}
			return strings.Compare(a.Record.Name, b.Record.Name)
		})
		groups = append(groups, *g)
	}
	return groups, skipped
}

// GroupRecords splits records by protocol digest (never blending two
// protocols), keeps the newest of records with the same name, and sorts
// each group. Groups are ordered by their best row's figure.
func GroupRecords(recs []Report) []RecordGroup {
	byProto := map[string]*RecordGroup{}
	var order []string
	for _, r := range newestByName(recs) {
		d := r.Record.ProtocolDigest
		g, ok := byProto[d]
		if !ok {
			g = &RecordGroup{Protocol: r.Record.Protocol, Digest: d}
			byProto[d] = g
			order = append(order, d)
		}
		if g.Protocol.Text == "" {
			g.Protocol.Text = r.Record.Protocol.Text
		}
		if n := g.Protocol.BaseName; n == "" || strings.HasPrefix(n, ".") {
			// A dot name is a file being written: records kept before the
			// keeper renamed it name the base so; any other record's name
			// is better.
			g.Protocol.BaseName = r.Record.Protocol.BaseName
		}
		g.Records = append(g.Records, r)
	}
	key := func(r *Report) float64 {
		switch {
		case r.Choice() != nil:
			return -r.Choice().Accuracy
		case r.KLD != nil:
			return r.KLD.MeanKLD
		case r.Record.Protocol.Base != "":
			return math.Inf(-1) // the run that recorded the base
		}
		return r.Perplexity
	}
	out := make([]RecordGroup, 0, len(order))
	for _, d := range order {
		g := byProto[d]
		slices.SortStableFunc(g.Records, func(a, b *Report) int {
			if c := cmpFloat(key(a), key(b)); c != 0 {
				return c
			}
			return strings.Compare(a.Record.Name, b.Record.Name)
		})
		out = append(out, *g)
	}
	slices.SortStableFunc(out, func(a, b RecordGroup) int {
		if c := strings.Compare(a.Protocol.TokenIDsSHA256, b.Protocol.TokenIDsSHA256); c != 0 {
			return c
		}
		if c := cmpFloat(float64(a.Protocol.Ctx), float64(b.Protocol.Ctx)); c != 0 {
			return c
		}
		return strings.Compare(a.Digest, b.Digest)
	})
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ProtocolDifferences names the protocol fields that differ across
// groups, for the legend of a comparison with more than one group.
func ProtocolDifferences(groups []RecordGroup) []string {
	if len(groups) < 2 {
		return nil
	}
	fields := []struct {
		name string
		get  func(p Protocol) string
	}{
		{"method", func(p Protocol) string { return p.Method }},
		{"ctx", func(p Protocol) string { return fmt.Sprint(p.Ctx) }},
		{"stride", func(p Protocol) string { return fmt.Sprint(p.Stride) }},
		{"chunk limit", func(p Protocol) string { return fmt.Sprint(p.ChunkLimit) }},
		{"tokens", func(p Protocol) string { return p.TokenIDsSHA256 }},
		{"base", func(p Protocol) string { return p.Base }},
		{"top-k", func(p Protocol) string { return fmt.Sprint(p.TopK) }},
		{"task file", func(p Protocol) string { return p.TaskFileSHA256 }},
		{"tasks", func(p Protocol) string { return fmt.Sprint(p.Tasks) }},
	}
	var out []string
	for _, f := range fields {
		first := f.get(groups[0].Protocol)
		for _, g := range groups[1:] {
			if f.get(g.Protocol) != first {
				out = append(out, f.name)
				break
			}
		}
	}
	return out
}
