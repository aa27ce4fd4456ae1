package profiles

import (
	"errors"
	"github.com/spf13/pflag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// example is the documented profile layout, every key present.
const example = `name = "f16kv"
description = "dense attention, f16 KV"
model = "../models/stories260K-f32.gguf"   # paths resolve relative to the profile file
text = "../texts/tinystories-16k.txt"
method = "chunks"      # chunks | sliding
ctx = 512
stride = 0             # sliding only; 0 = ctx
chunks = 0             # 0 = all
batch_size = 2048
ubatch_size = 512
kv_cache_dtype = "f16" # f32 | f16 | bf16 | q8_0
kv_len = 4096
threads = 0            # 0 = all cores
backend = "cpu"
device = ""
prefill_attention = "dense"
strict_device_kernels = false
kld_top_k = 32
[kernels]              # op = variant, e.g. matmul = "ref"
`

func TestParseExample(t *testing.T) {
	p, err := Parse("example.toml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Name, want.Description = "f16kv", "dense attention, f16 KV"
	want.Model, want.Text = "../models/stories260K-f32.gguf", "../texts/tinystories-16k.txt"
	want.KVLen = 4096
	want.Kernels = map[string]string{}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", p, want)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestMissingKeysTakeDefaults(t *testing.T) {
	p, err := Parse("short.toml", []byte("name = \"x\"\nkv_cache_dtype = \"q8_0\"\n[kernels]\nmatmul = \"ref\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Name, want.KVCacheDType = "x", "q8_0"
	want.Kernels = map[string]string{"matmul": "ref"}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %+v, want %+v", p, want)
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := Default()
	p.Name, p.Description = "rt", "a \"quoted\" description\nover two lines"
	p.Model, p.Tokens = "m/model.gguf", "ids.json"
	p.Method, p.Ctx, p.Stride, p.Chunks = "sliding", 256, 64, 7
	p.BatchSize, p.UBatchSize, p.KVCacheDType, p.KVLen, p.Threads = 512, 64, "bf16", 8192, 3
	p.Backend, p.Device, p.StrictDeviceKernels = "hip", "0", true
	p.KLDTopK = 5
	p.Kernels = map[string]string{"matmul.q8_0": "ref", "softmax": "avx2"}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rt.toml")
	if err := Save(path, p); err != nil {
		t.Fatal(err)
	}
	q, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Source != path {
		t.Errorf("Source = %q, want %q", q.Source, path)
	}
	q.Source = ""
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip changed the profile:\n%+v\n%+v", p, q)
	}
	if d := Diff(p, q); len(d) != 0 {
		t.Errorf("Diff after round trip: %v", d)
	}
	// Saving leaves no temporary files behind.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("dir holds %d entries after Save, want 1", len(ents))
	}
}

func TestStrictParse(t *testing.T) {
	cases := []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"unknown key", "name = \"a\"\n\nkv_dtype = \"f16\"\n", 3, "kv_dtype", "unknown setting"},
		{"unknown key after table", "name = \"a\"\n[kernels]\nmatmul = \"ref\"\n[extra]\nx = 1\n", 4, "extra", "unknown setting"},
		{"string for int", "name = \"a\"\nctx = \"512\"\n", 2, "ctx", "want an integer, got a string"},
		{"float for int", "name = \"a\"\nctx = 1.5\n", 2, "ctx", "want an integer, got a float"},
		{"int for bool", "strict_device_kernels = 1\n", 1, "strict_device_kernels", "want true or false, got an integer"},
		{"int for table", "name = \"a\"\nkernels = 3\n", 2, "kernels", "want a table, got an integer"},
		{"int kernel variant", "[kernels]\n\nmatmul = 3\n", 3, "kernels.matmul", "want a string, got an integer"},
		{"nested kernels", "[kernels]\nmatmul.q8_0 = \"ref\"\n", 2, "kernels.matmul.q8_0", "quoted"},
		{"array for string", "name = [\"a\"]\n", 1, "name", "want a string, got an array"},
		{"syntax", "name = \"a\"\nctx = = 3\n", 2, "", ""},
		{"overflow", "name = \"a\"\nctx = 99999999999999999999\n", 2, "", "out of range"},
		{"duplicate", "ctx = 1\nctx = 2\n", 2, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.toml", []byte(c.text))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if pe.Path != "p.toml" || pe.Line != c.line {
				t.Errorf("err %q: at %s:%d, want p.toml:%d", err, pe.Path, pe.Line, c.line)
			}
			if c.key != "" && pe.Key != c.key {
				t.Errorf("err %q: key %q, want %q", err, pe.Key, c.key)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "profile p.toml:") {
				t.Errorf("err %q: want it to name the file and say %q", err, c.msg)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing.toml")); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing file: err = %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte(strings.Repeat("# pad\n", maxFile/6+10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "big.toml") {
		t.Errorf("oversized file: err = %v", err)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("name = \"a\"\nctxx = 3\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad+":2: ctxx: unknown setting") {
		t.Errorf("unknown key: err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	ok := Default()
	if err := ok.Validate(); err != nil {
		t.Fatalf("Default does not validate: %v", err)
	}
	cases := []struct {
		key    string
		change func(p *Profile)
	}{
		{"name", func(p *Profile) { p.Name = " " }},
		{"tokens", func(p *Profile) { p.Text, p.Tokens = "a.txt", "a.json" }},
		{"method", func(p *Profile) { p.Method = "strided" }},
		{"ctx", func(p *Profile) { p.Ctx = 2 }},
		{"ctx", func(p *Profile) { p.Ctx = maxCtx + 1 }},
		{"stride", func(p *Profile) { p.Stride = 16 }},
		{"stride", func(p *Profile) { p.Method, p.Stride = "sliding", 513 }},
		{"stride", func(p *Profile) { p.Method, p.Stride = "sliding", -1 }},
		{"chunks", func(p *Profile) { p.Chunks = -1 }},
		{"batch_size", func(p *Profile) { p.BatchSize = 0 }},
		{"ubatch_size", func(p *Profile) { p.UBatchSize = 0 }},
		{"kv_cache_dtype", func(p *Profile) { p.KVCacheDType = "q4_0" }},
		{"kv_len", func(p *Profile) { p.KVLen = 256 }},
		{"kv_len", func(p *Profile) { p.KVLen = -1 }},
		{"kv_len", func(p *Profile) { p.KVLen = 1 << 40 }},
		{"threads", func(p *Profile) { p.Threads = -2 }},
		{"backend", func(p *Profile) { p.Backend = "metal" }},
		{"device", func(p *Profile) { p.Device = "0" }},
		{"prefill_attention", func(p *Profile) { p.PrefillAttention = "flash" }},
		{"strict_device_kernels", func(p *Profile) { p.StrictDeviceKernels = true }},
		{"kld_top_k", func(p *Profile) { p.KLDTopK = 1025 }},
		{"kld_top_k", func(p *Profile) { p.KLDTopK = 0 }},
		{"kernels", func(p *Profile) { p.Kernels = map[string]string{"mat mul": "ref"} }},
	}
	for _, c := range cases {
		p := Default()
		c.change(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.key+":") {
			t.Errorf("%s: Validate = %v, want an error naming %s", c.key, err, c.key)
		}
	}
	// Sliding with a stride below ctx is fine; chunks at the smallest ctx too.
	p := Default()
	p.Method, p.Stride = "sliding", 128
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	p = Default()
	p.Ctx = 3
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

func TestResolveAndRelativeTo(t *testing.T) {
	dir := t.TempDir()
	p := Default()
	p.Source = filepath.Join(dir, "profiles", "a.toml")
	p.Model, p.Text = "../models/m.gguf", "/abs/t.txt"
	r := p.Resolve()
	if want := filepath.Join(dir, "models", "m.gguf"); r.Model != want {
		t.Errorf("Model resolved to %q, want %q", r.Model, want)
	}
	if r.Text != "/abs/t.txt" || r.Tokens != "" {
		t.Errorf("Text %q Tokens %q", r.Text, r.Tokens)
	}
	if rr := r.Resolve(); !reflect.DeepEqual(rr, r) {
		t.Error("Resolve is not idempotent")
	}
	rel := p.RelativeTo(filepath.Join(dir, "other"))
	if rel.Model != "../models/m.gguf" {
		t.Errorf("RelativeTo: Model %q", rel.Model)
	}
	// Nothing in common but the root: the path stays absolute.
	if far := p.RelativeTo("/"); far.Text != "/abs/t.txt" {
		t.Errorf("RelativeTo(/): Text %q", far.Text)
	}
	q0 := p
	q0.Text = "/abs/t.txt"
	if got := q0.RelativeTo(filepath.Join(dir, "other")).Text; got != "/abs/t.txt" {
		t.Errorf("unrelated path made relative: %q", got)
	}
	// Saving the rebased profile into the other folder resolves to the same file.
	out := filepath.Join(dir, "other", "b.toml")
	os.MkdirAll(filepath.Dir(out), 0o755)
	if err := Save(out, rel); err != nil {
		t.Fatal(err)
	}
	q, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if q.Resolve().Model != r.Model {
		t.Errorf("after save elsewhere Model resolves to %q, want %q", q.Resolve().Model, r.Model)
	}
}

func TestDiff(t *testing.T) {
	a, b := Default(), Default()
	a.Name, b.Name = "a", "b"
	a.Description = "not a setting"
	b.KVCacheDType, b.UBatchSize = "f32", 64
	b.Kernels = map[string]string{"matmul": "ref"}
	got := Diff(a, b)
	want := []Change{
		{Key: "ubatch_size", A: "512", B: "64"},
		{Key: "kv_cache_dtype", A: "f16", B: "f32"},
		{Key: "kernels", A: "", B: "matmul=ref"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %v, want %v", got, want)
	}
	// The same file reached from two profile folders is no difference.
	dir := t.TempDir()
	a.Source, a.Model = filepath.Join(dir, "x", "a.toml"), "../m.gguf"
	b = a
	b.Source, b.Model = filepath.Join(dir, "b.toml"), "m.gguf"
	if d := Diff(a, b); len(d) != 0 {
		t.Errorf("Diff of one model by two paths = %v", d)
	}
}

func TestDigest(t *testing.T) {
	a := Default()
	b := a
	b.Name, b.Description = "other", "labels do not count"
	if a.Digest() != b.Digest() {
		t.Error("digest depends on name or description")
	}
	b.KVCacheDType = "f32"
	if a.Digest() == b.Digest() {
		t.Error("digest ignores kv_cache_dtype")
	}
	if len(a.Digest()) != 12 {
		t.Errorf("digest %q: want 12 hex digits", a.Digest())
	}
}

func TestCheckComparable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	m1, m1copy, m2 := write("m1.gguf", "model one"), write("m1copy.gguf", "model one"), write("m2.gguf", "model two")
	t1, t2 := write("t1.txt", "text"), write("t2.txt", "text 2")
	a := Default()
	a.Name, a.Model, a.Text = "A", m1, t1
	b := a
	b.Name, b.KVCacheDType, b.Model = "B", "f32", m1copy
	if err := CheckComparable(a, b, CompareEngine); err != nil {
		t.Errorf("same model by content, engine change: %v", err)
	}
	b.Model = m2
	err := CheckComparable(a, b, CompareEngine)
	if !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), "model") {
		t.Errorf("different model, engine comparison: %v", err)
	}
	if err := CheckComparable(a, b, CompareModels); err != nil {
		t.Errorf("different model, model comparison: %v", err)
	}
	for _, c := range []struct {
		what   string
		change func(p *Profile)
	}{
		{"text", func(p *Profile) { p.Text = t2 }},
		{"text", func(p *Profile) { p.Text, p.Tokens = "", t1 }},
		{"method", func(p *Profile) { p.Method = "sliding" }},
		{"ctx", func(p *Profile) { p.Ctx = 256 }},
		{"chunks", func(p *Profile) { p.Chunks = 4 }},
	} {
		b := a
		c.change(&b)
		err := CheckComparable(a, b, CompareModels)
		if !errors.Is(err, ErrNotComparable) || !strings.Contains(err.Error(), c.what) {
			t.Errorf("%s differs: err = %v", c.what, err)
		}
	}
}

func TestApplyTo(t *testing.T) {
	dir := t.TempDir()
	p := Default()
	p.Source = filepath.Join(dir, "p.toml")
	p.Model, p.Text, p.Ctx, p.KVCacheDType = "m.gguf", "t.txt", 128, "f32"
	p.Kernels = map[string]string{"matmul": "ref"}

	// A score-like flag set: the lead's names, its own defaults.
	fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
	model := fs.String("model", "", "")
	text := fs.String("perplexity", "", "")
	tokens := fs.String("perplexity-tokens", "", "")
	ctx := fs.Int("perplexity-ctx", 512, "")
	kv := fs.String("kv-cache-dtype", "f16", "")
	ub := fs.Int("ubatch-size", 512, "")
	kernels := fs.String("kernels", "", "")
	if err := fs.Parse([]string{"--kv-cache-dtype", "q8_0", "--perplexity-tokens", "ids.json"}); err != nil {
		t.Fatal(err)
	}
	if err := p.ApplyTo(fs); err != nil {
		t.Fatal(err)
	}
	if *model != filepath.Join(dir, "m.gguf") {
		t.Errorf("model = %q", *model)
	}
	if *text != "" || *tokens != "ids.json" {
		t.Errorf("text %q tokens %q: the command line's input must win whole", *text, *tokens)
	}
	if *ctx != 128 || *kv != "q8_0" || *ub != 512 || *kernels != "matmul=ref" {
		t.Errorf("ctx %d kv %q ubatch %d kernels %q", *ctx, *kv, *ub, *kernels)
	}
}

func TestBindFlagsAndOverride(t *testing.T) {
	var scratch Profile
	fs := pflag.NewFlagSet("tui", pflag.ContinueOnError)
	scratch.BindFlags(fs)
	if err := fs.Parse([]string{"--perplexity-ctx=64", "--strict-device-kernels", "--perplexity", "x.txt", "--kernels", "b=y,a=x"}); err != nil {
		t.Fatal(err)
	}
	base := Default()
	base.Tokens = "/ids.json"
	got, err := base.Override(fs)
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if got.Ctx != 64 || !got.StrictDeviceKernels || got.Text != filepath.Join(wd, "x.txt") || got.Tokens != "" {
		t.Errorf("override: %+v", got)
	}
	if !reflect.DeepEqual(got.Kernels, map[string]string{"a": "x", "b": "y"}) {
		t.Errorf("kernels %v", got.Kernels)
	}
	if got.KVCacheDType != "f16" {
		t.Errorf("a flag not given changed kv_cache_dtype to %q", got.KVCacheDType)
	}
	if err := fs.Parse([]string{"--perplexity-ctx=abc"}); err == nil {
		t.Error("non-integer ctx accepted")
	}
	if _, err := ParseKernels("matmul"); err == nil {
		t.Error("kernels without = accepted")
	}
	for _, k := range []string{"model", "text", "tokens", "ctx", "stride", "kv_len", "kld_top_k", "strict_device_kernels", "kernels"} {
		if _, ok := FlagFor(k); !ok {
			t.Errorf("no flag for %s", k)
		}
	}
}

func FuzzProfile(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("name = \"x\"\n[kernels]\nmatmul = \"ref\"\n"))
	f.Add([]byte("ctx = \"a\"\n"))
	f.Add([]byte("[kernels]\n\"a.b\" = \"c\"\n"))
	f.Add([]byte("name = '''\nmulti\n'''\nctx = -1\n"))
	f.Add([]byte("name = \"s\"\n[sweep]\nbase = \"f16.gguf\"\nmodels = [\"q8_0.gguf\", \"q4_*.gguf\"]\n"))
	f.Add([]byte("[sweep]\nbase = \"b\"\n"))
	f.Add([]byte("name = \"c\"\ncorpora = [\"a.txt\", \"b.txt\"]\n"))
	f.Add([]byte("corpora = []\ntext = \"a\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.toml", data)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *Error", err)
			}
			return
		}
		_ = p.Validate()
		_ = Diff(p, Default())
		enc, err := p.Encode()
		if err != nil {
			t.Fatalf("encode a parsed profile: %v", err)
		}
		q, err := Parse("re.toml", enc)
		if err != nil {
			t.Fatalf("re-parse of encoded profile: %v\n%s", err, enc)
		}
		if len(p.Kernels) == 0 {
			p.Kernels = nil
		}
		if len(q.Kernels) == 0 {
			q.Kernels = nil
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("encode/parse changed the profile:\n%+v\n%+v", p, q)
		}
	})
}

