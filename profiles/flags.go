package profiles

// The mapping between profile settings and `plexbench score` flags, and the
// helpers that let flags given beside --profile override a profile's fields.

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"plexbench/kernels"
)

// field ties one TOML setting to the score flag that overrides it.
type field struct {
	key    string // TOML key
	flag   string // score flag name, without dashes
	usage  string
	path   bool // a file path: resolved against the profile file or the working directory
	isBool bool
	alias  bool // a second flag for a setting listed before it: not diffed
	// hidden keeps the flag out of help (a second way to give a setting
	// that help already lists); old is the names it had before, still read.
	hidden bool
	old    []string
	// arg names the flag's value in help: FILE, N, X; empty: "string".
	arg string
	// shared is a setting with no flag of its own, given through the flag
	// of the setting before it (corpora, through text's repeated
	// --perplexity): diffed, never bound, applied or overridden itself.
	shared bool
	get    func(p *Profile) string
	set    func(p *Profile, s string) error
	// add and list make the flag repeatable: the first value given sets,
	// each later one adds (add); list is every value p holds, in order.
	add  func(p *Profile, s string) error
	list func(p *Profile) []string
}

func strField(key, flagName, usage string, path bool, f func(p *Profile) *string) field {
	arg := "string"
	if path {
		arg = "FILE"
	}
	return field{key: key, flag: flagName, usage: usage, path: path, arg: arg,
		get: func(p *Profile) string { return *f(p) },
		set: func(p *Profile, s string) error { *f(p) = s; return nil }}
}

func intField(key, flagName, usage string, f func(p *Profile) *int) field {
	return field{key: key, flag: flagName, usage: usage, arg: "N",
		get: func(p *Profile) string { return strconv.Itoa(*f(p)) },
		set: func(p *Profile, s string) error {
			v, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%q is not an integer", s)
			}
			*f(p) = v
			return nil
		}}
}

func floatField(key, flagName, usage string, f func(p *Profile) *float64) field {
	return field{key: key, flag: flagName, usage: usage, arg: "X",
		get: func(p *Profile) string { return strconv.FormatFloat(*f(p), 'g', -1, 64) },
		set: func(p *Profile, s string) error {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number", s)
			}
			*f(p) = v
			return nil
		}}
}

