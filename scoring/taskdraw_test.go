package scoring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// drawProgram prints, for each "total count" pair of its arguments, the
// file indices llama-perplexity's hellaswag_score selects (a fresh
// mt19937(1) per pair, a uniform_int_distribution<size_t> over the tasks
// left, the drawn one erased), then raw draws over wide ranges.
const drawProgram = `#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
int main(int argc, char **argv) {
    for (int a = 1; a + 1 < argc; a += 2) {
        size_t total = strtoull(argv[a], 0, 10), count = strtoull(argv[a+1], 0, 10);
        std::vector<size_t> left;
        for (size_t i = 0; i < total; i++) left.push_back(i);
        std::mt19937 rng(1);
        for (size_t i = 0; i < count && i < total; i++) {
            std::uniform_int_distribution<size_t> dist(0, left.size() - 1);
            size_t j = dist(rng);
            printf("%zu ", left[j]);
            left.erase(left.begin() + j);
        }
        printf("\n");
    }
    std::mt19937 rng(7);
    const size_t ranges[] = {1, 2, 3, 1000, 2147483649ull, 3000000000ull, 4294967295ull};
    for (size_t n : ranges) {
        std::uniform_int_distribution<size_t> dist(0, n - 1);
        for (int i = 0; i < 200; i++) printf("%zu ", dist(rng));
    }
    printf("\n");
    return 0;
}
`

// cppDraws compiles drawProgram with g++ and runs it on args.
func cppDraws(t *testing.T, args []string) []string {
	t.Helper()
	return cppRun(t, drawProgram, args)
}

// cppRun compiles program with g++ and runs it on args: its output lines.
func cppRun(t *testing.T, program string, args []string) []string {
	t.Helper()
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ on PATH: the task draws cannot be checked against libstdc++")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "draw.cpp"), filepath.Join(dir, "draw")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-O1", "-std=c++17", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("draw program: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func joinInts(v []int) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteString(strconv.Itoa(x))
		b.WriteByte(' ')
	}
	return b.String()
}

