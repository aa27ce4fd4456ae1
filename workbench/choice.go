package workbench

// choice.go owns a multiple-choice job (Job.Choice: HellaSwag, Winogrande
// or MultipleChoice): the task file read, hashed and checked before the
// model loads, the options such a run cannot take, and the run through
// the scoring mode's runner. Such a run keeps no journal; a complete one
// is a record, grouped by task file and task count.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"plexbench/scoring"
)

// Choice is a multiple-choice job: HellaSwag, Winogrande or
// MultipleChoice, when one is set, scores that task file as
// llama-perplexity --hellaswag, --winogrande or --multiple-choice does
// instead of a text, the Tasks count of its tasks (0: llama.cpp's
// default: 400 for HellaSwag, else all of them), at Parallel. `score` and
// the TUI take it from the same flags.
type Choice struct {
	HellaSwag           string
	HellaSwagTasks      int
	Winogrande          string
	WinograndeTasks     int
	MultipleChoice      string
	MultipleChoiceTasks int
	// Parallel is llama-perplexity's -np for those modes (0: the least it
	// accepts for the file): the context their tasks must fit in holds
	// max(4, Parallel)·ctx positions (scoring.ChoiceContext), and the KV
	// cache is sized to it unless the profile sets kv_len.
	Parallel int
}

// Mode is the mode c asks for; ok is false when c names no task file
// (the first, when it names several, which a run refuses).
func (c Choice) Mode() (m ChoiceMode, ok bool) {
	if cs := c.choices(); len(cs) > 0 {
		return cs[0], true
	}
	return ChoiceMode{}, false
}

// ChoiceMode is the multiple-choice mode a job asks for.
type ChoiceMode struct {
	Flag   string // "--hellaswag", "--winogrande" or "--multiple-choice"
	Method string // scoring.MethodHellaSwag, MethodWinogrande or MethodMultipleChoice
	Path   string
	Count  int
}

// choices is the multiple-choice modes c sets (none for a perplexity run).
func (c Choice) choices() []ChoiceMode {
	var out []ChoiceMode
	for _, m := range []ChoiceMode{{"--hellaswag", scoring.MethodHellaSwag, c.HellaSwag, c.HellaSwagTasks},
		{"--winogrande", scoring.MethodWinogrande, c.Winogrande, c.WinograndeTasks},
		{"--multiple-choice", scoring.MethodMultipleChoice, c.MultipleChoice, c.MultipleChoiceTasks}} {
		if m.Path != "" {
			out = append(out, m)
		}
	}
	return out
}

// choiceConflicts says which of j's options the multiple-choice run c
// cannot take.
func choiceConflicts(j Job, c ChoiceMode) error {
	bad := ""
	switch {
	case len(j.choices()) > 1:
		return fmt.Errorf("%s and %s: score one task file at a time", j.choices()[0].Flag, j.choices()[1].Flag)
	case j.Compare != "" || j.BaseOut != "" || j.CoarsenTopK > 0:
		bad = "KLD base"
	case j.Shard.N > 1:
		bad = "shard"
	case j.TokenIDs:
		bad = "token ids"
	case j.Profile.Text != "" || j.Profile.Tokens != "" || len(j.Profile.Corpora) > 0:
		bad = "perplexity text (--perplexity, --perplexity-tokens)"
	case j.Profile.StopAtPrecision > 0 || j.Profile.StopWhenDecided != "":
		bad = "stop rule (--stop-at-precision, --stop-when-decided: they watch a perplexity or KLD run)"
	case c.Count < 0:
		return fmt.Errorf("%s-tasks %d: want a positive count", c.Flag, c.Count)
	}
	if bad != "" {
		return fmt.Errorf("%s scores a task file; it takes no %s", c.Flag, bad)
	}
	return nil
}

// choiceRun is a task file, read and parsed, ready to score on an engine.
type choiceRun func(ctx context.Context, eng scoring.Engine, o scoring.ChoiceOptions) (scoring.Report, error)

// choiceFile is a task file read, hashed and parsed.
type choiceFile struct {
	run     choiceRun
	sha256  string
	answers int // the largest answer count of its tasks
}