// TestFlashPrefillSettings parses the [flashprefill] table, round-trips
// it, maps --FlashPrefillV2 and --flashprefill-* onto it and refuses bad
// values and keys.
func TestFlashPrefillSettings(t *testing.T) {
	src := "name = \"fp\"\nprefill_attention = \"flashprefill-v2\"\nctx = 4096\n[flashprefill]\nblock_size = 64\nalpha = 0.25\nsink_blocks = 1\nwindow = 3\nlast_n_full = 0\nmin_budget = 4\n"
	p, err := Parse("fp.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := FlashPrefill{BlockSize: 64, SinkBlocks: 1, Window: 3, LastNFull: 0, MinBudget: 4}
	if a := p.FlashPrefill.Alpha; a == nil || *a != 0.25 {
		t.Fatalf("alpha %v", a)
	}
	got := p.FlashPrefill
	got.Alpha = nil
	if got != want || p.PrefillAttention != FlashPrefillV2 {
		t.Fatalf("parsed %+v %q", got, p.PrefillAttention)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("back.toml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip\n%s\ngave %+v", data, back)
	}
	// An unset alpha stays unset (the architecture's default).
	if d := Default(); d.FlashPrefill.Alpha != nil || d.FlashPrefill.BlockSize != 128 || d.FlashPrefill.Window != 4 ||
		d.FlashPrefill.SinkBlocks != 2 || d.FlashPrefill.LastNFull != 2 || d.FlashPrefill.MinBudget != 0 {
		t.Errorf("defaults %+v", d.FlashPrefill)
	}

	for _, bad := range []string{"[flashprefill]\nalpha = \"x\"\n", "[flashprefill]\nblocks = 2\n", "[flashprefill]\nwindow = 1.5\n", "flashprefill = 3\n"} {
		if _, err := Parse("bad.toml", []byte("name = \"x\"\n"+bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}

	var scratch Profile
	fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
	scratch.BindFlags(fs)
	if err := fs.Parse([]string{"--FlashPrefillV2=on", "--flashprefill-alpha", "0.5", "--flashprefill-window", "2"}); err != nil {
		t.Fatal(err)
	}
	o, err := Default().Override(fs)
	if err != nil {
		t.Fatal(err)
	}
	if o.PrefillAttention != FlashPrefillV2 || o.FlashPrefill.Alpha == nil || *o.FlashPrefill.Alpha != 0.5 || o.FlashPrefill.Window != 2 {
		t.Errorf("override: %q %+v", o.PrefillAttention, o.FlashPrefill)
	}
	if err := fs.Set("FlashPrefillV2", "maybe"); err == nil {
		t.Error("--FlashPrefillV2=maybe accepted")
	}
	if ch := Diff(Default(), o); len(ch) != 3 || ch[0].Key != "prefill_attention" {
		t.Errorf("diff %v: want prefill_attention once, then alpha and window", ch)
	}

	alpha := func(v float64) *float64 { return &v }
	for key, change := range map[string]func(p *Profile){
		"flashprefill.block_size":  func(p *Profile) { p.FlashPrefill.BlockSize = 96 },
		"flashprefill.block_size:": func(p *Profile) { p.PrefillAttention, p.Ctx, p.FlashPrefill.BlockSize = FlashPrefillV2, 64, 128 },
		"flashprefill.block_size;": func(p *Profile) { p.PrefillAttention, p.Ctx, p.UBatchSize = FlashPrefillV2, 4096, 200 },
		"flashprefill.alpha":       func(p *Profile) { p.FlashPrefill.Alpha = alpha(1.5) },
		"flashprefill.alpha:":      func(p *Profile) { p.FlashPrefill.Alpha = alpha(-0.1) },
		"flashprefill.window":      func(p *Profile) { p.FlashPrefill.Window = 0 },
		"flashprefill.sink_blocks": func(p *Profile) { p.FlashPrefill.SinkBlocks = -1 },
		"prefill_attention":        func(p *Profile) { p.PrefillAttention = "sparse" },
	} {
		p := Default()
		p.PrefillAttention, p.Ctx = FlashPrefillV2, 4096
		change(&p)
		name := strings.TrimRight(key, ":;")
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s: Validate = %v", key, err)
		}
	}
	// A dense run's table is unused: a block over its ctx, or a zero
	// table (profiles saved before it existed), is no error.
	p = Default()
	p.Ctx = 64
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	p.FlashPrefill = FlashPrefill{}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
}

// TestSweepTable parses the [sweep] table, resolves its paths against the
// profile's folder (globs too), round-trips it and refuses bad tables.
func TestSweepTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sweep.toml")
	text := "name = \"quants\"\nctx = 128\n[sweep]\nbase = \"m/f16.gguf\"\nmodels = [\"m/q8_0.gguf\", \"m/q4_*.gguf\"]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := &Sweep{Base: "m/f16.gguf", Models: []string{"m/q8_0.gguf", "m/q4_*.gguf"}}
	if !reflect.DeepEqual(p.Sweep, want) {
		t.Fatalf("sweep = %+v, want %+v", p.Sweep, want)
	}
	r := p.Resolve()
	if r.Sweep.Base != filepath.Join(dir, "m/f16.gguf") || r.Sweep.Models[1] != filepath.Join(dir, "m/q4_*.gguf") {
		t.Errorf("resolved sweep = %+v", r.Sweep)
	}
	if p.Sweep.Base != "m/f16.gguf" {
		t.Errorf("Resolve changed the original's table: %+v", p.Sweep)
	}
	back := r.RelativeTo(dir)
	if !reflect.DeepEqual(back.Sweep, want) {
		t.Errorf("RelativeTo = %+v, want %+v", back.Sweep, want)
	}
	saved := filepath.Join(dir, "again.toml")
	if err := Save(saved, p); err != nil {
		t.Fatal(err)
	}
	q, err := Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Sweep, want) {
		t.Errorf("round trip: %+v", q.Sweep)
	}
	// A plain profile writes no [sweep] table.
	enc, _ := Default().Encode()
	if strings.Contains(string(enc), "sweep") {
		t.Errorf("a plain profile encodes a sweep table:\n%s", enc)
	}
	for _, c := range []struct{ text, want string }{
		{"name = \"a\"\n[sweep]\nbase = \"b.gguf\"\n", "sweep.models: empty"},
		{"name = \"a\"\n[sweep]\nmodels = [\"q.gguf\"]\n", "sweep.base: empty"},
		{"name = \"a\"\nmodel = \"m.gguf\"\n[sweep]\nbase = \"b.gguf\"\nmodels = [\"q.gguf\"]\n", "model: \"m.gguf\" set beside [sweep]"},
		{"name = \"a\"\n[sweep]\nbase = \"b.gguf\"\nmodels = [\"q.gguf\", \"\"]\n", "sweep.models: entry 2 is empty"},
	} {
		p, err := Parse("s.toml", []byte(c.text))
		if err == nil {
			err = p.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.text, err, c.want)
		}
	}
	for _, c := range []struct {
		text string
		line int
		key  string
	}{
		{"name = \"a\"\n[sweep]\nbase = 3\n", 3, "sweep.base"},
		{"name = \"a\"\n[sweep]\nmodels = \"q.gguf\"\n", 3, "sweep.models"},
		{"name = \"a\"\n[sweep]\nbase = \"b\"\nextra = 1\n", 4, "sweep.extra"},
		{"name = \"a\"\nsweep = 1\n", 2, "sweep"},
	} {
		_, err := Parse("s.toml", []byte(c.text))
		var pe *Error
		if !errors.As(err, &pe) || pe.Line != c.line || pe.Key != c.key {
			t.Errorf("%q: err %v, want line %d key %s", c.text, err, c.line, c.key)
		}
	}
}