// TestHellaSwagOrderMatchesLibstdcxx: the selected tasks and their order
// equal libstdc++'s, for llama.cpp's default 400 of the full 10042-task
// file, every task of small files, and a few in between; and raw draws
// over ranges up to 2^32−1 (where Lemire's rejection redraws) agree.
func TestHellaSwagOrderMatchesLibstdcxx(t *testing.T) {
	pairs := [][2]int{{10042, 400}, {10042, 10042}, {1, 1}, {2, 2}, {6, 6}, {100, 7}, {7, 100}, {1000, 999}, {70000, 50}}
	var args []string
	for _, p := range pairs {
		args = append(args, strconv.Itoa(p[0]), strconv.Itoa(p[1]))
	}
	lines := cppDraws(t, args)
	if len(lines) != len(pairs)+1 {
		t.Fatalf("draw program printed %d lines, want %d", len(lines), len(pairs)+1)
	}
	for i, p := range pairs {
		got, err := HellaSwagOrder(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if g := joinInts(got); g != lines[i] {
			t.Errorf("%d of %d tasks: plexbench draws\n%.200s\nlibstdc++ draws\n%.200s", p[1], p[0], g, lines[i])
		}
	}
	g := newMT19937(7)
	var raw []int
	for _, n := range []uint64{1, 2, 3, 1000, 2147483649, 3000000000, 4294967295} {
		for range 200 {
			raw = append(raw, int(g.uniform(uint32(n))))
		}
	}
	if got := joinInts(raw); got != lines[len(pairs)] {
		t.Errorf("raw uniform draws differ from libstdc++'s:\n%.300s\nwant\n%.300s", got, lines[len(pairs)])
	}
}

// TestMT19937: the 10000th output of a default-seeded std::mt19937 is
// 4123659995, as the C++ standard requires ([rand.predef]).
func TestMT19937(t *testing.T) {
	g := newMT19937(5489)
	var v uint32
	for range 10000 {
		v = g.next()
	}
	if v != 4123659995 {
		t.Fatalf("10000th output %d, want 4123659995", v)
	}
}

// choiceDrawProgram prints, for each "total count" pair of its arguments,
// the file indices llama-perplexity's Winogrande and multiple-choice
// modes score: all in order unless 0 < count < total, else count draws of
// j = int(scale*rng()*left.size()) in float with a fresh mt19937(1), the
// last task left moved into the drawn one's place.
const choiceDrawProgram = `#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
int main(int argc, char **argv) {
    for (int a = 1; a + 1 < argc; a += 2) {
        size_t total = strtoull(argv[a], 0, 10), count = strtoull(argv[a+1], 0, 10);
        if (count == 0 || count >= total) {
            for (size_t i = 0; i < total; i++) printf("%zu ", i);
            printf("\n");
            continue;
        }
        std::mt19937 rng(1);
        std::vector<int> left(total);
        for (size_t i = 0; i < total; i++) left[i] = i;
        float scale = 1/(1.f + (float)rng.max());
        for (size_t i = 0; i < count; i++) {
            int j = int(scale*rng()*left.size());
            printf("%d ", left[j]);
            left[j] = left.back();
            left.pop_back();
        }
        printf("\n");
    }
    return 0;
}
`

// TestChoiceOrderMatchesLibstdcxx: Winogrande's and multiple choice's
// selected tasks and their order equal the C++ library's, for the
// Winogrande file's 1267 tasks, MMLU-sized files and small ones.
func TestChoiceOrderMatchesLibstdcxx(t *testing.T) {
	pairs := [][2]int{{1267, 100}, {1267, 1266}, {1267, 0}, {1267, 5000}, {14042, 1000}, {3, 2}, {2, 1}, {100, 99}, {70000, 60000}}
	var args []string
	for _, p := range pairs {
		args = append(args, strconv.Itoa(p[0]), strconv.Itoa(p[1]))
	}
	lines := cppRun(t, choiceDrawProgram, args)
	if len(lines) != len(pairs) {
		t.Fatalf("draw program printed %d lines, want %d", len(lines), len(pairs))
	}
	for i, p := range pairs {
		got, err := ChoiceOrder(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if g := joinInts(got); g != lines[i] {
			t.Errorf("%d of %d tasks: plexbench draws\n%.200s\nthe C++ library draws\n%.200s", p[1], p[0], g, lines[i])
		}
	}
}

// finalProgram prints, for each "correct n" pair, llama-perplexity's
// final Winogrande line's figures and its multiple-choice result's, with
// their expressions and types, then its multiple-choice random chance of
// correct tasks of n answers in all (from two tasks).
const finalProgram = `#include <cmath>
#include <cstdio>
#include <cstdlib>
int main(int argc, char **argv) {
    for (int a = 1; a + 1 < argc; a += 2) {
        int n_correct = atoi(argv[a]), n_done = atoi(argv[a+1]);
        {
            const float p = 1.f*n_correct/n_done;
            const float sigma = 100.f*sqrt(p*(1-p)/(n_done-1));
            printf("%.4lf +/- %.4lf ", 100*p, sigma);
        }
        {
            float p = 1.f*n_correct/n_done;
            float sigma = sqrt(p*(1-p)/(n_done-1));
            printf("%.4f +/- %.4f ", 100.f*p, 100.f*sigma);
        }
        if (n_correct < 2) {
            printf("-\n");
            continue;
        }
        {
            int n_done = n_correct, n_tot_answers = atoi(argv[a+1]);
            float p = 1.f*n_done/n_tot_answers;
            float sigma = sqrt(p*(1-p)/(n_done-1));
            printf("%.4f +/- %.4f\n", 100.f*p, 100.f*sigma);
        }
    }
    return 0;
}
`

// TestChoiceFinalMatchesCxx: the final figures (and the multiple-choice
// random chance) print as llama-perplexity prints them, digit for digit,
// over every count of right tasks of a few task counts.
func TestChoiceFinalMatchesCxx(t *testing.T) {
	var args []string
	var cases [][2]int
	for _, n := range []int{2, 3, 7, 100, 101, 400, 1267, 14042} {
		for c := 0; c <= n; c += 1 + n/300 {
			cases = append(cases, [2]int{c, n})
			args = append(args, strconv.Itoa(c), strconv.Itoa(n))
		}
	}
	lines := cppRun(t, finalProgram, args)
	if len(lines) != len(cases) {
		t.Fatalf("program printed %d lines, want %d", len(lines), len(cases))
	}
	for i, c := range cases {
		wa, wu := WinograndeFinal(c[0], c[1])
		ma, mu := MultipleChoiceFinal(c[0], c[1])
		chance := "-"
		if c[0] >= 2 {
			ca, cu := MultipleChoiceChance(c[0], c[1])
			chance = fmt.Sprintf("%.4f +/- %.4f", ca, cu)
		}
		if got := fmt.Sprintf("%.4f +/- %.4f %.4f +/- %.4f %s", wa, wu, ma, mu, chance); got != lines[i] {
			t.Errorf("%d of %d: plexbench %q, C++ %q", c[0], c[1], got, lines[i])
		}
	}
}