// loadChoice reads, hashes and parses c's task file.
func loadChoice(c ChoiceMode) (choiceFile, error) {
	data, err := readInput(c.Path, "parsing")
	if err == nil && len(data) == 0 {
		err = fmt.Errorf("%s: the file is empty", c.Path)
	}
	if err != nil {
		return choiceFile{}, fmt.Errorf("%s: %w", c.Flag, err)
	}
	sum := sha256.Sum256(data)
	f, err := parseChoice(c.Flag, data)
	if err != nil {
		return choiceFile{}, fmt.Errorf("%s %s: %w", c.Flag, c.Path, err)
	}
	f.sha256 = hex.EncodeToString(sum[:])
	return f, nil
}

// parseChoice parses a task file of the mode flag names.
func parseChoice(flag string, data []byte) (choiceFile, error) {
	switch flag {
	case "--hellaswag":
		tasks, err := scoring.ParseHellaSwag(PerplexityText(data))
		return choiceFile{answers: 4, run: func(ctx context.Context, eng scoring.Engine, o scoring.ChoiceOptions) (scoring.Report, error) {
			return scoring.RunHellaSwag(ctx, eng, scoring.HellaSwagRequest{Tasks: tasks, ChoiceOptions: o})
		}}, err
	case "--winogrande":
		tasks, unread, err := scoring.ParseWinogrande(PerplexityText(data))
		return choiceFile{answers: 2, run: func(ctx context.Context, eng scoring.Engine, o scoring.ChoiceOptions) (scoring.Report, error) {
			rep, err := scoring.RunWinogrande(ctx, eng, scoring.WinograndeRequest{Tasks: tasks, ChoiceOptions: o})
			if unread > 0 && rep.Object != "" {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("line %d, the file's last, is not read: llama-perplexity's reader "+
					"stops before a last line without a newline after it (end the file with an empty line to score it)", unread))
			}
			return rep, err
		}}, err
	}
	tasks, err := scoring.ParseMultipleChoice(data)
	return choiceFile{answers: scoring.MultipleChoiceAnswers(tasks), run: func(ctx context.Context, eng scoring.Engine, o scoring.ChoiceOptions) (scoring.Report, error) {
		return scoring.RunMultipleChoice(ctx, eng, scoring.MultipleChoiceRequest{Tasks: tasks, ChoiceOptions: o})
	}}, err
}

// CheckChoice refuses, in the words Run and RunCorpora would before the
// model loads, what j's multiple-choice run cannot do: another task file,
// a base, a shard, a text, several corpora, a task file that does not
// read. nil for a job without one. The TUI checks its flags with it
// before it draws.
func CheckChoice(j Job) error {
	if len(j.choices()) == 0 {
		return nil
	}
	if len(j.Profile.Corpora) > 1 {
		return checkCorpora(j)
	}
	_, err := checkChoice(&j)
	return err
}

// checkChoice checks j's multiple-choice run (if any) before the model
// loads, keeps the task file it read in j.taskFile, and says how many KV
// positions the run needs: the context llama-perplexity allocates for it
// (0 for a run of a text).
func checkChoice(j *Job) (int, error) {
	cs := j.choices()
	if len(cs) == 0 {
		return 0, nil
	}
	if err := choiceConflicts(*j, cs[0]); err != nil {
		return 0, err
	}
	f, err := loadChoice(cs[0])
	if err != nil {
		return 0, err
	}
	j.taskFile = &f
	ctx := j.Profile.Ctx
	if ctx == 0 {
		ctx = scoring.DefaultCtx
	}
	return scoring.ChoiceContext(ctx, scoring.ChoiceParallel(j.Parallel, f.answers)), nil
}

// runChoice scores j's task file on the loaded model.
func (b *Bench) runChoice(ctx context.Context, j Job) (Outcome, error) {
	c := j.choices()[0]
	if err := choiceConflicts(j, c); err != nil {
		return Outcome{}, err
	}
	f := j.taskFile
	if f == nil {
		loaded, err := loadChoice(c)
		if err != nil {
			return Outcome{}, err
		}
		f = &loaded
	}
	rep, err := f.run(ctx, b.eng, scoring.ChoiceOptions{Count: c.Count, Ctx: j.Profile.Ctx, Parallel: j.Parallel, Path: c.Path,
		FileSHA256: f.sha256, Progress: j.Progress})
	if err != nil && !errors.Is(err, scoring.ErrStopped) && rep.Object == "" {
		return Outcome{}, err
	}
	return Outcome{Report: rep}, err
}
