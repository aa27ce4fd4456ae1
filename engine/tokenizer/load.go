package tokenizer

// This file owns building a Tokenizer from GGUF metadata
// (../shared/spec/tokenizers.md §1): reading the tokenizer.ggml.* keys,
// llama.cpp's defaults and overrides for special ids and
// add_bos/add_eos/add_space_prefix, and the token-attribute fix-ups that
// decide which token texts are split out of plain text.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"plexbench/engine/gguf"
)

var (
	// ErrUnsupported: a tokenizer model or pre-tokenizer this package does
	// not implement.
	ErrUnsupported = errors.New("unsupported tokenizer")
	// ErrInvalid: tokenizer metadata that is missing, mistyped or
	// inconsistent.
	ErrInvalid = errors.New("invalid tokenizer metadata")
)

// Special-id slots whose GGUF keys llama.cpp reads.
const (
	slotBOS = iota
	slotEOS
	slotEOT
	slotEOM
	slotUNK
	slotFIMPre
	slotFIMSuf
	slotFIMMid
	slotFIMPad
	slotFIMRep
	slotFIMSep
	nSlots
)

// slotKeys lists the keys of each slot in the order llama.cpp applies them
// (the deprecated prefix/suffix/middle keys come last and so win).
var slotKeys = [...]struct {
	slot int
	key  string
}{
	{slotBOS, "tokenizer.ggml.bos_token_id"},
	{slotEOS, "tokenizer.ggml.eos_token_id"},
	{slotEOT, "tokenizer.ggml.eot_token_id"},
	{slotEOM, "tokenizer.ggml.eom_token_id"},
	{slotUNK, "tokenizer.ggml.unknown_token_id"},
	{slotFIMPre, "tokenizer.ggml.fim_pre_token_id"},
	{slotFIMSuf, "tokenizer.ggml.fim_suf_token_id"},
	{slotFIMMid, "tokenizer.ggml.fim_mid_token_id"},
	{slotFIMPad, "tokenizer.ggml.fim_pad_token_id"},
	{slotFIMRep, "tokenizer.ggml.fim_rep_token_id"},
	{slotFIMSep, "tokenizer.ggml.fim_sep_token_id"},
	{slotFIMPre, "tokenizer.ggml.prefix_token_id"},
	{slotFIMSuf, "tokenizer.ggml.suffix_token_id"},
	{slotFIMMid, "tokenizer.ggml.middle_token_id"},
}

// vocabSpec is the raw tokenizer metadata, independent of GGUF.
type vocabSpec struct {
	name      string // labels errors (the file path)
	model     string // tokenizer.ggml.model
	pre       string // tokenizer.ggml.pre ("" when absent)
	tokens    []string
	scores    []float32 // nil: all zero
	types     []int32   // nil: all NORMAL
	merges    []string
	ids       [nSlots]int64 // -1 where the key is absent
	addBOS    *bool
	addEOS    *bool
	addPrefix *bool
	modelName string // general.name (phi-3 gets RSTRIP on special tokens)
}