// fields lists the settings in file order. It is read-only after init.
var fields = []field{
	strField("model", "model", "the GGUF model file (empty: the embedded demo model)", true, func(p *Profile) *string { return &p.Model }),
	{key: "text", flag: "perplexity", usage: "a UTF-8 text file to score (empty: the embedded demo text); given again, several corpora:\n" +
		"each text scored as its own run on one loaded model, a report section per text and their averages", path: true, arg: "FILE",
		get: func(p *Profile) string { return p.Text },
		set: func(p *Profile, s string) error { p.Text, p.Corpora = s, nil; return nil },
		add: func(p *Profile, s string) error {
			if len(p.Corpora) == 0 {
				p.Corpora = []string{p.Text}
			}
			p.Text, p.Corpora = "", append(p.Corpora, s)
			return nil
		},
		list: func(p *Profile) []string {
			if len(p.Corpora) > 0 {
				return p.Corpora
			}
			return []string{p.Text}
		}},
	{key: "corpora", flag: "perplexity", shared: true, get: func(p *Profile) string { return strings.Join(p.Corpora, ", ") }},
	strField("tokens", "perplexity-tokens", "a JSON array of token ids to score instead of text", true, func(p *Profile) *string { return &p.Tokens }),
	strField("method", "perplexity-method", "method: chunks | sliding", false, func(p *Profile) *string { return &p.Method }),
	intField("ctx", "perplexity-ctx", "tokens per chunk or window", func(p *Profile) *int { return &p.Ctx }),
	intField("stride", "perplexity-stride", "sliding only: tokens between window starts (0 = ctx)", func(p *Profile) *int { return &p.Stride }),
	intField("chunks", "perplexity-chunks", "score only the first N windows (0 = all)", func(p *Profile) *int { return &p.Chunks }),
	intField("batch_size", "batch-size", "logical batch size (llama.cpp -b)", func(p *Profile) *int { return &p.BatchSize }),
	intField("ubatch_size", "ubatch-size", "tokens per prefill pass (llama.cpp -ub)", func(p *Profile) *int { return &p.UBatchSize }),
	strField("kv_cache_dtype", "kv-cache-dtype", "the KV cache type: f32 | f16 | bf16 | q8_0", false, func(p *Profile) *string { return &p.KVCacheDType }),
	intField("kv_len", "kv-len", "the KV cache positions (0 = the window size)", func(p *Profile) *int { return &p.KVLen }),
	intField("threads", "threads", "worker threads (0 = all cores)", func(p *Profile) *int { return &p.Threads }),
	strField("backend", "backend", "backend: cpu | cuda | hip", false, func(p *Profile) *string { return &p.Backend }),
	strField("device", "device", "device ordinal N for a GPU backend (plexbench devices lists them)", false, func(p *Profile) *string { return &p.Device }),
	{key: "backend", flag: "pool", usage: "backend and device as one value: hip:0, cuda:1, cpu (as --backend and --device)", alias: true, arg: "BACKEND[:N]",
		get: func(p *Profile) string {
			if p.Device == "" {
				return p.Backend
			}
			return p.Backend + ":" + p.Device
		},
		set: func(p *Profile, s string) error {
			b, d, _ := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
			if b == "" {
				return fmt.Errorf("%q is not backend[:device]", s)
			}
			p.Backend, p.Device = b, d
			return nil
		}},
	strField("prefill_attention", "prefill-attention", "prefill attention: dense | flashprefill-v2", false, func(p *Profile) *string { return &p.PrefillAttention }),
	{key: "prefill_attention", flag: "FlashPrefillV2", usage: "on | off: prefill attention flashprefill-v2 or dense (as --prefill-attention)", isBool: true, alias: true, hidden: true,
		get: func(p *Profile) string {
			if p.PrefillAttention == FlashPrefillV2 {
				return "on"
			}
			return "off"
		},
		set: func(p *Profile, s string) error {
			switch strings.ToLower(s) {
			case "on", "true", "1":
				p.PrefillAttention = FlashPrefillV2
			case "off", "false", "0":
				p.PrefillAttention = "dense"
			default:
				return fmt.Errorf("%q is not on or off", s)
			}
			return nil
		}},
	intField("flashprefill.block_size", "flashprefill-block-size", "for FlashPrefill, tokens per block (a power of two)", func(p *Profile) *int { return &p.FlashPrefill.BlockSize }),
	{key: "flashprefill.alpha", flag: "flashprefill-alpha", arg: "X", usage: "for FlashPrefill, keep blocks scoring at least alpha × the best, in [0, 1] (empty: the architecture's default)",
		get: func(p *Profile) string {
			if p.FlashPrefill.Alpha == nil {
				return ""
			}
			return strconv.FormatFloat(*p.FlashPrefill.Alpha, 'g', -1, 64)
		},
		set: func(p *Profile, s string) error {
			if s == "" {
				p.FlashPrefill.Alpha = nil
				return nil
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return fmt.Errorf("%q is not a number", s)
			}
			p.FlashPrefill.Alpha = &v
			return nil
		}},
	intField("flashprefill.sink_blocks", "flashprefill-sink-blocks", "for FlashPrefill, leading key blocks always kept", func(p *Profile) *int { return &p.FlashPrefill.SinkBlocks }),
	intField("flashprefill.window", "flashprefill-window", "for FlashPrefill, local key blocks kept, the diagonal included (≥ 1)", func(p *Profile) *int { return &p.FlashPrefill.Window }),
	intField("flashprefill.last_n_full", "flashprefill-last-n-full", "for FlashPrefill, final query blocks computed densely", func(p *Profile) *int { return &p.FlashPrefill.LastNFull }),
	intField("flashprefill.min_budget", "flashprefill-min-budget", "for FlashPrefill, top-scoring key blocks always kept (0: off)", func(p *Profile) *int { return &p.FlashPrefill.MinBudget }),
	{key: "strict_device_kernels", flag: "strict-device-kernels", old: []string{"no-cpu-fallback"},
		usage: "fail any op without a device kernel instead of running it on the CPU", isBool: true,
		get: func(p *Profile) string { return strconv.FormatBool(p.StrictDeviceKernels) },
		set: func(p *Profile, s string) error {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return fmt.Errorf("%q is not true or false", s)
			}
			p.StrictDeviceKernels = v
			return nil
		}},
	intField("kld_top_k", "perplexity-kld-top-k", "token ids recorded per scored token in a KLD base (1..1024; each takes 8 bytes per scored token)", func(p *Profile) *int { return &p.KLDTopK }),
	{key: "kernels", flag: "kernels", usage: "kernel variants, op=variant[,op=variant...]", arg: "OP=VARIANT,...",
		get: func(p *Profile) string { return FormatKernels(p.Kernels) },
		set: func(p *Profile, s string) error {
			m, err := ParseKernels(s)
			if err != nil {
				return err
			}
			p.Kernels = m
			return nil
		}},
	strField("server", "server", "score the model an HTTP server serves (vLLM, SGLang, OpenAI completions) at this URL instead of a model file", false, func(p *Profile) *string { return &p.Server }),
	strField("api", "api", "the server's API: vllm | sglang | openai | auto (detected from what the server says)", false, func(p *Profile) *string { return &p.API }),
	intField("server_parallel", "server-parallel", "requests in flight to the server (0: 4)", func(p *Profile) *int { return &p.ServerParallel }),
	{key: "server_timeout", flag: "server-timeout", usage: "the timeout of each request to the server, e.g. 90s, 10m (empty: 10m)", arg: "DURATION",
		get: func(p *Profile) string { return p.ServerTimeout }, set: func(p *Profile, s string) error { p.ServerTimeout = s; return nil }},
	strField("tokenizer", "tokenizer", "a GGUF whose tokenizer tokenizes for the server and checks its /tokenize", true, func(p *Profile) *string { return &p.Tokenizer }),
	floatField("stop_at_precision", "stop-at-precision", "stop once the headline's anytime-valid 95% interval (mean KLD against a base, else ln PPL)\n"+
		"has half-width ≤ R × its value (0: no rule)", func(p *Profile) *float64 { return &p.StopAtPrecision }),
	intField("stop_min_windows", "stop-min-windows", "windows scored before a stop rule may end the run (0: 10)", func(p *Profile) *int { return &p.StopMinWindows }),
	strField("stop_when_decided", "stop-when-decided", "stop once the anytime-valid 95% interval lies on one side of a threshold, e.g. 'mean_kld<0.001'\n"+
		"(names mean_kld, mean_nll, ppl, delta_ppl_percent: the change of PPL against the base, paired token by token);\n"+
		"exit 0 when it holds, 3 when it fails", false, func(p *Profile) *string { return &p.StopWhenDecided }),
}

