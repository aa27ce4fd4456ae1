// Package profiles owns TOML run profiles: a named, described run
// configuration (model, text, method, window and engine settings) that can be
// loaded strictly, validated, saved atomically, diffed and applied under
// command-line flags.
package profiles

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"plexbench/internal/outfile"
)

// Profile is one run configuration. The zero value is not useful; start from
// Default. Empty Model, Text and Tokens mean the embedded demo model and
// text, as `plexbench score` uses with no --model/--perplexity.
type Profile struct {
	Name        string `toml:"name"`
	Description string `toml:"description"`

	// Paths are written relative to the profile file; Resolve makes them
	// usable from anywhere.
	Model  string `toml:"model"`
	Text   string `toml:"text,omitempty"`   // UTF-8 text to tokenize
	Tokens string `toml:"tokens,omitempty"` // JSON array of token ids, instead of Text
	// Corpora are several texts, each scored as its own run of these
	// settings on the one loaded model (`score` only), instead of Text:
	// the report has a section per text and their averages. One entry is
	// the same run as text set to it.
	Corpora []string `toml:"corpora,omitempty"`

	Method string `toml:"method"` // chunks | sliding
	Ctx    int    `toml:"ctx"`
	Stride int    `toml:"stride"` // sliding only; 0 = ctx
	Chunks int    `toml:"chunks"` // windows to score; 0 = all

	BatchSize    int    `toml:"batch_size"`
	UBatchSize   int    `toml:"ubatch_size"`
	KVCacheDType string `toml:"kv_cache_dtype"` // f32 | f16 | bf16 | q8_0
	KVLen        int    `toml:"kv_len"`         // 0 = the window size
	Threads      int    `toml:"threads"`        // 0 = all cores

	Backend             string `toml:"backend"`
	Device              string `toml:"device"`
	PrefillAttention    string `toml:"prefill_attention"` // dense | flashprefill-v2
	StrictDeviceKernels bool   `toml:"strict_device_kernels"`
	KLDTopK             int    `toml:"kld_top_k"`

	// FlashPrefill holds FlashPrefill V2's parameters, used when
	// prefill_attention is "flashprefill-v2".
	FlashPrefill FlashPrefill `toml:"flashprefill"`

	// Kernels picks a kernel variant per op ("matmul" = "ref"); empty = best available.
	Kernels map[string]string `toml:"kernels"`

	// Sequential stopping (scoring's StopRule): stop once the headline's
	// anytime-valid 95% interval has half-width ≤ stop_at_precision × its
	// value, or lies wholly on one side of stop_when_decided's threshold,
	// after stop_min_windows windows (0: 10). Unset: no rule.
	StopAtPrecision float64 `toml:"stop_at_precision,omitzero"`
	StopMinWindows  int     `toml:"stop_min_windows,omitzero"`
	StopWhenDecided string  `toml:"stop_when_decided,omitempty"`

	// Server, when set, scores the model an HTTP server serves instead
	// of a model file (server.go).
	Server         string `toml:"server,omitempty"`
	API            string `toml:"api,omitempty"`            // vllm | sglang | openai | auto ("")
	ServerParallel int    `toml:"server_parallel,omitzero"` // requests in flight (0: 4)
	ServerTimeout  string `toml:"server_timeout,omitempty"` // per request, a Go duration ("": 10m)
	Tokenizer      string `toml:"tokenizer,omitempty"`      // a GGUF whose tokenizer checks the server's

	// Sweep, when set, makes the profile a sweep's: `plexbench sweep
	// --profile` and `plexbench tui --profile` score its models against
	// its base model with the settings above (model is then unset: each
	// run's model is the sweep's).
	Sweep *Sweep `toml:"sweep,omitempty"`

	// Source is the file the profile was loaded from or saved to; relative
	// paths resolve against its directory. Not written to the file.
	Source string `toml:"-"`
}

