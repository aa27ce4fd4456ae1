package scoring

// hellaswag.go owns llama-perplexity's --hellaswag: its task file (six
// lines a task: context, gold ending, four endings), the tasks it draws
// (taskdraw.go), each ending's mean log-probability, acc_norm with its
// Wilson 95% interval, and the report's hellaswag object. The run itself
// is hellaswagrun.go.

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// DefaultHellaSwagTasks is llama-perplexity's --hellaswag-tasks default.
const DefaultHellaSwagTasks = 400

// MethodHellaSwag is the method of a HellaSwag run's report.
const MethodHellaSwag = "hellaswag"

// ErrBadTaskFile marks a task file that does not follow its format.
var ErrBadTaskFile = errors.New("bad task file")

// HellaSwagTask is one task of a HellaSwag file.
type HellaSwagTask struct {
	Context string
	Gold    int // the right ending, 0..3
	Endings [4]string
}

// HellaSwagReport is the report's hellaswag object. Percentages are
// percent, as llama-perplexity prints them.
type HellaSwagReport struct {
	TasksInFile    int     `json:"tasks_in_file"`
	TaskFileSHA256 string  `json:"task_file_sha256,omitempty"`
	Tasks          int     `json:"tasks"`     // tasks scored
	Accuracy       float64 `json:"accuracy"`  // acc_norm, percent
	CI95Low        float64 `json:"ci95_low"`  // Wilson score interval, percent
	CI95High       float64 `json:"ci95_high"` // (llama-perplexity's last line)
	// Results are the tasks in the order scored; each ending's score is its
	// mean log-probability per token.
	Results []ChoiceResult `json:"results"`
}

// fmtBadTask is an error for a task that cannot be scored as llama.cpp
// would score it.
func fmtBadTask(idx int, format string, args ...any) error {
	return fmt.Errorf("%w: task %d: %s", ErrBadTaskFile, idx, fmt.Sprintf(format, args...))
}

// ParseHellaSwag reads a HellaSwag file's text (as scored: one trailing
// newline dropped). Lines are split as std::getline splits them; a
// carriage return stays part of its line. The gold line is read as
// std::stoi reads it (leading space, a sign, digits; what follows is
// ignored) and must be 0..3. Errors name the task (from 0) and its line.
func ParseHellaSwag(text string) ([]HellaSwagTask, error) {
	lines := strings.Split(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // getline yields no line after a final newline
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: no tasks", ErrBadTaskFile)
	}
	if len(lines)%6 != 0 {
		n := len(lines) / 6
		return nil, fmt.Errorf("%w: %d lines, not a multiple of 6: task %d (lines %d..) is incomplete",
			ErrBadTaskFile, len(lines), n, 6*n+1)
	}
	tasks := make([]HellaSwagTask, len(lines)/6)
	for i := range tasks {
		l := lines[6*i : 6*i+6]
		gold, ok := stoi(l[1])
		if !ok || gold < 0 || gold > 3 {
			return nil, fmt.Errorf("%w: task %d (line %d): gold ending %q is not 0..3", ErrBadTaskFile, i, 6*i+2, l[1])
		}
		tasks[i] = HellaSwagTask{Context: l[0], Gold: gold, Endings: [4]string{l[2], l[3], l[4], l[5]}}
	}
	return tasks, nil
}

// stoi reads s as std::stoi does; ok is false where stoi would throw
// (no digits, or outside int32).
func stoi(s string) (int, bool) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	v, digits := 0, 0
	for ; digits < len(s) && s[digits] >= '0' && s[digits] <= '9'; digits++ {
		v = 10*v + int(s[digits]-'0')
		if v > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if digits == 0 || v > math.MaxInt32 || v < math.MinInt32 {
		return 0, false
	}
	return v, true
}

// HellaSwagRunning is llama-perplexity's running acc_norm after n tasks,
// correct of them right, and its Wilson score 95% interval, in percent,
// computed in its order of operations.
func HellaSwagRunning(correct, n int) (acc, lo, hi float64) {
	const za = 1.95996398454
	f := float64(correct) / float64(n)
	z := za * za / float64(n)
	cnf := z * math.Sqrt(float64(n)*(4.0*f*(1-f)+z)) / (za + za)
	return f * 100.0, (f + z*0.5 - cnf) / (1.0 + z) * 100.0, (f + z*0.5 + cnf) / (1.0 + z) * 100.0
}

// hellaswagReport is the hellaswag object of the results so far.
func hellaswagReport(inFile int, results []ChoiceResult) *HellaSwagReport {
	h := &HellaSwagReport{TasksInFile: inFile, Tasks: len(results), Results: results}
	if len(results) > 0 {
		h.Accuracy, h.CI95Low, h.CI95High = HellaSwagRunning(correctCount(results), len(results))
	}
	return h
}
