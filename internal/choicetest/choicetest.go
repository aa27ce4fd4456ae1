// Package choicetest writes small multiple-choice task files for tests in
// any package: HellaSwag text, Winogrande CSV and llama.cpp's binary
// multiple-choice format, made from TinyStories sentences of the shared
// data (a test is skipped without it outside CI, as shareddata says), so
// that a real model's choices are not all ties.
package choicetest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/scoring"
)

// Sentences are the sentences of 10 to 100 bytes in the first 100 kB of
// the TinyStories validation text, in order.
func Sentences(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(shareddata.Path(t, "tinystories", "tinystories_val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var sentences []string
	for _, para := range strings.Split(string(data[:min(len(data), 100000)]), "\n") {
		for _, s := range regexp.MustCompile(`[^.!?]+[.!?]`).FindAllString(para, -1) {
			if s = strings.TrimSpace(s); len(s) > 10 && len(s) < 100 {
				sentences = append(sentences, s)
			}
		}
	}
	return sentences
}

// HellaSwagFile writes n HellaSwag tasks (HellaSwagTasks) into a file in
// t's temporary folder.
func HellaSwagFile(t testing.TB, n int) string {
	t.Helper()
	return WriteHellaSwag(t, HellaSwagTasks(t, n), -1)
}

// HellaSwagTasks are n HellaSwag tasks: a sentence as context, the
// sentence after it as the gold ending at a seeded random index, three
// sentences from elsewhere as the others.
func HellaSwagTasks(t testing.TB, n int) []scoring.HellaSwagTask {
	t.Helper()
	sentences := Sentences(t)
	r := rand.New(rand.NewPCG(25, 1))
	tasks := make([]scoring.HellaSwagTask, n)
	for i := range tasks {
		k, gold := r.IntN(len(sentences)-1), r.IntN(4)
		tasks[i] = scoring.HellaSwagTask{Context: sentences[k], Gold: gold}
		for e := range 4 {
			tasks[i].Endings[e] = sentences[r.IntN(len(sentences))]
			if e == gold {
				tasks[i].Endings[e] = sentences[k+1]
			}
		}
	}
	return tasks
}

// WriteHellaSwag writes tasks as a HellaSwag file; a gold of 0..3 labels
// that ending right in every task instead of the task's own.
func WriteHellaSwag(t testing.TB, tasks []scoring.HellaSwagTask, gold int) string {
	t.Helper()
	var b strings.Builder
	for _, tk := range tasks {
		g := tk.Gold
		if gold >= 0 {
			g = gold
		}
		fmt.Fprintf(&b, "%s\n%d\n%s\n", tk.Context, g, strings.Join(tk.Endings[:], "\n"))
	}
	return WriteTemp(t, "hellaswag.txt", []byte(b.String()))
}

// WinograndeFile writes n Winogrande tasks: a word of a sentence blanked
// out, the word and a word from elsewhere as the choices in a seeded
// order; the blank is sometimes the sentence's last word, so that both of
// llama.cpp's scorings occur. The file ends with an empty line so that
// its last task is read.
func WinograndeFile(t testing.TB, n int) string {
	t.Helper()
	sentences := Sentences(t)
	r := rand.New(rand.NewPCG(25, 2))
	var b strings.Builder
	for i := 0; i < n; {
		sentence := sentences[r.IntN(len(sentences))]
		words := strings.Fields(sentence)
		other := strings.Fields(sentences[r.IntN(len(sentences))])
		k := 1 + r.IntN(len(words)-1)
		if r.IntN(3) == 0 {
			k = len(words) - 1
		}
		word, alt := strings.Trim(words[k], ".!?,\""), strings.Trim(other[r.IntN(len(other))], ".!?,\"")
		if word == "" || alt == "" || word == alt || strings.ContainsAny(sentence+alt, `_"`) || strings.Contains(word+alt, ",") {
			continue
		}
		words[k] = strings.Replace(words[k], word, "_", 1)
		choices, answer := [2]string{word, alt}, 1
		if r.IntN(2) == 0 {
			choices, answer = [2]string{alt, word}, 2
		}
		fmt.Fprintf(&b, "%d,\"%s\",%s,%s,%d\n", i, strings.Join(words, " "), choices[0], choices[1], answer)
		i++
	}
	b.WriteString("\n")
	return WriteTemp(t, "winogrande.csv", []byte(b.String()))
}

// MultipleChoiceFile writes n tasks in llama.cpp's binary multiple-choice
// format (MultipleChoiceTasks).
func MultipleChoiceFile(t testing.TB, n int) string {
	t.Helper()
	return WriteMultipleChoice(t, MultipleChoiceTasks(t, n), -1)
}

// MultipleChoiceTasks are n tasks: a sentence as the question, the
// sentence after it as the correct answer among 2..5 at a seeded index.
func MultipleChoiceTasks(t testing.TB, n int) []scoring.MultipleChoiceTask {
	t.Helper()
	sentences := Sentences(t)
	r := rand.New(rand.NewPCG(25, 3))
	tasks := make([]scoring.MultipleChoiceTask, n)
	for i := range tasks {
		q, k := r.IntN(len(sentences)-1), 2+r.IntN(4)
		tk := scoring.MultipleChoiceTask{Question: sentences[q], Answers: make([]string, k), Gold: r.IntN(k)}
		for a := range k {
			if a == tk.Gold {
				tk.Answers[a] = sentences[q+1]
			} else {
				tk.Answers[a] = sentences[r.IntN(len(sentences))]
			}
		}
		tasks[i] = tk
	}
	return tasks
}

// WriteMultipleChoice writes tasks in llama.cpp's binary multiple-choice
// format, each with an empty mc2. A label of 0 or more marks that answer
// correct in every task instead of the task's own (none in a task with
// fewer answers); the file's offsets are the same either way.
func WriteMultipleChoice(t testing.TB, tasks []scoring.MultipleChoiceTask, label int) string {
	t.Helper()
	var body bytes.Buffer
	le := func(w *bytes.Buffer, v any) { binary.Write(w, binary.LittleEndian, v) }
	str := func(s string) { le(&body, uint32(len(s))); body.WriteString(s) }
	offsets := make([]uint32, len(tasks))
	for i, tk := range tasks {
		offsets[i] = uint32(4 + 4*len(tasks) + body.Len())
		str(tk.Question)
		le(&body, uint32(len(tk.Answers)))
		for _, a := range tk.Answers {
			str(a)
		}
		labels, right := make([]int32, len(tk.Answers)), tk.Gold
		if label >= 0 {
			right = label
		}
		if right < len(labels) {
			labels[right] = 1
		}
		le(&body, labels)
		le(&body, uint32(0)) // an empty mc2
	}
	var out bytes.Buffer
	le(&out, uint32(len(tasks)))
	le(&out, offsets)
	out.Write(body.Bytes())
	return WriteTemp(t, "mc.bin", out.Bytes())
}

// WriteTemp writes data as name in a new temporary folder of t's.
func WriteTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