// FlashPrefill is the [flashprefill] table (../shared/spec/flashprefill.md §6).
type FlashPrefill struct {
	BlockSize  int      `toml:"block_size"`      // tokens per block; a power of two, at most ctx
	Alpha      *float64 `toml:"alpha,omitempty"` // threshold in [0, 1]; unset: the architecture's default
	SinkBlocks int      `toml:"sink_blocks"`     // leading key blocks always kept
	Window     int      `toml:"window"`          // local blocks kept, the diagonal included (≥ 1)
	LastNFull  int      `toml:"last_n_full"`     // final query blocks computed densely
	MinBudget  int      `toml:"min_budget"`      // top-scoring blocks always kept (0: off)
}

// Sweep is the [sweep] table: the base model, which records the base,
// and the models compared with it (files or globs), paths relative to the
// profile as every path is.
type Sweep struct {
	Base   string   `toml:"base"`
	Models []string `toml:"models"`
}

// FlashPrefillV2 is prefill_attention's name for FlashPrefill V2.
const FlashPrefillV2 = "flashprefill-v2"

// Accepted values of the enumerated settings.
var (
	methods          = []string{"chunks", "sliding"}
	kvDTypes         = []string{"f32", "f16", "bf16", "q8_0"}
	backends         = []string{"cpu", "cuda", "hip"}
	prefillAttention = []string{"dense", FlashPrefillV2}
)

// Limits that keep a profile from asking for absurd allocations downstream.
const (
	maxCtx     = 1 << 20
	maxKVLen   = 1 << 24
	maxBatch   = 1 << 20
	maxThreads = 4096
	maxTopK    = 1024
	maxFile    = 1 << 20 // a profile is a few hundred bytes; refuse anything over 1 MiB
	maxCorpora = 256
)

// Default is the configuration a bare `plexbench score` runs: llama.cpp's
// chunks method at ctx 512 with llama.cpp's default batch plan and f16 KV,
// the KV cache sized to the window as llama-perplexity sizes it to -c.
func Default() Profile {
	return Profile{
		Name:             "default",
		Method:           "chunks",
		Ctx:              512,
		BatchSize:        2048,
		UBatchSize:       512,
		KVCacheDType:     "f16",
		Backend:          "cpu",
		PrefillAttention: "dense",
		KLDTopK:          32,
		FlashPrefill:     FlashPrefill{BlockSize: 128, SinkBlocks: 2, Window: 4, LastNFull: 2},
	}
}

// Error is a problem in a profile file, with the line it is on when known.
type Error struct {
	Path string
	Line int    // 1-based; 0 when unknown
	Key  string // dotted TOML key, when known
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("profile ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		fmt.Fprintf(&b, "%s: ", e.Key)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads a profile strictly: syntax errors, unknown keys and values of
// the wrong type are errors naming the file and line. Settings the file
// leaves out keep their Default values. Load does not Validate.
func Load(path string) (Profile, error) {
	if err := outfile.CheckInput(path); err != nil && !os.IsNotExist(err) {
		return Profile{}, fmt.Errorf("profile %w", err) // a FIFO would block the open
	}
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFile+1)); err != nil {
		return Profile{}, fmt.Errorf("profile %s: %w", path, err)
	}
	if buf.Len() > maxFile {
		return Profile{}, &Error{Path: path, Msg: fmt.Sprintf("file is over %d bytes; not a profile", maxFile)}
	}
	p, err := Parse(path, buf.Bytes())
	if err != nil {
		return Profile{}, err
	}
	p.Source = path
	return p, nil
}

// Sets is the top-level settings the profile file at path sets ("ctx",
// "method"), for a caller that fills the others from elsewhere (a base's
// geometry).
func Sets(path string) (map[string]bool, error) {
	var m map[string]any
	if _, err := toml.DecodeFile(path, &m); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	set := make(map[string]bool, len(m))
	for k := range m {
		set[k] = true
	}
	return set, nil
}

