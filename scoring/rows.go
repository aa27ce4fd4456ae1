package scoring

// rows.go owns the row staging between prefill and the LM head: prefill
// emits a pass's hidden rows at a time, the head takes HeadRows at once.
// Whole blocks of the window's scored rows go straight from the engine's
// buffer to the head; the rest are copied and sent once HeadRows are
// staged or the window ends.

import "fmt"

// rowStage stages one window's scored rows, first..last (window
// positions), for the head.
type rowStage struct {
	hidden      int       // floats per row
	buf         []float32 // HeadRows × hidden
	n           int       // rows staged in buf
	pos         int       // window position of buf's first row
	next        int       // window position of the next row expected
	first, last int
	// head takes n rows (n·hidden floats) starting at window position pos.
	head func(rows []float32, n, pos int) error
}

func newRowStage(hidden int, head func([]float32, int, int) error) rowStage {
	return rowStage{hidden: hidden, buf: make([]float32, HeadRows*hidden), head: head}
}

// reset starts a window scoring positions first..last.
func (s *rowStage) reset(first, last int) { s.first, s.last, s.next, s.n = first, last, first, 0 }

// emit takes one pass's rows from prefill: n rows from window position
// pos. Rows outside first..last are not scored.
func (s *rowStage) emit(pos int, hidden []float32, n int) error {
	h := s.hidden
	if len(hidden) < n*h {
		return fmt.Errorf("engine emitted %d rows in %d floats (hidden size %d)", n, len(hidden), h)
	}
	for i := 0; i < n; {
		p := pos + i
		if p < s.first || p > s.last {
			i++
			continue
		}
		if p != s.next {
			return fmt.Errorf("engine emitted row %d, expected row %d", p, s.next)
		}
		if s.n == 0 {
			if m := min(n-i, s.last-p+1); m >= HeadRows {
				if err := s.head(hidden[i*h:(i+HeadRows)*h], HeadRows, p); err != nil {
					return err
				}
				s.next += HeadRows
				i += HeadRows
				continue
			}
			s.pos = p
		}
		copy(s.buf[s.n*h:], hidden[i*h:(i+1)*h])
		s.n++
		s.next++
		i++
		if s.n == HeadRows {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush sends the staged rows to the head.
func (s *rowStage) flush() error {
	if s.n == 0 {
		return nil
	}
	n := s.n
	s.n = 0
	return s.head(s.buf, n, s.pos)
}

// scored is how many of the window's rows have been taken.
func (s *rowStage) scored() int { return s.next - s.first }
