package scoring

import (
	"context"
	"testing"
)

// TestChoiceRunning: for each mode, the running figures rebuilt from a
// report's results are the ones its events carried after each task, and
// the last one's Figure is the report's figure under the mode's name.
func TestChoiceRunning(t *testing.T) {
	f := newFake(97, 16, 13, 0)
	f.addBOS, f.ubatch = true, 5
	hsText, _ := hellaswagText(20, 4)
	hs, err := ParseHellaSwag(hsText)
	if err != nil {
		t.Fatal(err)
	}
	wgText, _ := winograndeText(20, 4)
	wg, _, err := ParseWinogrande(wgText)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := mcTasks(20, 4)
	mc, err := ParseMultipleChoice(mcBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, name string
		run          func(o ChoiceOptions) (Report, error)
	}{
		{MethodHellaSwag, "acc_norm ", func(o ChoiceOptions) (Report, error) {
			return RunHellaSwag(context.Background(), f, HellaSwagRequest{Tasks: hs, ChoiceOptions: o})
		}},
		{MethodWinogrande, "accuracy ", func(o ChoiceOptions) (Report, error) {
			return RunWinogrande(context.Background(), f, WinograndeRequest{Tasks: wg, ChoiceOptions: o})
		}},
		{MethodMultipleChoice, "accuracy ", func(o ChoiceOptions) (Report, error) {
			return RunMultipleChoice(context.Background(), f, MultipleChoiceRequest{Tasks: mc, ChoiceOptions: o})
		}},
	} {
		var done []ChoiceProgress
		var last Event
		rep, err := c.run(ChoiceOptions{Count: 15, Ctx: 600, Progress: func(e Event) {
			if e.Kind == EventWindowDone {
				done = append(done, *e.Choice)
			}
			last = e
		}})
		if err != nil {
			t.Fatal(err)
		}
		sum := rep.Choice()
		got, err := ChoiceRunning(c.method, sum.Results, 15)
		if err != nil || len(got) != 15 || len(done) != 15 {
			t.Fatalf("%s: %d running figures, %d events, %v", c.method, len(got), len(done), err)
		}
		for i := range got {
			if got[i] != done[i] {
				t.Errorf("%s after task %d: rebuilt %+v, the event said %+v", c.method, i+1, got[i], done[i])
			}
		}
		fig := last.Choice.Figure(c.method)
		if last.Kind != EventFinished || fig != c.name+sum.Figure() {
			t.Errorf("%s: the last event's figure %q, the report's %q", c.method, fig, sum.Figure())
		}
	}
	if _, err := ChoiceRunning("kl-divergence", nil, 0); err == nil {
		t.Error("a perplexity method has running choice figures")
	}
}
