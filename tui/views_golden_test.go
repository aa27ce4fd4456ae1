package tui

// views_golden_test.go: golden files of the views the other golden tests
// do not reach (the sweep, the run view's help), at the sizes every view
// is checked at; fixed data, no clock.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// sweepTable is a compare table as a sweep of long-named models draws it.
func sweepTable(a, b scoring.Report) results.CompareOutput {
	f := func(x float64) *float64 { return &x }
	bpb := func(r scoring.Report) (*float64, *float64) { return f(r.BitsPerByte), f(r.BitsPerByteUncertainty) }
	ab, abu := bpb(a)
	bb, bbu := bpb(b)
	return results.CompareOutput{Object: "plexbench.compare", Groups: []results.CompareGroup{{
		Title: "chunks, ctx 64, fake.txt (token ids 0123456789ab…), base Qwen3-30B-A3B-Instruct-2507-F16.sweep-base.kld (plexbench:0123456789abcdef, top-32)",
		Rows: []results.CompareRow{
			{Model: "Qwen3-30B-A3B-Instruct-2507-F16.gguf", KV: "f16", EffectiveBPW: 16.01, PPL: a.Perplexity, PPLPM: a.PerplexityUncertainty,
				BitsPerByte: ab, BPBPM: abu, Reference: true, PrefillTokS: 211},
			{Model: "Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf", KV: "f16", EffectiveBPW: 4.87, PPL: b.Perplexity, PPLPM: b.PerplexityUncertainty,
				BitsPerByte: bb, BPBPM: bbu, DeltaPPL: f(b.Perplexity - a.Perplexity), DeltaPPLPM: f(0.0213),
				MeanKLD: f(0.01234), MeanKLDCR1: f(0.00087), KLDP99: f(0.1523), KLDMax: f(2.315), SameTop: f(0.9412), SameTopPM: f(0.0021),
				MeanDeltaP: f(-0.0041), PrefillTokS: 388},
		},
	}}}
}

func TestSweepViewGolden(t *testing.T) {
	a, b := recordings(t)
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		golden(t, "sweep_"+suffix, screen(sweepMidway(t, sz.w, sz.h, a, b)))
	}
}

// sweepMidway is a sweep of three long-named models at w × h: the base
// and the first done, the last at window 9.
func sweepMidway(t *testing.T, w, h int, a, b recording) Model {
	t.Helper()
	p := a.Profile
	p.Name = "quants"
	sj := workbench.SweepJob{Job: workbench.Job{Profile: p}, BaseModel: "../models/Qwen3-30B-A3B-Instruct-2507-F16.gguf",
		Models: []string{"../models/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf", "../models/Qwen3-30B-A3B-Instruct-2507-IQ4_XS.gguf"},
		Base:   "plexbench-results/Qwen3-30B-A3B-Instruct-2507-F16.sweep-base.kld", Root: "plexbench-results"}
	never := SweeperFunc(func(context.Context, workbench.SweepJob) (workbench.SweepOutcome, error) {
		panic("view tests run nothing")
	})
	table := sweepTable(a.Report, b.Report)
	ev := func(kind workbench.SweepEventKind, i int, run *scoring.Event, rep *scoring.Report) sweepEventMsg {
		msg := sweepEventMsg{id: 1, ev: workbench.SweepEvent{Kind: kind, Index: i, Models: 3, Model: append([]string{sj.BaseModel}, sj.Models...)[i], Run: run, Report: rep}}
		if kind == workbench.SweepModelDone {
			msg.ev.Record = fmt.Sprintf("plexbench-results/model%d.json", i)
			msg.table = &table
		}
		return msg
	}
	m := newTestModel(t, w, h, Config{Sweep: &sj, Sweeper: never})
	for i, r := range []recording{a, b} {
		m = step(m, ev(workbench.SweepModelStarted, i, nil, nil))
		for _, e := range r.Events {
			m = step(m, ev(workbench.SweepModelRun, i, &e, nil))
		}
		m = step(m, ev(workbench.SweepModelDone, i, nil, &r.Report))
	}
	m = step(m, ev(workbench.SweepModelStarted, 2, nil, nil))
	for _, e := range b.Events {
		if e.Kind == scoring.EventWindowDone && e.Window.Index >= 9 || e.Kind == scoring.EventFinished {
			break
		}
		m = step(m, ev(workbench.SweepModelRun, 2, &e, nil))
	}
	return m
}

// TestMoreViewsFit: the sweep, history, help and worst views fit the
// terminal exactly at every size, small ones included.
func TestMoreViewsFit(t *testing.T) {
	a, b := recordings(t)
	pb, base, rep, path := worstFixture(t)
	for _, sz := range []struct{ w, h int }{{80, 24}, {140, 45}, {100, 30}, {60, 16}, {40, 10}, {200, 60}} {
		views := map[string]Model{"sweep": sweepMidway(t, sz.w, sz.h, a, b)}
		m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{pb}, Base: base})
		m = step(m, doneMsg{id: 1, rep: rep, saved: true, files: results.Run{Report: path}})
		views["help"] = step(m, tea.KeyPressMsg{Code: '?', Text: "?"})
		views["worst"] = step(m, tea.KeyPressMsg{Code: 'w', Text: "w"})
		h := step(m, tea.KeyPressMsg{Code: 'h', Text: "h"})
		long := b.Report
		long.Config.Model.Path = "../models/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf"
		views["history"] = step(h, historyMsg{entries: []results.Entry{{Report: "r.json", Profile: pb, HasProfile: true, Run: long}}})
		for name, v := range views {
			lines := strings.Split(screen(v), "\n")
			if len(lines) != sz.h {
				t.Errorf("%s %dx%d: %d lines", name, sz.w, sz.h, len(lines))
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w > sz.w {
					t.Errorf("%s %dx%d: line %d is %d wide: %q", name, sz.w, sz.h, i, w, l)
				}
			}
		}
	}
}

// TestRunHelpGolden is the help page of a finished run: every key and
// every mark of the chart explained.
func TestRunHelpGolden(t *testing.T) {
	a, _ := recordings(t)
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{a.Profile}})
		m = feed(m, 1, a, 0, -1)
		m = finish(m, 1, a, "f32kv_fake_a")
		m = step(m, tea.KeyPressMsg{Code: '?', Text: "?"})
		golden(t, "help_run_"+suffix, screen(m))
	}
}

// TestRunLongNamesGolden: a long model name gives way in its middle and a
// long description at a word's end, and the state badge stays on screen.
func TestRunLongNamesGolden(t *testing.T) {
	a, _ := recordings(t)
	p := a.Profile
	p.Model = "../models/Qwen3-30B-A3B-Instruct-2507-UD-Q4_K_XL.gguf"
	p.Description = "dense attention, f32 KV cache, the reference every other profile of this sweep is compared with"
	for _, sz := range sizes {
		suffix := fmt.Sprintf("%dx%d", sz.w, sz.h)
		m := newTestModel(t, sz.w, sz.h, Config{Profiles: []profiles.Profile{p}})
		m = feed(m, 1, a, 0, -1)
		m = finish(m, 1, a, "f32kv_fake_a")
		s := screen(m)
		if first := strings.Split(s, "\n")[0]; !strings.Contains(first, "DONE") {
			t.Errorf("%s: the badge is off the title line %q", suffix, first)
		}
		golden(t, "run_long_names_"+suffix, s)
	}
}