// FromGGUF builds the tokenizer described by f's tokenizer.ggml.* metadata.
// Only the "llama" (SPM) and "gpt2" (byte-level BPE) models are supported;
// other models and unknown pre-tokenizers give an error wrapping
// ErrUnsupported, bad metadata one wrapping ErrInvalid.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	spec := vocabSpec{name: f.Path}
	for i := range spec.ids {
		spec.ids[i] = -1
	}
	fail := func(format string, args ...any) (*Tokenizer, error) {
		return nil, fmt.Errorf("tokenizer %s: %s: %w", f.Path, fmt.Sprintf(format, args...), ErrInvalid)
	}
	var ok bool
	if spec.model, ok = f.String("tokenizer.ggml.model"); !ok {
		return fail("missing or non-string tokenizer.ggml.model")
	}
	if f.Has("tokenizer.ggml.pre") {
		if spec.pre, ok = f.String("tokenizer.ggml.pre"); !ok {
			return fail("tokenizer.ggml.pre is not a string")
		}
	}
	if spec.tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return fail("missing or mistyped tokenizer.ggml.tokens (want a string array)")
	}
	if v, has := f.Value("tokenizer.ggml.scores"); has {
		switch {
		case v.IsArray() && v.ElemType == gguf.TypeFloat32:
			spec.scores, _ = v.AsFloat32s() // build copies it
		case v.IsArray() && v.ElemType == gguf.TypeInt32:
			is, _ := v.AsInt32s()
			spec.scores = make([]float32, len(is))
			for i, x := range is {
				spec.scores[i] = float32(x)
			}
		default:
			return fail("tokenizer.ggml.scores is %v, want a float32 or int32 array", v)
		}
	}
	if v, has := f.Value("tokenizer.ggml.token_type"); has {
		if !v.IsArray() || v.ElemType != gguf.TypeInt32 {
			return fail("tokenizer.ggml.token_type is %v, want an int32 array", v)
		}
		spec.types, _ = v.AsInt32s()
	}
	if spec.model == "gpt2" {
		if spec.merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return fail("missing or mistyped tokenizer.ggml.merges (want a string array)")
		}
	}
	for _, sk := range slotKeys {
		if !f.Has(sk.key) {
			continue
		}
		u, ok := f.Uint(sk.key)
		if !ok {
			if _, isInt := f.Int(sk.key); isInt {
				continue // a negative id means "none"
			}
			return fail("%s is not an integer", sk.key)
		}
		spec.ids[sk.slot] = int64(min(u, 1<<62))
	}
	boolKey := func(key string) (*bool, error) {
		if !f.Has(key) {
			return nil, nil
		}
		b, ok := f.Bool(key)
		if !ok {
			return nil, fmt.Errorf("tokenizer %s: %s is not a bool: %w", f.Path, key, ErrInvalid)
		}
		return &b, nil
	}
	var err error
	if spec.addBOS, err = boolKey("tokenizer.ggml.add_bos_token"); err != nil {
		return nil, err
	}
	if spec.addEOS, err = boolKey("tokenizer.ggml.add_eos_token"); err != nil {
		return nil, err
	}
	if spec.addPrefix, err = boolKey("tokenizer.ggml.add_space_prefix"); err != nil {
		return nil, err
	}
	spec.modelName, _ = f.String("general.name")
	return build(spec)
}

// build validates spec and assembles the Tokenizer.
func build(spec vocabSpec) (*Tokenizer, error) {
	if err := spec.checkLengths(); err != nil {
		return nil, err
	}
	t, err := newTokenizer(&spec)
	if err != nil {
		return nil, err
	}
	if err := t.setTokens(&spec); err != nil {
		return nil, err
	}
	ids, err := t.setSpecialIDs(&spec)
	if err != nil {
		return nil, err
	}
	t.fixAttrs(ids)
	t.listSpecial()
	t.nameAttrs(spec.modelName)
	switch t.kind {
	case KindSPM:
		t.spmTables()
	case KindBPE:
		t.bpe = newBPEModel(spec.merges, len(t.tokens), t.tokenID)
	}
	t.hash = t.computeHash(spec.merges)
	return t, nil
}

// errorf is an error about spec's metadata wrapping sentinel.
func (spec *vocabSpec) errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("tokenizer %s: %s: %w", spec.name, fmt.Sprintf(format, args...), sentinel)
}

// checkLengths checks the token count and that scores and types, when
// present, cover every token.
func (spec *vocabSpec) checkLengths() error {
	n := len(spec.tokens)
	if n == 0 {
		return spec.errorf(ErrInvalid, "empty tokenizer.ggml.tokens")
	}
	if n > 1<<30 {
		return spec.errorf(ErrInvalid, "%d tokens is too many", n)
	}
	if spec.scores != nil && len(spec.scores) < n {
		return spec.errorf(ErrInvalid, "%d scores for %d tokens", len(spec.scores), n)
	}
	if spec.types != nil && len(spec.types) < n {
		return spec.errorf(ErrInvalid, "%d token types for %d tokens", len(spec.types), n)
	}
	return nil
}

