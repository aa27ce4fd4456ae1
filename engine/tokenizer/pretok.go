package tokenizer

// This file owns BPE pre-tokenization (../shared/spec/tokenizers.md §4):
// the per-pre-type lists of splitting steps, the hand-written scanners that
// stand in for the GPT-2 / Llama-3 / Qwen2 / Qwen3.5 regexes, and small
// exact matchers for the few std::regex patterns the supported pre-types
// use (Go's regexp has no look-ahead and different leftmost semantics, so
// none of this uses it).

import "unicode"

// splitStep re-splits one segment [lo, hi) of the code points: it calls emit
// with increasing end positions, and the segment's remaining tail is closed
// by the caller. emit ignores empty spans.
type splitStep func(cps []rune, fl []uint16, lo, hi int, emit func(end int))

// preType describes one tokenizer.ggml.pre value.
type preType struct {
	steps        []splitStep
	addBOS       bool // llama.cpp's default before the GGUF key overrides it
	ignoreMerges bool
}

// lookupPre maps every supported tokenizer.ggml.pre value to its steps.
// Values llama.cpp knows but that are not listed here are rejected by name.
func lookupPre(name string) (preType, bool) {
	gpt2 := []splitStep{scanGPT2}
	switch name {
	case "default":
		return preType{steps: []splitStep{
			runOf(isDefaultPunct), // [\p{P}\$\+<=>\^~\|]+
			scanGPT2,
			runOf(isCollapsedNumber), // \p{N}+
			threeDigits,              // [0-9][0-9][0-9]
		}}, true
	case "falcon":
		return preType{steps: []splitStep{
			runOf(isFalconPunct), // [\p{P}\$\+<=>\^~\|`]+
			scanGPT2,
			threeDigits,
		}}, true
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
		"a.x-4.0", "mellum", "modern-bert", "exaone4",
		"mpt", "olmo", "jais", "trillion", "granite-docling":
		return preType{steps: gpt2}, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
		"lfm2", "jina-v5-nano":
		return preType{steps: []splitStep{scanLlama3}, addBOS: true, ignoreMerges: true}, true
	case "dbrx", "smaug-bpe":
		return preType{steps: []splitStep{scanLlama3}}, true
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez",
		"stablelm2", "hunyuan", "solar-open", "grok-2":
		return preType{steps: []splitStep{scanQwen2}}, true
	case "qwen35":
		return preType{steps: []splitStep{scanQwen35}}, true
	case "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2":
		return preType{steps: []splitStep{eachOf(isCollapsedNumber), scanGPT2}}, true
	case "deepseek-coder":
		return preType{steps: []splitStep{
			eachOf(isCRLF),                  // [\r\n]
			spaceThenRun(isCollapsedLetter), // \s?\p{L}+
			spaceThenRun(isCollapsedPunct),  // \s?\p{P}+
			runOf(isDeepseekCJK),            // [一-龥ࠀ-一가-퟿]+
			eachOf(isCollapsedNumber),       // \p{N}
		}}, true
	}
	return preType{}, false
}

// ---------------------------------------------------------------------------
// Hand-written scanners (../shared/spec/tokenizers.md §4.3).

// scanGPT2 implements 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
func scanGPT2(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	flag := func(i int) uint16 {
		if i < hi {
			return fl[i]
		}
		return 0
	}
	for pos := lo; pos < hi; {
		c := cps[pos]
		if c == '\'' && pos+1 < hi {
			switch cps[pos+1] {
			case 's', 't', 'm', 'd':
				pos += 2
				emit(pos)
				continue
			}
			if pos+2 < hi {
				a, b := cps[pos+1], cps[pos+2]
				if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
					pos += 3
					emit(pos)
					continue
				}
			}
		}
		f2 := fl[pos]
		lead := 0
		if c == ' ' {
			f2 = flag(pos + 1)
			lead = 1
		}
		switch {
		case f2&fLetter != 0:
			pos += lead
			for pos < hi && fl[pos]&fLetter != 0 {
				pos++
			}
			emit(pos)
			continue
		case f2&fNumber != 0:
			pos += lead
			for pos < hi && fl[pos]&fNumber != 0 {
				pos++
			}
			emit(pos)
			continue
		case f2 != 0 && f2&(fSpace|fLetter|fNumber) == 0:
			pos += lead
			for pos < hi && fl[pos]&(fSpace|fLetter|fNumber) == 0 {
				pos++
			}
			emit(pos)
			continue
		}
		pos = scanSpaces(cps, fl, pos, hi, false)
		emit(pos)
	}
}

