package scoring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// hellaswagText writes n tasks in llama.cpp's six-line format from seeded
// random words.
func hellaswagText(n int, seed uint64) (string, []HellaSwagTask) {
	r := rand.New(rand.NewPCG(seed, 3))
	words := strings.Fields("the cat sat on a mat and then it ran far away to see big red dog who was happy")
	phrase := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	var b strings.Builder
	tasks := make([]HellaSwagTask, n)
	for i := range tasks {
		t := HellaSwagTask{Context: phrase(3 + r.IntN(6)), Gold: r.IntN(4)}
		fmt.Fprintf(&b, "%s\n%d\n", t.Context, t.Gold)
		for e := range t.Endings {
			t.Endings[e] = phrase(1 + r.IntN(5))
			fmt.Fprintf(&b, "%s\n", t.Endings[e])
		}
		tasks[i] = t
	}
	return b.String(), tasks
}

func TestParseHellaSwag(t *testing.T) {
	text, want := hellaswagText(5, 1)
	for _, in := range []string{text, strings.TrimSuffix(text, "\n")} {
		got, err := ParseHellaSwag(in)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
	got, err := ParseHellaSwag("ctx\r\n 2\r\na\nb\nc\nd")
	if err != nil || got[0].Gold != 2 || got[0].Context != "ctx\r" {
		t.Fatalf("stoi-style gold and kept CR: %+v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"":                         "no tasks",
		"a\n1\nb\nc\nd":            "5 lines, not a multiple of 6: task 0 (lines 1..) is incomplete",
		text + "x\n":               "31 lines, not a multiple of 6: task 5 (lines 31..) is incomplete",
		"a\n4\nb\nc\nd\ne":         `task 0 (line 2): gold ending "4" is not 0..3`,
		"a\nx\nb\nc\nd\ne":         `task 0 (line 2): gold ending "x" is not 0..3`,
		text + "a\n-1\nb\nc\nd\ne": `task 5 (line 32): gold ending "-1" is not 0..3`,
	} {
		_, err := ParseHellaSwag(in)
		if !errors.Is(err, ErrBadTaskFile) || !strings.HasSuffix(err.Error(), msg) {
			t.Errorf("%.20q: error %v, want one ending %q", in, err, msg)
		}
	}
}

// FuzzParseHellaSwag: the parser never panics; what it accepts has six
// lines a task and gold endings 0..3, and reads back the same from the
// tasks written out again.
func FuzzParseHellaSwag(f *testing.F) {
	text, _ := hellaswagText(3, 2)
	for _, s := range []string{text, "", "\n", "a\n0\nb\nc\nd\ne\n", "a\n+3x\n\n\n\n\n", "a\n99999999999\nb\nc\nd\ne"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tasks, err := ParseHellaSwag(in)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, tk := range tasks {
			if tk.Gold < 0 || tk.Gold > 3 {
				t.Fatalf("gold %d accepted", tk.Gold)
			}
			fmt.Fprintf(&b, "%s\n%d\n%s\n%s\n%s\n%s\n", tk.Context, tk.Gold, tk.Endings[0], tk.Endings[1], tk.Endings[2], tk.Endings[3])
		}
		again, err := ParseHellaSwag(b.String())
		if err != nil || fmt.Sprint(again) != fmt.Sprint(tasks) {
			t.Fatalf("written back: %v, %v; want %v", again, err, tasks)
		}
	})
}