// newTokenizer is a Tokenizer with spec's model and pre-tokenizer and
// their defaults for the special ids, add_bos and add_space_prefix (the
// add_space_prefix key applied).
func newTokenizer(spec *vocabSpec) (*Tokenizer, error) {
	t := &Tokenizer{pre: spec.pre, bos: -1, eos: -1, unk: -1}
	if t.pre == "" {
		t.pre = "default"
	}
	switch spec.model {
	case "llama":
		t.kind = KindSPM
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addBOS, t.addSpacePrefix = true, true
	case "gpt2":
		t.kind = KindBPE
		pt, ok := lookupPre(t.pre)
		if !ok {
			return nil, spec.errorf(ErrUnsupported, "pre-tokenizer %q is not supported", t.pre)
		}
		t.preType = pt
		t.ignoreMerges = pt.ignoreMerges
		t.bos, t.eos = 11, 11
		t.addBOS = pt.addBOS
	case "":
		return nil, spec.errorf(ErrInvalid, "empty tokenizer.ggml.model")
	default:
		return nil, spec.errorf(ErrUnsupported, "tokenizer model %q (only \"llama\" SPM and \"gpt2\" BPE are supported)", spec.model)
	}
	if spec.addPrefix != nil {
		t.addSpacePrefix = *spec.addPrefix
	}
	return t, nil
}

// setTokens fills the token texts (an empty one renamed [EMPTY_id]), the
// id map, the scores and the attributes from spec.
func (t *Tokenizer) setTokens(spec *vocabSpec) error {
	n := len(spec.tokens)
	t.tokens = make([]string, n)
	t.scores = make([]float32, n)
	t.attrs = make([]tokenAttr, n)
	t.tokenID = make(map[string]int32, n)
	for i, s := range spec.tokens {
		if s == "" {
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
		}
		if prev, dup := t.tokenID[s]; dup {
			return spec.errorf(ErrInvalid, "duplicate token %q has ids %d and %d", s, prev, i)
		}
		t.tokenID[s] = int32(i)
		t.tokens[i] = s
		if spec.scores != nil {
			t.scores[i] = spec.scores[i]
		}
		t.attrs[i] = attrNormal
		if spec.types != nil {
			t.attrs[i] = attrFromType(spec.types[i])
		}
	}
	return nil
}

// setSpecialIDs resolves every special-id slot from the defaults and
// spec's keys, applies add_bos/add_eos, and returns the slots.
func (t *Tokenizer) setSpecialIDs(spec *vocabSpec) ([nSlots]int32, error) {
	n := len(t.tokens)
	// Defaults out of range are dropped; keys out of range are ignored
	// (llama.cpp keeps the default).
	ids := [nSlots]int32{}
	for i := range ids {
		ids[i] = -1
	}
	ids[slotBOS], ids[slotEOS], ids[slotUNK] = t.bos, t.eos, t.unk
	for i := range ids {
		if ids[i] >= int32(n) {
			ids[i] = -1
		}
		if v := spec.ids[i]; v >= 0 && v < int64(n) {
			ids[i] = int32(v)
		}
	}
	t.bos, t.eos, t.unk = ids[slotBOS], ids[slotEOS], ids[slotUNK]
	if spec.addBOS != nil {
		t.addBOS = *spec.addBOS
	}
	if spec.addEOS != nil {
		t.addEOS = *spec.addEOS
	}
	if t.addBOS && t.bos < 0 {
		return ids, spec.errorf(ErrInvalid, "add_bos_token is true but there is no valid bos_token_id")
	}
	if t.addEOS && t.eos < 0 {
		return ids, spec.errorf(ErrInvalid, "add_eos_token is true but there is no valid eos_token_id")
	}
	return ids, nil
}

// listSpecial lists the CONTROL, USER_DEFINED and UNKNOWN ids, longest
// text first; llama.cpp's std::sort leaves equal lengths unordered, we
// keep id order.
func (t *Tokenizer) listSpecial() {
	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(i))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return len(t.tokens[b]) - len(t.tokens[a])
	})
}

// spmTables fills the SPM barrier bytes (ASCII in no token longer than
// one byte) and each byte's fallback token.
func (t *Tokenizer) spmTables() {
	for b := range t.spmBarrier {
		t.spmBarrier[b] = true
	}
	for _, s := range t.tokens {
		if len(s) > 1 {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x80 {
					t.spmBarrier[s[i]] = false
				}
			}
		}
	}
	for b := 0; b < 256; b++ {
		t.spmByte[b] = -1
		if id, ok := t.lookup(fmt.Sprintf("<0x%02X>", b)); ok {
			t.spmByte[b] = id
		} else if id, ok := t.lookup(string([]byte{byte(b)})); ok {
			t.spmByte[b] = id
		} else if t.unk >= 0 {
			// llama.cpp aborts here; Encode cannot fail, so UNK stands in.
			t.spmByte[b] = t.unk
		}
	}
}