// Parse decodes profile TOML from data; name is used in errors only.
func Parse(name string, data []byte) (Profile, error) {
	p := Default()
	// The name is required in a file: Default's placeholder must not leak in.
	p.Name = ""
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Profile{}, &Error{Path: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		// Type mismatches come back as plain errors; check types ourselves
		// below to name the key and line, and fall back to the library's text.
		if e := checkTypes(name, string(data), md); e != nil {
			return Profile{}, e
		}
		return Profile{}, &Error{Path: name, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	if e := checkTypes(name, string(data), md); e != nil {
		return Profile{}, e
	}
	if len(p.Corpora) == 0 {
		p.Corpora = nil // corpora = [] is no corpora, as an absent key
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return Profile{}, &Error{Path: name, Line: keyLine(string(data), k), Key: k.String(), Msg: "unknown setting"}
	}
	return p, nil
}

// keyTypes is the TOML type each known top-level key must have (MetaData.Type names).
func keyType(key string) (string, bool) {
	switch key {
	case "name", "description", "model", "text", "tokens", "method",
		"kv_cache_dtype", "backend", "device", "prefill_attention", "stop_when_decided",
		"server", "api", "server_timeout", "tokenizer":
		return "String", true
	case "ctx", "stride", "chunks", "batch_size", "ubatch_size", "kv_len", "threads", "kld_top_k", "stop_min_windows",
		"server_parallel":
		return "Integer", true
	case "stop_at_precision":
		return "Float", true
	case "strict_device_kernels":
		return "Bool", true
	case "kernels", "flashprefill", "sweep":
		return "Hash", true
	case "corpora":
		return "Array", true
	}
	return "", false
}

// flashPrefillKeyType is the TOML type of each [flashprefill] key.
func flashPrefillKeyType(key string) (string, bool) {
	switch key {
	case "block_size", "sink_blocks", "window", "last_n_full", "min_budget":
		return "Integer", true
	case "alpha":
		return "Float", true
	}
	return "", false
}

// checkTypes walks every key in the file and reports the first unknown key
// or wrongly typed value. The toml library silently skips some mismatches
// (a number where a table is expected), so this is the authority.
func checkTypes(name, data string, md toml.MetaData) *Error {
	for _, k := range md.Keys() {
		typ := md.Type(k...)
		var want string
		switch {
		case len(k) == 1:
			w, ok := keyType(k[0])
			if !ok {
				return &Error{Path: name, Line: keyLine(data, k), Key: k.String(), Msg: "unknown setting"}
			}
			want = w
		case len(k) == 2 && k[0] == "kernels":
			want = "String"
		case len(k) == 2 && k[0] == "sweep" && (k[1] == "base" || k[1] == "models"):
			want = map[string]string{"base": "String", "models": "Array"}[k[1]]
		case len(k) == 3 && k[0] == "sweep" && k[1] == "models":
			continue // the array's strings; their type is checked with the array's
		case len(k) == 2 && k[0] == "flashprefill":
			w, ok := flashPrefillKeyType(k[1])
			if !ok {
				return &Error{Path: name, Line: keyLine(data, k), Key: k.String(), Msg: "unknown setting"}
			}
			want = w
		default:
			if k[0] == "kernels" {
				return &Error{Path: name, Line: keyLine(data, k), Key: k.String(),
					Msg: `kernels takes op = "variant" pairs; write nested ops quoted, e.g. "matmul.q8_0" = "ref"`}
			}
			return &Error{Path: name, Line: keyLine(data, k), Key: k.String(), Msg: "unknown setting"}
		}
		if typ != want {
			return &Error{Path: name, Line: keyLine(data, k), Key: k.String(),
				Msg: fmt.Sprintf("want %s, got %s", typeWord(want), typeWord(typ))}
		}
	}
	return nil
}

func typeWord(t string) string {
	switch t {
	case "String":
		return "a string"
	case "Integer":
		return "an integer"
	case "Float":
		return "a float"
	case "Bool":
		return "true or false"
	case "Hash":
		return "a table"
	case "Array", "ArrayHash":
		return "an array"
	case "":
		return "nothing"
	}
	return "a " + strings.ToLower(t)
}

// Validate checks every setting's range and the settings' consistency.
func (p Profile) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if strings.TrimSpace(p.Name) == "" {
		bad("name", "empty; every profile needs a name")
	}
	if p.Text != "" && p.Tokens != "" {
		bad("tokens", "both text and tokens are set; give one")
	}
	p.validateCorpora(bad)
	if !slices.Contains(methods, p.Method) {
		bad("method", "%q is not one of %s", p.Method, strings.Join(methods, ", "))
	}
	minCtx := 2
	if p.Method == "chunks" {
		minCtx = 3 // a chunk scores ctx − ctx/2 − 1 tokens
	}
	switch {
	case p.Ctx < minCtx || p.Ctx > maxCtx:
		bad("ctx", "%d is outside %d..%d", p.Ctx, minCtx, maxCtx)
	case p.Stride < 0 || p.Stride > p.Ctx:
		bad("stride", "%d is outside 0..ctx (%d)", p.Stride, p.Ctx)
	case p.Stride != 0 && p.Method != "sliding":
		bad("stride", "%d set, but stride applies to the sliding method only", p.Stride)
	}
	if p.Chunks < 0 {
		bad("chunks", "%d is negative; 0 means all", p.Chunks)
	}
	if p.BatchSize < 1 || p.BatchSize > maxBatch {
		bad("batch_size", "%d is outside 1..%d", p.BatchSize, maxBatch)
	}
	if p.UBatchSize < 1 || p.UBatchSize > maxBatch {
		bad("ubatch_size", "%d is outside 1..%d", p.UBatchSize, maxBatch)
	}
	if !slices.Contains(kvDTypes, p.KVCacheDType) {
		bad("kv_cache_dtype", "%q is not one of %s", p.KVCacheDType, strings.Join(kvDTypes, ", "))
	}
	if p.KVLen < 0 || p.KVLen > maxKVLen {
		bad("kv_len", "%d is outside 0..%d (0 = the window size)", p.KVLen, maxKVLen)
	} else if p.KVLen > 0 && p.Ctx > p.KVLen {
		bad("kv_len", "%d is shorter than ctx %d; a window must fit the KV cache", p.KVLen, p.Ctx)
	}
	if p.Threads < 0 || p.Threads > maxThreads {
		bad("threads", "%d is outside 0..%d (0 = all cores)", p.Threads, maxThreads)
	}
	if !slices.Contains(backends, p.Backend) {
		bad("backend", "%q is not one of %s", p.Backend, strings.Join(backends, ", "))
	}
	if p.Device != "" && p.Backend == "cpu" {
		bad("device", "%q set, but the cpu backend has no devices", p.Device)
	} else if n, err := strconv.Atoi(p.Device); p.Device != "" && (err != nil || n < 0) {
		bad("device", "%q is not a device ordinal (0, 1, ...)", p.Device)
	}
	if !slices.Contains(prefillAttention, p.PrefillAttention) {
		bad("prefill_attention", "%q is not one of %s", p.PrefillAttention, strings.Join(prefillAttention, ", "))
	}
	p.validateFlashPrefill(bad)
	if p.StrictDeviceKernels && p.Backend == "cpu" {
		bad("strict_device_kernels", "true, but the cpu backend has no device kernels")
	}
	if p.KLDTopK < 1 || p.KLDTopK > maxTopK {
		bad("kld_top_k", "%d is outside 1..%d", p.KLDTopK, maxTopK)
	}
	p.validateStop(bad)
	p.validateServer(bad)
	p.validateSweep(bad)
	for _, op := range slices.Sorted(maps.Keys(p.Kernels)) {
		v := p.Kernels[op]
		if !isIdent(op) {
			bad("kernels", "op %q: want letters, digits, '_' and '.'", op)
		}
		if !isIdent(v) {
			bad("kernels."+op, "variant %q: want letters, digits, '_' and '.'", v)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	if p.Source != "" {
		return fmt.Errorf("profile %s: %w", p.Source, err)
	}
	return err
}

// validateFlashPrefill checks the [flashprefill] table when
// prefill_attention asks for FlashPrefill (a dense profile's table is
// unused: profiles saved before the table existed leave it zero).
func (p Profile) validateFlashPrefill(bad func(key, format string, args ...any)) {
	if p.PrefillAttention != FlashPrefillV2 {
		return
	}
	fp := p.FlashPrefill
	ub := min(p.BatchSize, p.UBatchSize)
	switch b := fp.BlockSize; {
	case b < 1 || b > maxCtx || b&(b-1) != 0:
		bad("flashprefill.block_size", "%d is not a power of two up to %d", b, maxCtx)
	case b > p.Ctx:
		bad("flashprefill.block_size", "%d exceeds the ctx %d", b, p.Ctx)
	case ub%b != 0 && ub < p.Ctx:
		bad("flashprefill.block_size", "%d does not divide the %d tokens per pass (min of batch_size and ubatch_size): FlashPrefill passes must hold whole blocks", b, ub)
	}
	if a := fp.Alpha; a != nil && !(*a >= 0 && *a <= 1) {
		bad("flashprefill.alpha", "%g is outside [0, 1]", *a)
	}
	if fp.Window < 1 {
		bad("flashprefill.window", "%d is below 1 (the diagonal block)", fp.Window)
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"sink_blocks", fp.SinkBlocks}, {"last_n_full", fp.LastNFull}, {"min_budget", fp.MinBudget}} {
		if c.v < 0 || c.v > maxCtx {
			bad("flashprefill."+c.key, "%d is outside 0..%d", c.v, maxCtx)
		}
	}
}

// validateCorpora checks the corpora list: texts only, each named, not
// beside text (which of the two would be scored first is a guess).
func (p Profile) validateCorpora(bad func(key, format string, args ...any)) {
	if len(p.Corpora) == 0 {
		return
	}
	if p.Text != "" {
		bad("corpora", "both text and corpora are set; give one (corpora lists every text, the first included)")
	}
	if p.Tokens != "" {
		bad("corpora", "both tokens and corpora are set; corpora are texts: give one")
	}
	if len(p.Corpora) > maxCorpora {
		bad("corpora", "%d texts; at most %d", len(p.Corpora), maxCorpora)
	}
	for i, c := range p.Corpora {
		if strings.TrimSpace(c) == "" {
			bad("corpora", "entry %d is empty; name a text file", i+1)
		}
	}
}

// Texts is what p scores: its corpora, or its one text (nil for the demo
// text or a token file).
func (p Profile) Texts() []string {
	if len(p.Corpora) > 0 {
		return p.Corpora
	}
	if p.Text != "" {
		return []string{p.Text}
	}
	return nil
}

// validateStop checks the stopping settings' ranges; the condition's
// language and names are scoring's, checked when the run is planned.
func (p Profile) validateStop(bad func(key, format string, args ...any)) {
	if r := p.StopAtPrecision; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		bad("stop_at_precision", "%v: want a positive fraction (0: no precision rule)", r)
	}
	if n := p.StopMinWindows; n < 0 || n == 1 {
		bad("stop_min_windows", "%d: want 2 or more (0: 10)", n)
	}
}

// validateSweep checks the [sweep] table, when there is one.
func (p Profile) validateSweep(bad func(key, format string, args ...any)) {
	sw := p.Sweep
	if sw == nil {
		return
	}
	if p.Model != "" {
		bad("model", "%q set beside [sweep]: a sweep's runs take their models from [sweep] base and models", p.Model)
	}
	if strings.TrimSpace(sw.Base) == "" {
		bad("sweep.base", "empty: the model whose base the others are compared with")
	}
	if len(sw.Models) == 0 {
		bad("sweep.models", "empty: give the models to compare with the base (files or globs)")
	}
	for i, m := range sw.Models {
		if strings.TrimSpace(m) == "" {
			bad("sweep.models", "entry %d is empty", i+1)
		}
	}
}

func isIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r == '_' || r == '.' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// Encode writes p as TOML, settings in the documented order.
func (p Profile) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	q := p
	if len(q.Kernels) == 0 {
		q.Kernels = nil
	}
	if err := enc.Encode(q); err != nil {
		return nil, fmt.Errorf("profile %s: encode: %w", p.Name, err)
	}
	return buf.Bytes(), nil
}