// scanSpaces handles the whitespace alternatives shared by all scanners at
// pos and returns the end of the token: \s*[\r\n]+ (only when crlf), then
// \s+(?!\S), then \s+, else a single code point.
func scanSpaces(cps []rune, fl []uint16, pos, hi int, crlf bool) int {
	w := 0
	lastNL := -1
	for pos+w < hi && fl[pos+w]&fSpace != 0 {
		if c := cps[pos+w]; crlf && (c == '\r' || c == '\n') {
			lastNL = pos + w + 1
		}
		w++
	}
	switch {
	case lastNL >= 0:
		return lastNL
	case w > 1 && pos+w < hi:
		return pos + w - 1
	case w > 0:
		return pos + w
	}
	return pos + 1
}

// llamaScanner is the Llama-3 family scanner; the variants differ in digit
// grouping and in whether combining marks count as letters.
type llamaScanner struct {
	digitGroup int    // 3 for Llama-3 (\p{N}{1,3}), 1 for Qwen (\p{N})
	letter     uint16 // flags forming letter runs
}

func scanLlama3(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	llamaScanner{digitGroup: 3, letter: fLetter}.split(cps, fl, lo, hi, emit)
}

func scanQwen2(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	llamaScanner{digitGroup: 1, letter: fLetter}.split(cps, fl, lo, hi, emit)
}

func scanQwen35(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	llamaScanner{digitGroup: 1, letter: fLetter | fMark}.split(cps, fl, lo, hi, emit)
}

// split implements (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ and its Qwen variants.
func (s llamaScanner) split(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	notPunct := fSpace | fLetter | fNumber | s.letter
	for pos := lo; pos < hi; {
		c, f := cps[pos], fl[pos]
		if c == '\'' && pos+1 < hi {
			a := lowerCase(cps[pos+1])
			if a == 's' || a == 't' || a == 'm' || a == 'd' {
				pos += 2
				emit(pos)
				continue
			}
			if pos+2 < hi {
				b := lowerCase(cps[pos+2])
				if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
					pos += 3
					emit(pos)
					continue
				}
			}
		}
		if c != '\r' && c != '\n' && f&fNumber == 0 {
			if f&s.letter != 0 || (pos+1 < hi && fl[pos+1]&s.letter != 0) {
				pos++
				for pos < hi && fl[pos]&s.letter != 0 {
					pos++
				}
				emit(pos)
				continue
			}
		}
		if f&fNumber != 0 {
			start := pos
			for pos < hi && fl[pos]&fNumber != 0 {
				pos++
				if pos-start >= s.digitGroup {
					emit(pos)
					start = pos
				}
			}
			emit(pos)
			continue
		}
		f2 := f
		lead := 0
		if c == ' ' {
			f2 = 0
			if pos+1 < hi {
				f2 = fl[pos+1]
			}
			lead = 1
		}
		// f != 0 always holds inside the segment, so a trailing lone space
		// lands here and comes out as a one-space token.
		if f2&notPunct == 0 && f != 0 {
			pos += lead
			for pos < hi && fl[pos]&notPunct == 0 {
				pos++
			}
			for pos < hi && (cps[pos] == '\r' || cps[pos] == '\n') {
				pos++
			}
			emit(pos)
			continue
		}
		pos = scanSpaces(cps, fl, pos, hi, true)
		emit(pos)
	}
}

// lowerCase is the simple lowercase mapping used by the contraction rule.
func lowerCase(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + ('a' - 'A')
	}
	if r < 0x80 {
		return r
	}
	return unicode.ToLower(r)
}

