package results

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestTableFitDropsColumnsWholeInOrder(t *testing.T) {
	tb := Table{Header: []string{"#", "model", "PPL ±", "KLD p99", "prefill tok/s"},
		Rows: [][]string{
			{"1", "Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf", "9.123 ± 0.071", "0.1523", "388"},
			{"2", "short.gguf", "9.456 ± 0.072", "0.2", "1024"},
		},
		Drop: []string{"prefill tok/s", "KLD p99", "#"}, Squeeze: "model", MinSqueeze: 16}
	full, dropped := tb.Fit(0)
	if len(dropped) != 0 || !strings.Contains(full[1], "Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf  9.123 ± 0.071  0.1523   388") {
		t.Fatalf("no width: %q, dropped %v", full, dropped)
	}
	for _, w := range []int{80, 70, 60, 50, 40} {
		lines, dropped := tb.Fit(w)
		for _, l := range lines {
			if ansi.StringWidth(l) > w {
				t.Errorf("width %d: line %q is %d wide", w, l, ansi.StringWidth(l))
			}
		}
		// Dropped columns go in the order given, and wholly: no cell of
		// theirs is left, every kept cell is whole.
		for i, d := range dropped {
			if d != tb.Drop[i] {
				t.Errorf("width %d: dropped %v, want a prefix of %v", w, dropped, tb.Drop)
			}
		}
		for _, cell := range []string{"9.123 ± 0.071", "9.456 ± 0.072", "short.gguf"} {
			if !strings.Contains(strings.Join(lines, "\n"), cell) {
				t.Errorf("width %d: cell %q cut or lost:\n%s", w, cell, strings.Join(lines, "\n"))
			}
		}
		if !strings.Contains(lines[1], "Qwen3-") || !strings.Contains(lines[1], "Q4_K_XL.gguf") && !strings.Contains(lines[1], "…") {
			t.Errorf("width %d: the long name lost an end: %q", w, lines[1])
		}
	}
	// Too narrow even for the columns that stay: the name shrinks to its
	// minimum and the lines are as narrow as they can be.
	lines, _ := tb.Fit(10)
	if got := strings.Fields(lines[1])[0]; ansi.StringWidth(got) != 16 || !strings.Contains(got, "…") {
		t.Errorf("at 10 columns the name is %q", got)
	}
}

func TestMiddleEllipsis(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"stories260K-f32.gguf", 30, "stories260K-f32.gguf"},
		{"stories260K-f32.gguf", 20, "stories260K-f32.gguf"},
		{"stories260K-f32.gguf", 11, "stori….gguf"},
		{"Qwen3-8B-Q4_K_M.gguf", 16, "Qwen3-8B…_M.gguf"},
		{"abc", 1, "a"},
	} {
		if got := MiddleEllipsis(c.s, c.n); got != c.want || ansi.StringWidth(got) > c.n {
			t.Errorf("MiddleEllipsis(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestWrapWords(t *testing.T) {
	s := "group 1: chunks, ctx 512, tinystories-100k.txt (token ids be66d6f8c1fe…), base f32.kld (plexbench:18ebf350d68c51ca, top-32)"
	lines := WrapWords(s, 40, "  ")
	if strings.Join(strings.Fields(strings.Join(lines, " ")), " ") != s {
		t.Errorf("wrapping lost words: %q", lines)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) > 40 && len(strings.Fields(l)) > 1 {
			t.Errorf("line %q is %d wide", l, ansi.StringWidth(l))
		}
		if i > 0 && !strings.HasPrefix(l, "  ") {
			t.Errorf("continuation %q lacks its indent", l)
		}
	}
	if got := WrapWords("short", 0, ""); len(got) != 1 || got[0] != "short" {
		t.Errorf("no width: %q", got)
	}
}