// Save writes p to path (see outfile: a reader never sees half a profile,
// and a symlink or device given as path is not replaced).
func Save(path string, p Profile) error {
	data, err := p.Encode()
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, data)
}

// Resolve returns p with Model, Text and Tokens made absolute: relative
// paths resolve against the directory of p.Source, or the working directory
// when p has no source. Empty paths stay empty.
func (p Profile) Resolve() Profile {
	base := "."
	if p.Source != "" {
		base = filepath.Dir(p.Source)
	}
	abs := func(s string) string {
		if s == "" {
			return ""
		}
		if !filepath.IsAbs(s) {
			s = filepath.Join(base, s)
		}
		if a, err := filepath.Abs(s); err == nil {
			return a
		}
		return filepath.Clean(s)
	}
	p.Model, p.Text, p.Tokens, p.Tokenizer = abs(p.Model), abs(p.Text), abs(p.Tokens), abs(p.Tokenizer)
	p.Corpora, p.Sweep = mapPaths(p.Corpora, abs), p.Sweep.mapPaths(abs)
	return p
}

// mapPaths is a copy of the table with f applied to its paths (a glob's
// directory resolves as a path does); nil stays nil.
func (sw *Sweep) mapPaths(f func(string) string) *Sweep {
	if sw == nil {
		return nil
	}
	return &Sweep{Base: f(sw.Base), Models: mapPaths(sw.Models, f)}
}