// ---------------------------------------------------------------------------
// Exact stand-ins for the std::regex patterns. llama.cpp runs patterns that
// use \p{..} on a "collapsed" string (each non-ASCII code point replaced by a
// byte naming its category, non-ASCII whitespace by 0x0B), so the classes
// below test ASCII code points by value and others by category.

// classFn tests one code point with its flags.
type classFn func(c rune, f uint16) bool

// runOf splits out maximal runs of class members (pattern "X+").
func runOf(in classFn) splitStep {
	return func(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
		for i := lo; i < hi; {
			if !in(cps[i], fl[i]) {
				i++
				continue
			}
			emit(i)
			for i < hi && in(cps[i], fl[i]) {
				i++
			}
			emit(i)
		}
	}
}

// eachOf isolates every class member (pattern "X").
func eachOf(in classFn) splitStep {
	return func(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
		for i := lo; i < hi; i++ {
			if in(cps[i], fl[i]) {
				emit(i)
				emit(i + 1)
			}
		}
	}
}

// spaceThenRun splits out \s?X+ matches, leftmost first.
func spaceThenRun(in classFn) splitStep {
	return func(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
		for i := lo; i < hi; {
			start := i
			switch {
			case isCollapsedSpace(cps[i], fl[i]) && i+1 < hi && in(cps[i+1], fl[i+1]):
				i++
			case in(cps[i], fl[i]):
			default:
				i++
				continue
			}
			emit(start)
			for i < hi && in(cps[i], fl[i]) {
				i++
			}
			emit(i)
		}
	}
}

// threeDigits splits out [0-9][0-9][0-9] matches, leftmost first.
func threeDigits(cps []rune, fl []uint16, lo, hi int, emit func(int)) {
	isDigit := func(c rune) bool { return c >= '0' && c <= '9' }
	for i := lo; i+2 < hi; {
		if isDigit(cps[i]) && isDigit(cps[i+1]) && isDigit(cps[i+2]) {
			emit(i)
			emit(i + 3)
			i += 3
			continue
		}
		i++
	}
}

// collapsed reports whether a non-ASCII code point collapses to the byte of
// category flag cat (whitespace takes precedence, as in llama.cpp).
func collapsed(f, cat uint16) bool { return f&fSpace == 0 && f&cat != 0 }

func isCollapsedNumber(c rune, f uint16) bool {
	if c < 0x80 {
		return c >= '0' && c <= '9'
	}
	return collapsed(f, fNumber)
}

func isCollapsedLetter(c rune, f uint16) bool {
	if c < 0x80 {
		return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
	}
	return collapsed(f, fLetter)
}

// asciiPunct is llama.cpp's ASCII stand-in for \p{P}: !-#%-*,-/:-;?-@[-]_{}
func asciiPunct(c rune) bool {
	switch {
	case c >= '!' && c <= '#', c >= '%' && c <= '*', c >= ',' && c <= '/',
		c == ':' || c == ';', c == '?' || c == '@', c >= '[' && c <= ']',
		c == '_', c == '{', c == '}':
		return true
	}
	return false
}

func isCollapsedPunct(c rune, f uint16) bool {
	if c < 0x80 {
		return asciiPunct(c)
	}
	return collapsed(f, fPunct)
}

// isCollapsedSpace is std::regex's \s on the collapsed string.
func isCollapsedSpace(c rune, f uint16) bool {
	if c < 0x80 {
		return c == ' ' || (c >= '\t' && c <= '\r')
	}
	return f&fSpace != 0
}

func isDefaultPunct(c rune, f uint16) bool {
	switch c {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return isCollapsedPunct(c, f)
}

func isFalconPunct(c rune, f uint16) bool {
	return c == '`' || isDefaultPunct(c, f)
}

func isCRLF(c rune, _ uint16) bool { return c == '\r' || c == '\n' }

// isDeepseekCJK is [一-龥ࠀ-一가-퟿] as std::wregex sees it: non-ASCII
// whitespace was replaced by 0x0B first, so U+3000 and friends never match.
func isDeepseekCJK(c rune, f uint16) bool {
	in := (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x0800 && c <= 0x4E00) || (c >= 0xAC00 && c <= 0xD7FF)
	return in && f&fSpace == 0
}
