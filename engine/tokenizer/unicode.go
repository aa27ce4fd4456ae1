package tokenizer

// This file owns the Unicode layer the BPE pre-tokenizers stand on:
// llama.cpp's lenient UTF-8 decoder and encoder, per-code-point category
// flags (from Go's unicode tables plus the Unicode 15.1 additions,
// ../shared/spec/tokenizers.md §4.5), and the GPT-2 byte↔unicode map
// (§4.4).

import "unicode"

// Code-point flags. Every code point inside a segment has at least one bit
// set (fUndef for unassigned ones), which the scanners rely on: llama.cpp
// tests "flags non-zero" to mean "inside the segment".
const (
	fUndef   uint16 = 1 << iota // unassigned, or beyond U+10FFFF
	fNumber                     // \p{N}
	fLetter                     // \p{L}
	fMark                       // \p{M}
	fPunct                      // \p{P}
	fSymbol                     // \p{S}
	fSep                        // \p{Z}
	fControl                    // \p{C}
	fSpace                      // llama.cpp's fixed whitespace set, not a category
)

// maxCodePoint bounds what the tables cover; larger values (only produced by
// llama.cpp's lenient decoder from F5–F7 lead bytes) are "undefined".
const maxCodePoint = 0x10FFFF

// isSpace is llama.cpp's whitespace set: 25 code points. U+001C–U+001F are
// not in it (unlike Python's isspace).
func isSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0D, r == 0x20, r == 0x85, r == 0xA0, r == 0x1680:
		return true
	case r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029, r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}

// categoryFlags computes the flags of r from the unicode tables.
func categoryFlags(r rune) uint16 {
	var f uint16
	switch {
	case r < 0 || r > maxCodePoint:
		f = fUndef
	// llama.cpp's tables are Unicode 15.1, Go's 15.0 (see TestUnicodeVersion);
	// 15.1 added only these.
	case r >= 0x2EBF0 && r <= 0x2EE5D: // CJK Unified Ideographs Extension I
		f = fLetter
	case (r >= 0x2FFC && r <= 0x2FFF) || r == 0x31EF: // ideographic description, CJK stroke HXG
		f = fSymbol
	case unicode.IsLetter(r):
		f = fLetter
	case unicode.IsNumber(r):
		f = fNumber
	case unicode.IsMark(r):
		f = fMark
	case unicode.IsPunct(r):
		f = fPunct
	case unicode.IsSymbol(r):
		f = fSymbol
	case unicode.Is(unicode.Z, r):
		f = fSep
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs): // not unicode.C: it holds Cn too
		f = fControl
	default:
		f = fUndef
	}
	if isSpace(r) {
		f |= fSpace
	}
	return f
}

// latin1Flags caches categoryFlags for U+0000–U+00FF, the bulk of most
// text. It is filled once at package initialisation and never written again.
var latin1Flags = func() (t [256]uint16) {
	for r := range t {
		t[r] = categoryFlags(rune(r))
	}
	return t
}()

// cpFlags returns the flags of one code point.
func cpFlags(r rune) uint16 {
	if uint32(r) < 256 {
		return latin1Flags[r]
	}
	return categoryFlags(r)
}

// decodeLenient splits s into code points the way llama.cpp's
// unicode_cpts_from_utf8 does: lead-byte driven, continuation bytes checked
// but overlong forms, surrogates and values up to 0x1FFFFF accepted; every
// byte that starts no valid sequence becomes U+FFFD. offs receives each code
// point's byte offset plus a final len(s). exact reports whether encoding the
// code points back (encodeLenient) gives s byte for byte.
func decodeLenient(s string, cps []rune, offs []int32) ([]rune, []int32, bool) {
	exact := true
	n := len(s)
	for i := 0; i < n; {
		offs = append(offs, int32(i))
		b0 := s[i]
		if b0 < 0x80 {
			cps = append(cps, rune(b0))
			i++
			continue
		}
		var r rune
		size := 0
		switch {
		case b0&0x40 == 0: // stray continuation byte
		case b0&0x20 == 0:
			if i+1 < n && s[i+1]&0xC0 == 0x80 {
				r = rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F)
				size = 2
				if r < 0x80 {
					exact = false // overlong
				}
			}
		case b0&0x10 == 0:
			if i+2 < n && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
				r = rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
				size = 3
				if r < 0x800 {
					exact = false
				}
			}
		case b0&0x08 == 0:
			if i+3 < n && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && s[i+3]&0xC0 == 0x80 {
				r = rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
				size = 4
				if r < 0x10000 || r > maxCodePoint {
					exact = false
				}
			}
		}
		if size == 0 {
			cps = append(cps, 0xFFFD)
			exact = false
			i++
			continue
		}
		cps = append(cps, r)
		i += size
	}
	offs = append(offs, int32(n))
	return cps, offs, exact
}

// encodeLenient appends the UTF-8 form of r as llama.cpp writes it
// (surrogates encoded like any other 3-byte value). Values beyond U+10FFFF,
// on which llama.cpp throws, become U+FFFD.
func encodeLenient(dst []byte, r rune) []byte {
	switch {
	case r < 0:
		return append(dst, 0xEF, 0xBF, 0xBD)
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	case r <= maxCodePoint:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12&0x3F), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	}
	return append(dst, 0xEF, 0xBF, 0xBD)
}

// utf8Len is llama.cpp's unicode_len_utf8: a character's byte length decided
// from the lead byte's high nibble alone (stray continuation bytes count 1).
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// byteMap is the GPT-2 byte→unicode table and its inverse.
type byteMap struct {
	toRune [256]rune
	toByte [0x144]int16 // indexed by code point; -1 where no byte maps there
}

func newByteMap() *byteMap {
	m := &byteMap{}
	for i := range m.toByte {
		m.toByte[i] = -1
	}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m.toRune[b] = rune(b)
		} else {
			m.toRune[b] = next
			next++
		}
		m.toByte[m.toRune[b]] = int16(b)
	}
	return m
}

// encode appends the byte-level form of raw: each byte replaced by the UTF-8
// encoding of its mapped code point.
func (m *byteMap) encode(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		b := raw[i]
		r := m.toRune[b]
		if r < 0x80 {
			dst = append(dst, byte(r))
		} else {
			dst = append(dst, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
		}
	}
	return dst
}
