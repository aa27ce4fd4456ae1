// Package tokenizer turns text into the token ids llama.cpp produces, from
// a GGUF file's tokenizer.ggml.* metadata alone: SentencePiece ("llama")
// and byte-level BPE ("gpt2") with the pre-tokenizers named by
// tokenizer.ggml.pre (../shared/spec/tokenizers.md). A Tokenizer is
// immutable and safe for concurrent use; each Encode call keeps its own
// scratch state.
package tokenizer

// This file owns the Tokenizer type, Encode (special-token partition and
// dispatch), Decode and the accessors.

import (
	"strconv"
	"strings"
)

// Token attributes, as llama.cpp's llama_token_attr bits.
type tokenAttr uint16

const (
	attrUnknown tokenAttr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrNormalized
	attrLStrip
	attrRStrip
)

// Kind names.
const (
	KindSPM = "spm"
	KindBPE = "bpe"
)

// Tokenizer is one vocabulary with its tokenization rules.
type Tokenizer struct {
	kind string // KindSPM or KindBPE
	pre  string // tokenizer.ggml.pre, "default" when absent

	tokens  []string
	scores  []float32 // SPM merge scores, one per token
	attrs   []tokenAttr
	tokenID map[string]int32 // token text → id; for BPE also merge-only strings (ids >= len(tokens))
	special []int32          // CONTROL/USER_DEFINED/UNKNOWN ids, longest text first

	bos, eos, unk  int32 // -1 when absent
	addBOS, addEOS bool
	addSpacePrefix bool // SPM: prefix raw fragments that follow the start or a special token with a space

	// SPM
	spmByte    [256]int32 // byte-fallback token per byte, -1 if none
	spmBarrier [128]bool  // ASCII bytes that occur in no token longer than one byte

	// BPE
	preType      preType
	ignoreMerges bool
	bpe          *bpeModel

	hash string // Hash
}

// VocabSize is the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence id, or -1 if the vocabulary has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence id, or -1 if the vocabulary has none.
func (t *Tokenizer) EOS() int32 { return t.eos }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// Kind is "spm" or "bpe".
func (t *Tokenizer) Kind() string { return t.kind }

// Pre is tokenizer.ggml.pre, or "default" when the key is absent.
func (t *Tokenizer) Pre() string { return t.pre }

// TokenText is the vocabulary text of id ("" when out of range). Empty
// vocabulary entries read "[EMPTY_<id>]", as in llama.cpp.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// lookup returns the token whose text is s.
func (t *Tokenizer) lookup(s string) (int32, bool) {
	id, ok := t.tokenID[s]
	if !ok || int(id) >= len(t.tokens) {
		return -1, false
	}
	return id, true
}

// fragment is a piece of the input after the special-token partition: raw
// text[lo:hi] when tok < 0, else the token tok.
type fragment struct {
	tok    int32
	lo, hi int
}

// Encode tokenizes text as llama_tokenize does
// (../shared/spec/tokenizers.md §2). addSpecial adds BOS/EOS when the
// vocabulary asks for them; parseSpecial lets CONTROL and UNKNOWN token
// texts in the input become those tokens. USER_DEFINED tokens are always
// matched. The perplexity path uses (true, false). Text must be shorter
// than 2 GiB (positions are int32).
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	frags := t.partition(text, parseSpecial)
	out := make([]int32, 0, len(text)/2+2) // generous: SPM on English runs ~0.6 ids per byte
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	switch t.kind {
	case KindSPM:
		st := &spmState{t: t}
		prevSpecial := true // the first raw fragment gets the space prefix too
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				prevSpecial = true
				continue
			}
			out = st.encodeFragment(text[f.lo:f.hi], t.addSpacePrefix && prevSpecial, out)
			prevSpecial = false
		}
	case KindBPE:
		st := &bpeState{t: t, cache: make(map[string][]int32)}
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				continue
			}
			out = st.encodeFragment(text[f.lo:f.hi], out)
		}
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

// isCSpace is C's isspace in the "C" locale, used by LSTRIP/RSTRIP.
func isCSpace(b byte) bool { return b == ' ' || (b >= '\t' && b <= '\r') }

// partition splits text around special-token occurrences: longest token
// text first, each occurrence left to right, as tokenizer_st_partition.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{tok: -1, lo: 0, hi: len(text)}}
	var next []fragment
	for _, id := range t.special {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		next = next[:0]
		found := false
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			lo, hi := f.lo, f.hi
			for lo < hi {
				m := strings.Index(text[lo:hi], tok)
				if m < 0 {
					break
				}
				found = true
				m += lo
				leftEnd := m
				if a&attrLStrip != 0 {
					for leftEnd > lo && isCSpace(text[leftEnd-1]) {
						leftEnd--
					}
				}
				if leftEnd > lo {
					next = append(next, fragment{tok: -1, lo: lo, hi: leftEnd})
				}
				next = append(next, fragment{tok: id, lo: m, hi: m + len(tok)})
				lo = m + len(tok)
				if a&attrRStrip != 0 {
					for lo < hi && isCSpace(text[lo]) {
						lo++
					}
				}
			}
			if lo < hi {
				next = append(next, fragment{tok: -1, lo: lo, hi: hi})
			}
		}
		if found {
			frags, next = next, frags
		}
	}
	return frags
}

