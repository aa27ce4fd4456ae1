package tokenizer

// This file owns the SentencePiece path (../shared/spec/tokenizers.md §3):
// llama.cpp's score-driven bigram merging over UTF-8 characters with byte
// fallback.

import "strings"

// spaceEscape is U+2581 "▁", SPM's stand-in for a space.
const spaceEscape = "\u2581"

// spmSymbol is one symbol of the fragment being merged: text[start:start+size].
type spmSymbol struct {
	start      int32
	size       int32 // 0 once merged away
	prev, next int32
}

// spmCand is a queued bigram.
type spmCand struct {
	score       float32
	left, right int32
	size        int32 // byte length of left+right when queued
}

// spmState is the per-Encode scratch state.
type spmState struct {
	t    *Tokenizer
	syms []spmSymbol
	heap []spmCand
	buf  strings.Builder
}

// encodeFragment appends the ids of one raw-text fragment; prefix asks for
// the leading space llama.cpp adds after a special token or at the start.
func (s *spmState) encodeFragment(frag string, prefix bool, out []int32) []int32 {
	s.buf.Reset()
	s.buf.Grow(len(frag) + len(frag)/4 + 3)
	if prefix {
		s.buf.WriteString(spaceEscape)
	}
	for {
		i := strings.IndexByte(frag, ' ')
		if i < 0 {
			s.buf.WriteString(frag)
			break
		}
		s.buf.WriteString(frag[:i])
		s.buf.WriteString(spaceEscape)
		frag = frag[i+1:]
	}
	text := s.buf.String()
	if text == "" {
		return out
	}

	if cap(s.syms) < len(text) {
		s.syms = make([]spmSymbol, 0, len(text))
	}
	syms := s.syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		syms = append(syms, spmSymbol{start: int32(off), size: int32(n), prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
		off += n
	}
	syms[len(syms)-1].next = -1

	// A one-byte symbol whose byte occurs in no longer token can never
	// merge, so the runs between such barriers are independent: merging each
	// run with its own small queue performs, run by run, exactly the merges
	// llama.cpp's single queue performs, and keeps the queue in cache.
	lo := 0
	for i := range syms {
		if b := text[syms[i].start]; syms[i].size == 1 && b < 0x80 && s.t.spmBarrier[b] {
			s.mergeRun(text, syms, lo, i)
			lo = i + 1
		}
	}
	s.mergeRun(text, syms, lo, len(syms))
	s.syms = syms

	// Every merged symbol is a vocabulary entry (only such bigrams are
	// queued), so llama.cpp's resegment reduces to: token, or its bytes.
	t := s.t
	for i := int32(0); i >= 0; i = syms[i].next {
		sym := syms[i]
		piece := text[sym.start : sym.start+sym.size]
		if id, ok := t.tokenID[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id := t.spmByte[piece[j]]; id >= 0 {
				out = append(out, id)
			}
		}
	}
	return out
}

// mergeRun runs the bigram queue over the symbols [lo, hi), whose
// neighbours outside the range never merge with them.
func (s *spmState) mergeRun(text string, syms []spmSymbol, lo, hi int) {
	s.heap = s.heap[:0]
	for i := lo + 1; i < hi; i++ {
		s.push(text, syms, int32(i-1), int32(i))
	}
	for len(s.heap) > 0 {
		c := s.pop()
		l, r := &syms[c.left], &syms[c.right]
		if l.size == 0 || r.size == 0 || l.size+r.size != c.size {
			continue
		}
		l.size += r.size
		r.size = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = c.left
		}
		if l.prev >= 0 {
			s.push(text, syms, l.prev, c.left)
		}
		if l.next >= 0 {
			s.push(text, syms, c.left, l.next)
		}
	}
}

// push queues (left, right) if their concatenation is a vocabulary entry.
func (s *spmState) push(text string, syms []spmSymbol, left, right int32) {
	l, r := syms[left], syms[right]
	id, ok := s.t.tokenID[text[l.start:l.start+l.size+r.size]]
	if !ok {
		return
	}
	s.heap = append(s.heap, spmCand{score: s.t.scores[id], left: left, right: right, size: l.size + r.size})
	h := s.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !spmBefore(h[i], h[p]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

// spmBefore orders candidates: higher score first, then smaller left index.
func spmBefore(a, b spmCand) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

func (s *spmState) pop() spmCand {
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
		if r := l + 1; r < len(h) && spmBefore(h[r], h[l]) {
			m = r
		}
		if !spmBefore(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	return top
}