// attrFromType maps tokenizer.ggml.token_type values to attributes.
func attrFromType(ty int32) tokenAttr {
	switch ty {
	case 1:
		return attrNormal
	case 2:
		return attrUnknown
	case 3:
		return attrControl
	case 4:
		return attrUserDefined
	case 5:
		return attrUnused
	case 6:
		return attrByte
	}
	return 0 // undefined
}

// Token texts llama.cpp recognises when the matching id key is absent
// (../shared/spec/tokenizers.md §1.2); a match is marked CONTROL.
var autoSpecial = [...]struct {
	slot  int
	texts []string
}{
	{slotEOT, []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}},
	{slotEOM, []string{"<|eom_id|>"}},
	{slotFIMPre, []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
		"▁<PRE>", "<|code_prefix|>", "<|prefix|>"}},
	{slotFIMSuf, []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
		"▁<SUF>", "<|code_suffix|>", "<|suffix|>"}},
	{slotFIMMid, []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
		"▁<MID>", "<|code_middle|>", "<|middle|>"}},
	{slotFIMPad, []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
	{slotFIMRep, []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
	{slotFIMSep, []string{"<|file_sep|>"}},
}

// eogTexts are the end-of-generation texts; every one present becomes CONTROL.
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
	"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
	"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~["}

// fixAttrs applies llama.cpp's text-based attribute overrides. Where
// llama.cpp walks a hash map (so which of several candidates wins is
// unspecified) we take the lowest id.
func (t *Tokenizer) fixAttrs(ids [nSlots]int32) {
	for _, as := range autoSpecial {
		if ids[as.slot] >= 0 {
			continue
		}
		best := int32(-1)
		for _, s := range as.texts {
			if id, ok := t.lookup(s); ok && (best < 0 || id < best) {
				best = id
			}
		}
		if best >= 0 {
			ids[as.slot] = best
			t.attrs[best] |= attrControl
		}
	}
	eog := map[int32]bool{}
	for _, s := range []int{slotFIMPad, slotFIMRep, slotFIMSep, slotEOS, slotEOT, slotEOM} {
		if ids[s] >= 0 {
			eog[ids[s]] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := t.lookup(s); ok {
			eog[id] = true
			t.attrs[id] |= attrControl
		}
	}
	// gpt-oss: these are always rendered, so plain text can hold them.
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.lookup(s); ok {
			t.attrs[id] = attrUserDefined
		}
	}
	inEOG := func(s string) (int32, bool) {
		id, ok := t.lookup(s)
		return id, ok && eog[id]
	}
	_, hasReturn := inEOG("<|return|>")
	_, hasCall := inEOG("<|call|>")
	_, hasCalls := inEOG("<|calls|>")
	_, hasFlush := inEOG("<|flush|>")
	endID, hasEnd := inEOG("<|end|>")
	hasCall = hasCall || hasCalls
	if hasEnd && ((hasReturn && hasCall) || (hasCall && hasFlush)) {
		t.attrs[endID] = attrUserDefined
	}
	_, hasToolResp := inEOG("<|tool_response>")
	if sID, hasS := inEOG("</s>"); hasToolResp && hasS {
		t.attrs[sID] = attrNormal
	}
}

// nameAttrs sets the LSTRIP/RSTRIP attributes llama.cpp hard-codes by model
// name (after the special-token list is built, as there).
func (t *Tokenizer) nameAttrs(modelName string) {
	name := strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, modelName)
	set := func(s string, attr tokenAttr, on bool) {
		if id, ok := t.lookup(s); ok {
			if on {
				t.attrs[id] |= attr
			} else {
				t.attrs[id] &^= attr
			}
		}
	}
	switch {
	case strings.Contains(name, "phi-3"), strings.Contains(name, "phi3"):
		for _, id := range t.special {
			t.attrs[id] |= attrRStrip
		}
		set("</s>", attrRStrip, true)
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			set(s, attrRStrip, false)
		}
	case strings.Contains(name, "modern-bert"):
		set("[MASK]", attrLStrip, true)
	}
}