// Decode turns ids back into text. It is the exact inverse of Encode(text,
// addSpecial, false) on valid UTF-8 text, for byte-level BPE and for SPM
// (which cannot tell a typed "▁" from a space): CONTROL and UNKNOWN tokens (BOS, EOS)
// render as nothing, USER_DEFINED tokens as their text, byte tokens <0xXX> as
// the byte, and in SPM "▁" becomes a space. SPM leading space: Encode prefixes
// every raw fragment that starts the text or follows a special token with a
// space (add_space_prefix), so Decode drops one leading space from the first
// piece at those same places. Unlike llama_detokenize, no other whitespace is
// stripped and no clean-up of spaces before punctuation is done.
func (t *Tokenizer) Decode(ids []int32) string {
	return string(t.decode(ids, nil))
}

// PieceBytes is, for each id, the number of bytes it adds to Decode(ids):
// 0 for CONTROL and UNKNOWN tokens, one per byte token, the UTF-8 length of
// a piece with SPM's "▁" as a space and BPE's byte-level characters as
// their bytes, less the leading space Decode drops after the start or a
// special token. Their sum is len(Decode(ids)); on a text that Encode and
// Decode round-trip, a run of ids covers exactly that many bytes of it.
func (t *Tokenizer) PieceBytes(ids []int32) []int32 {
	n := make([]int32, len(ids))
	t.decode(ids, n)
	return n
}

// decode is Decode, writing each id's byte count to n when n is not nil.
func (t *Tokenizer) decode(ids []int32, n []int32) []byte {
	var b []byte
	spm := t.kind == KindSPM
	strip := spm && t.addSpacePrefix
	for i, id := range ids {
		start := len(b)
		b = t.appendToken(b, id)
		switch a := t.attr(id); {
		case id < 0 || int(id) >= len(t.tokens):
		case a&(attrControl|attrUnknown|attrUserDefined) != 0:
			strip = spm && t.addSpacePrefix
		default:
			if strip && len(b) > start && b[start] == ' ' {
				b = append(b[:start], b[start+1:]...)
			}
			strip = false
		}
		if n != nil {
			n[i] = int32(len(b) - start)
		}
	}
	return b
}

// Piece is id's text as Decode renders it mid-text: the bytes it adds
// after a normal token (no SPM leading space dropped), "" for CONTROL,
// UNKNOWN and out-of-range ids. It may be part of a UTF-8 sequence (a byte
// token).
func (t *Tokenizer) Piece(id int32) string { return string(t.appendToken(nil, id)) }

// appendToken appends id's mid-text rendering (Piece).
func (t *Tokenizer) appendToken(b []byte, id int32) []byte {
	switch a := t.attr(id); {
	case id < 0 || int(id) >= len(t.tokens), a&(attrControl|attrUnknown) != 0:
		return b
	case a&attrUserDefined != 0:
		return append(b, t.tokens[id]...)
	default:
		return t.appendPiece(b, id, a)
	}
}

// attr is id's attributes, 0 when id is out of range.
func (t *Tokenizer) attr(id int32) tokenAttr {
	if id < 0 || int(id) >= len(t.tokens) {
		return 0
	}
	return t.attrs[id]
}

// appendPiece appends the text of a NORMAL or BYTE token; other kinds
// (UNUSED, UNDEFINED) render as nothing, as llama_token_to_piece does.
func (t *Tokenizer) appendPiece(b []byte, id int32, a tokenAttr) []byte {
	text := t.tokens[id]
	switch {
	case a&attrNormal != 0:
		if t.kind == KindSPM {
			return append(b, strings.ReplaceAll(text, spaceEscape, " ")...)
		}
		for _, r := range text {
			if r >= 0 && int(r) < len(t.bpe.bytes.toByte) && t.bpe.bytes.toByte[r] >= 0 {
				b = append(b, byte(t.bpe.bytes.toByte[r]))
			} else {
				b = encodeLenient(b, r) // not a byte-level character: keep it
			}
		}
		return b
	case a&attrByte != 0:
		if v, ok := parseByteToken(text); ok {
			return append(b, v)
		}
	}
	return b
}

// parseByteToken reads "<0xHH>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}