// RelativeTo returns p (resolved) with its paths rewritten relative to dir,
// for saving a profile into dir. A path that shares nothing with dir but
// the filesystem root stays absolute: "../../../data/m.gguf" helps no one.
func (p Profile) RelativeTo(dir string) Profile {
	p = p.Resolve()
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return p
	}
	rel := func(s string) string {
		if s == "" {
			return ""
		}
		r, err := filepath.Rel(absDir, s)
		if err != nil || !sharesParent(absDir, s) {
			return s
		}
		return filepath.ToSlash(r)
	}
	p.Model, p.Text, p.Tokens, p.Tokenizer = rel(p.Model), rel(p.Text), rel(p.Tokens), rel(p.Tokenizer)
	p.Corpora, p.Sweep = mapPaths(p.Corpora, rel), p.Sweep.mapPaths(rel)
	return p
}

// mapPaths is paths through f, in a new slice (a profile's copies share
// the old one); nil stays nil.
func mapPaths(paths []string, f func(string) string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	for i, s := range paths {
		out[i] = f(s)
	}
	return out
}

// sharesParent reports whether two absolute paths have a common directory
// below the filesystem root.
func sharesParent(a, b string) bool {
	first := func(p string) string {
		p = strings.TrimPrefix(p, filepath.VolumeName(p))
		p = strings.TrimLeft(p, string(filepath.Separator))
		head, _, _ := strings.Cut(p, string(filepath.Separator))
		return head
	}
	return filepath.VolumeName(a) == filepath.VolumeName(b) && first(a) != "" && first(a) == first(b)
}

// Digest is a short hash of the settings that change a run's numbers or
// speed (everything but name, description and source), with paths resolved.
// Two profiles with the same digest run the same thing.
func (p Profile) Digest() string {
	q := p.Resolve()
	q.Name, q.Description, q.Source = "", "", ""
	data, err := q.Encode()
	if err != nil {
		// Encode only fails on programmer error (unencodable field types).
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:12]
}
