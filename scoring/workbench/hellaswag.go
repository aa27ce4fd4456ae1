package workbench

// hellaswag.go owns a HellaSwag job (Job.HellaSwag): the task file read
// and checked before the model loads, the options such a run cannot take,
// and the run through scoring.RunHellaSwag. Such a run keeps no journal
// and is not kept as a record yet.

import (
	"context"
	"errors"
	"fmt"

	"plexbench/scoring"
)

// hellaswagConflicts says which of j's options a HellaSwag run cannot take.
func hellaswagConflicts(j Job) error {
	bad := ""
	switch {
	case j.Compare != "" || j.Record != "" || j.CoarsenTopK > 0:
		bad = "KLD base"
	case j.Shard.N > 1:
		bad = "shard"
	case j.TokenIDs:
		bad = "token ids"
	case j.Profile.Text != "" || j.Profile.Tokens != "":
		bad = "perplexity text (--perplexity, --perplexity-tokens)"
	case j.Profile.StopAtPrecision > 0 || j.Profile.StopWhenDecided != "":
		bad = "stop rule (--stop-at-precision, --stop-when-decided: they watch a perplexity or KLD run)"
	case j.HellaSwagTasks < 0:
		return fmt.Errorf("--hellaswag-tasks %d: want a positive count", j.HellaSwagTasks)
	}
	if bad != "" {
		return fmt.Errorf("--hellaswag scores a task file; it takes no %s", bad)
	}
	return nil
}

// hellaswagTasks reads and parses j's task file.
func hellaswagTasks(j Job) ([]scoring.HellaSwagTask, error) {
	text, err := ReadText(j.HellaSwag)
	if err != nil {
		return nil, fmt.Errorf("--hellaswag: %w", err)
	}
	tasks, err := scoring.ParseHellaSwag(text)
	if err != nil {
		return nil, fmt.Errorf("--hellaswag %s: %w", j.HellaSwag, err)
	}
	return tasks, nil
}

// runHellaSwag scores j's task file on the loaded model.
func (b *Bench) runHellaSwag(ctx context.Context, j Job) (Outcome, error) {
	if err := hellaswagConflicts(j); err != nil {
		return Outcome{}, err
	}
	tasks, err := hellaswagTasks(j)
	if err != nil {
		return Outcome{}, err
	}
	req := scoring.HellaSwagRequest{Tasks: tasks, ChoiceOptions: scoring.ChoiceOptions{Count: j.HellaSwagTasks, Ctx: j.Profile.Ctx,
		Path: j.HellaSwag, Progress: j.Progress}}
	rep, err := scoring.RunHellaSwag(ctx, b.eng, req)
	if err == nil || errors.Is(err, scoring.ErrStopped) {
		rep.Warnings = append(rep.Warnings, "not kept as a record: HellaSwag runs are not records yet")
	}
	return Outcome{Report: rep}, err
}