// FlagFor returns the score flag (without dashes) that overrides a profile
// setting, by TOML key: "ctx" → "perplexity-ctx", "text" → "perplexity",
// "strict_device_kernels" → "strict-device-kernels", and so on.
func FlagFor(key string) (string, bool) {
	for _, f := range fields {
		if f.key == key {
			return f.flag, true
		}
	}
	return "", false
}

// OldFlags maps each setting flag's former name to its name now (both
// without dashes): "no-cpu-fallback" → "strict-device-kernels". Commands
// read the old names as the new (a pflag normalization), unlisted in help.
func OldFlags() map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		for _, o := range f.old {
			m[o] = f.flag
		}
	}
	return m
}

// FormatKernels writes a kernel map as "op=variant,op=variant", ops
// sorted: the spec kernels.ParseKernels reads.
func FormatKernels(m map[string]string) string { return kernels.FormatSpec(m) }

// ParseKernels reads "op=variant,op=variant"; an empty string is no choices.
func ParseKernels(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		op, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		op, v = strings.TrimSpace(op), strings.TrimSpace(v)
		if !ok || !isIdent(op) || !isIdent(v) {
			return nil, fmt.Errorf("kernels: %q is not op=variant", item)
		}
		m[op] = v
	}
	return m, nil
}

// explicit returns the flags set on the command line.
func explicit(fs *pflag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	return set
}

