package tokenizer

// This file owns byte-level BPE (../shared/spec/tokenizers.md §4–§5): the
// merge table keyed by packed symbol-id pairs, the per-word merge loop, and
// the per-call state (word cache, scratch buffers) that keeps Encode free
// of shared mutation.

import "strings"

// Symbol ids ("sids") name every string the merge loop can hold: a token's
// sid is its token id; strings that occur in merges but are not tokens get
// sids from len(tokens) upwards. A merge is then a lookup of two int32s.

// mergeRule is the outcome of merging a (left, right) symbol pair.
type mergeRule struct {
	rank   int32 // merge index: lower merges first
	result int32 // sid of left+right
}

// bpeModel is the immutable merge data of a byte-level BPE vocabulary.
type bpeModel struct {
	merges  map[uint64]mergeRule // key: packPair(left sid, right sid)
	extra   []string             // text of sids >= nTokens (byte-level form)
	byteSid [256]int32           // sid of the byte-level character of each raw byte, or -1
	bytes   *byteMap
}

func packPair(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// newBPEModel builds the merge table. sidOf must hold every token (text → id);
// it is extended with the extra strings the merges introduce.
func newBPEModel(merges []string, nTokens int, sidOf map[string]int32) *bpeModel {
	m := &bpeModel{merges: make(map[uint64]mergeRule, len(merges)), bytes: newByteMap()}
	intern := func(s string) int32 {
		if id, ok := sidOf[s]; ok {
			return id
		}
		id := int32(nTokens + len(m.extra))
		m.extra = append(m.extra, s)
		sidOf[s] = id
		return id
	}
	var buf []byte
	for rank, line := range merges {
		// Split at the first space at index >= 1, as llama.cpp does; a line
		// without one yields an empty pair that can never match.
		if len(line) < 2 {
			continue
		}
		sp := strings.IndexByte(line[1:], ' ')
		if sp < 0 {
			continue
		}
		left, right := line[:sp+1], line[sp+2:]
		if right == "" {
			continue
		}
		l, r := intern(left), intern(right)
		key := packPair(l, r)
		if _, dup := m.merges[key]; dup {
			continue // the first (lowest) rank wins, as with emplace
		}
		buf = append(append(buf[:0], left...), right...)
		res, ok := sidOf[string(buf)]
		if !ok {
			res = intern(string(buf))
		}
		m.merges[key] = mergeRule{rank: int32(rank), result: res}
	}
	for b := 0; b < 256; b++ {
		enc := m.bytes.encode(nil, string([]byte{byte(b)}))
		if id, ok := sidOf[string(enc)]; ok {
			m.byteSid[b] = id
		} else {
			m.byteSid[b] = -1
		}
	}
	return m
}

// bpeSymbol is one symbol of the word being merged.
type bpeSymbol struct {
	sid        int32 // -1: a byte whose character is no known string
	prev, next int32
	size       int32 // raw bytes covered; 0 once merged away
}

// bpeCand is a queued merge candidate: key orders by (rank, left index).
type bpeCand struct {
	key        uint64
	lsid, rsid int32
}

// bpeState is the per-Encode scratch state.
type bpeState struct {
	t     *Tokenizer
	cache map[string][]int32 // raw word bytes → ids
	syms  []bpeSymbol
	heap  []bpeCand
	enc   []byte
	cps   []rune
	offs  []int32
	fl    []uint16
	ends  []int32
	ends2 []int32
	word  []byte
}

// maxCachedWords bounds the per-call word cache.
const maxCachedWords = 1 << 17

// encodeFragment appends the ids of one raw-text fragment.
func (s *bpeState) encodeFragment(text string, out []int32) []int32 {
	if cap(s.cps) < len(text) {
		s.cps = make([]rune, 0, len(text))
		s.offs = make([]int32, 0, len(text)+1)
		s.fl = make([]uint16, len(text))
	}
	var exact bool
	s.cps, s.offs, exact = decodeLenient(text, s.cps[:0], s.offs[:0])
	cps := s.cps
	fl := s.fl[:len(cps)]
	for i, c := range cps {
		fl[i] = cpFlags(c)
	}

	s.ends, s.ends2 = preSplit(s.t.preType.steps, cps, fl, s.ends, s.ends2)
	ends := s.ends

	lo := 0
	for _, e := range ends {
		hi := int(e)
		var word string
		if exact {
			word = text[s.offs[lo]:s.offs[hi]]
		} else {
			s.word = s.word[:0]
			for _, c := range cps[lo:hi] {
				s.word = encodeLenient(s.word, c)
			}
			word = string(s.word)
		}
		out = s.encodeWord(word, out)
		lo = hi
	}
	return out
}

// preSplit runs the pre-tokenizer steps over cps, each step re-splitting
// every current segment, and returns the word end positions (in ends, with
// spare the other buffer for reuse).
func preSplit(steps []splitStep, cps []rune, fl []uint16, ends, spare []int32) ([]int32, []int32) {
	ends = append(ends[:0], int32(len(cps)))
	if len(cps) == 0 {
		return ends[:0], spare
	}
	for _, step := range steps {
		next := spare[:0]
		lo, prev := 0, 0
		emit := func(end int) {
			if end > prev {
				next = append(next, int32(end))
				prev = end
			}
		}
		for _, e := range ends {
			hi := int(e)
			prev = lo
			step(cps, fl, lo, hi, emit)
			emit(hi)
			lo = hi
		}
		spare = ends
		ends = next
	}
	return ends, spare
}

// encodeWord appends the ids of one pre-tokenized word given as raw bytes.
func (s *bpeState) encodeWord(word string, out []int32) []int32 {
	if ids, ok := s.cache[word]; ok {
		return append(out, ids...)
	}
	start := len(out)
	out = s.mergeWord(word, out)
	if len(s.cache) >= maxCachedWords {
		clear(s.cache)
	}
	s.cache[word] = append([]int32(nil), out[start:]...)
	return out
}

// mergeWord runs the merge loop of §5 on one word.
func (s *bpeState) mergeWord(word string, out []int32) []int32 {
	t := s.t
	m := t.bpe
	if len(word) == 0 {
		return out
	}
	if t.ignoreMerges {
		s.enc = m.bytes.encode(s.enc[:0], word)
		if id, ok := t.tokenID[string(s.enc)]; ok && int(id) < len(t.tokens) {
			return append(out, id)
		}
	}
	n := len(word)
	syms := s.syms[:0]
	for i := 0; i < n; i++ {
		syms = append(syms, bpeSymbol{sid: m.byteSid[word[i]], prev: int32(i - 1), next: int32(i + 1), size: 1})
	}
	syms[n-1].next = -1
	s.heap = s.heap[:0]
	for i := 1; i < n; i++ {
		s.push(syms, int32(i-1), int32(i))
	}
	for len(s.heap) > 0 {
		c := s.pop()
		left := int32(c.key & 0xFFFFFFFF)
		l := &syms[left]
		if l.size == 0 || l.next < 0 {
			continue
		}
		right := l.next
		r := &syms[right]
		// Stale unless both sides still hold the strings recorded at push
		// time (llama.cpp compares the concatenated text; same thing).
		if r.size == 0 || l.sid != c.lsid || r.sid != c.rsid {
			continue
		}
		l.sid = m.merges[packPair(c.lsid, c.rsid)].result
		l.size += r.size
		r.size = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = left
		}
		if l.prev >= 0 {
			s.push(syms, l.prev, left)
		}
		if l.next >= 0 {
			s.push(syms, left, l.next)
		}
	}
	s.syms = syms
	pos := 0
	for i := 0; i >= 0 && i < n; i = int(syms[i].next) {
		sym := syms[i]
		if sym.size == 0 {
			continue
		}
		if sym.sid >= 0 && int(sym.sid) < len(t.tokens) {
			out = append(out, sym.sid)
		} else {
			out = s.byteFallback(word[pos:pos+int(sym.size)], sym.sid, out)
		}
		pos += int(sym.size)
	}
	return out
}