// ApplyTo sets every flag of fs that maps to a profile setting and was not
// given on the command line to p's value, so that after ApplyTo the flag
// variables hold "flag if given, else profile". Paths are resolved against
// p's file. Text and tokens count as one setting: giving either flag keeps
// both from the profile. Flags fs does not define are skipped, as are empty
// strings (an empty model or text keeps the flag's default). Call it after
// fs.Parse.
func (p Profile) ApplyTo(fs *pflag.FlagSet) error {
	p = p.Resolve()
	set := explicit(fs)
	inputGiven := set["perplexity"] || set["perplexity-tokens"]
	keyGiven := map[string]bool{} // a setting with two flags: either given keeps both
	for i := range fields {
		if set[fields[i].flag] {
			keyGiven[fields[i].key] = true
		}
	}
	for i := range fields {
		f := &fields[i]
		if f.shared || fs.Lookup(f.flag) == nil || keyGiven[f.key] {
			continue
		}
		if inputGiven && (f.key == "text" || f.key == "tokens") {
			continue
		}
		vals := []string{f.get(&p)}
		if f.list != nil {
			vals = f.list(&p) // a repeatable flag (a plain one keeps the last)
		}
		for _, v := range vals {
			if v == "" {
				continue
			}
			if err := fs.Set(f.flag, v); err != nil {
				return fmt.Errorf("profile %s: %s → --%s: %w", p.Source, f.key, f.flag, err)
			}
		}
	}
	return nil
}

// Override returns p resolved, with every setting whose flag was given on
// fs's command line replaced by the flag's value (paths taken relative to
// the working directory). fs is typically bound with BindFlags to a scratch
// profile; only the flags' values are read here.
func (p Profile) Override(fs *pflag.FlagSet) (Profile, error) {
	p = p.Resolve()
	set := explicit(fs)
	for i := range fields {
		f := &fields[i]
		fl := fs.Lookup(f.flag)
		if f.shared || fl == nil || !set[f.flag] {
			continue
		}
		vals := []string{fl.Value.String()}
		if fv, ok := fl.Value.(*fieldValue); ok && f.list != nil {
			vals = fv.f.list(fv.p) // every value a repeated flag was given
		}
		for n, v := range vals {
			if f.path && v != "" {
				if a, err := filepath.Abs(v); err == nil {
					v = a
				}
			}
			apply := f.set
			if n > 0 {
				apply = f.add
			}
			if err := apply(&p, v); err != nil {
				return p, fmt.Errorf("--%s: %w", f.flag, err)
			}
		}
		switch f.key {
		case "text":
			p.Tokens = ""
		case "tokens":
			p.Text, p.Corpora = "", nil
		}
	}
	return p, nil
}

// BindFlags defines on fs one flag per setting (per setting of keys, the
// TOML keys, when given), named as `plexbench score` names them, reading
// and writing p's fields. Defaults shown in -h are p's values at the time
// of the call.
func (p *Profile) BindFlags(fs *pflag.FlagSet, keys ...string) {
	for i := range fields {
		f := &fields[i]
		if !f.shared && (len(keys) == 0 || slices.Contains(keys, f.key)) {
			fl := fs.VarPF(&fieldValue{p: p, f: f}, f.flag, "", f.usage)
			if f.isBool {
				fl.NoOptDefVal = "true"
			}
			fl.Hidden = f.hidden
		}
	}
}

// fieldValue is a flag.Value over one profile field; n counts the values
// given, so that a repeatable field's later ones add to the first.
type fieldValue struct {
	p *Profile
	f *field
	n int
}

func (v *fieldValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return v.f.get(v.p)
}

func (v *fieldValue) Set(s string) error {
	v.n++
	if v.n > 1 && v.f.add != nil {
		return v.f.add(v.p, s)
	}
	return v.f.set(v.p, s)
}

// Type names the value in help (--perplexity-ctx N); a bool setting's is
// "bool", which help leaves out.
func (v *fieldValue) Type() string {
	if v.f.isBool {
		return "bool"
	}
	if v.f.arg == "" {
		return "string"
	}
	return v.f.arg
}