// byteFallback emits, for every byte of the symbol's byte-level text, the
// token whose text is that single byte, dropping bytes with no such token.
func (s *bpeState) byteFallback(raw string, sid int32, out []int32) []int32 {
	t := s.t
	var text []byte
	if sid >= int32(len(t.tokens)) {
		text = []byte(t.bpe.extra[int(sid)-len(t.tokens)])
	} else {
		text = t.bpe.bytes.encode(nil, raw)
	}
	for _, b := range text {
		if id, ok := t.tokenID[string([]byte{b})]; ok {
			out = append(out, id)
		}
	}
	return out
}

// push queues the pair (left, right) if it is a merge.
func (s *bpeState) push(syms []bpeSymbol, left, right int32) {
	ls, rs := syms[left].sid, syms[right].sid
	if ls < 0 || rs < 0 {
		return
	}
	rule, ok := s.t.bpe.merges[packPair(ls, rs)]
	if !ok {
		return
	}
	s.heap = append(s.heap, bpeCand{key: uint64(uint32(rule.rank))<<32 | uint64(uint32(left)), lsid: ls, rsid: rs})
	h := s.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].key <= h[i].key {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// pop removes the candidate with the lowest (rank, left index).
func (s *bpeState) pop() bpeCand {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].key < h[l].key {
			m = r
		}
		if h[i].key <= h[m].key {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	return top
}
