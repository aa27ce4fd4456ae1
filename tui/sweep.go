package tui

// sweep.go owns the sweep view's child model: a sweep (workbench.Sweep:
// the base model records its base, every other model is scored against
// it, each kept as a record) shown as its list of models — waiting,
// running with the live view of its run, done with its headline numbers —
// and the compare table of the finished ones, growing as models finish.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// Sweeper runs a sweep: the command line passes workbench.Sweep, tests a
// fake. Progress flows to j.Progress, which the TUI sets.
type Sweeper interface {
	Sweep(ctx context.Context, j workbench.SweepJob) (workbench.SweepOutcome, error)
}

// SweeperFunc adapts a function to Sweeper.
type SweeperFunc func(ctx context.Context, j workbench.SweepJob) (workbench.SweepOutcome, error)

// Sweep calls f.
func (f SweeperFunc) Sweep(ctx context.Context, j workbench.SweepJob) (workbench.SweepOutcome, error) {
	return f(ctx, j)
}

// sweepEventMsg is one event of sweep id; table, on a model's end, is the
// compare table of the models finished so far.
type sweepEventMsg struct {
	id    int
	ev    workbench.SweepEvent
	table *results.CompareOutput
}

// sweepDoneMsg ends sweep id.
type sweepDoneMsg struct {
	id  int
	err error
}

// sweep is the command running sj; like run, it returns no message itself.
func (j *job) sweep(s Sweeper, sj workbench.SweepJob) tea.Cmd {
	run := func() tea.Msg {
		defer close(j.msgs)
		var done []scoring.Report
		sj.Job.KeepGoing = j.keep.Load
		sj.Progress = func(e workbench.SweepEvent) {
			msg := sweepEventMsg{id: j.id, ev: e}
			if e.Report != nil {
				// The sweep keeps the report it points at; the UI gets its own.
				rep := *e.Report
				msg.ev.Report = &rep
				done = append(done, rep)
				t := results.CompareTables(scoring.GroupRecords(append(done[:len(done):len(done)],
					results.Measurements(sj.Root, done[min(1, len(done)):])...)))
				msg.table = &t
			}
			j.send(msg)
			if e.Kind == workbench.SweepModelRun && e.Run.Kind == scoring.EventWindowDone {
				j.gate.wait(j.ctx)
			}
		}
		_, err := s.Sweep(j.ctx, sj)
		j.send(sweepDoneMsg{id: j.id, err: err})
		return nil
	}
	return tea.Batch(run, j.wait())
}

// sweepItem is one model of the sweep.
type sweepItem struct {
	model   string
	status  runStatus
	skipped bool // resuming: its record was there
	report  *scoring.Report
	record  string
}

// sweepModel is a sweep's state.
type sweepModel struct {
	sj     workbench.SweepJob
	job    *job
	items  []sweepItem // the base model first
	at     int         // the model in flight (or last run); -1 before the first
	live   runModel    // its run, as the run view shows one
	status runStatus
	err    error
	table  results.CompareOutput
}

func newSweepModel(sj workbench.SweepJob) sweepModel {
	m := sweepModel{sj: sj, at: -1}
	for _, f := range append([]string{sj.BaseModel}, sj.Models...) {
		m.items = append(m.items, sweepItem{model: f})
	}
	return m
}

// start runs the sweep under j.
func (m sweepModel) start(s Sweeper, j *job) (sweepModel, tea.Cmd) {
	m.job, m.status = j, runLoading
	return m, j.sweep(s, m.sj)
}

func (m sweepModel) active() bool {
	return m.status == runLoading || m.status == runRunning || m.status == runStopping
}

// stop asks the sweep to stop after the window in flight; the finished
// models' records stay, the one in flight keeps its journal.
func (m sweepModel) stop() sweepModel {
	if m.active() && m.job != nil {
		m.job.cancel()
		m.job.gate.set(false)
		m.status = runStopping
		m.live = m.live.stop()
	}
	return m
}

func (m sweepModel) owns(id int) bool { return m.job != nil && m.job.id == id }

func (m sweepModel) update(msg tea.Msg) (sweepModel, tea.Cmd) {
	switch msg := msg.(type) {
	case sweepEventMsg:
		if !m.owns(msg.id) {
			return m, nil
		}
		m = m.apply(msg)
		return m, m.job.wait()
	case sweepDoneMsg:
		if !m.owns(msg.id) {
			return m, nil
		}
		return m.finish(msg.err), nil
	}
	return m, nil
}

// apply folds one sweep event into the state.
func (m sweepModel) apply(msg sweepEventMsg) sweepModel {
	e := msg.ev
	if e.Index < 0 || e.Index >= len(m.items) {
		return m
	}
	it := &m.items[e.Index]
	switch e.Kind {
	case workbench.SweepModelStarted:
		m.at, it.status = e.Index, runLoading
		if m.status == runLoading {
			m.status = runRunning
		}
		p := m.sj.Job.Profile
		p.Model, p.Sweep = e.Model, nil
		base := m.sj.Base
		if e.Index == 0 {
			// The base model records the base, without a stopping rule.
			p.StopAtPrecision, p.StopWhenDecided, base = 0, "", ""
		}
		paused := m.live.paused
		m.live = newRunModel("", p, base)
		m.live.job, m.live.status, m.live.paused = m.job, runLoading, paused
	case workbench.SweepModelRun:
		if e.Index == m.at && e.Run != nil {
			m.live = m.live.apply(*e.Run)
			if m.live.status == runRunning && it.status == runLoading {
				it.status = runRunning
			}
		}
	case workbench.SweepModelDone, workbench.SweepModelSkipped:
		it.status, it.skipped, it.report, it.record = runDone, e.Kind == workbench.SweepModelSkipped, e.Report, e.Record
		if m.status == runLoading {
			m.status = runRunning
		}
		if e.Index == m.at && e.Report != nil {
			paused := m.live.paused
			m.live = m.live.finish(doneMsg{rep: *e.Report, saved: true, files: results.Run{Report: e.Record}})
			m.live.paused = paused
		}
		if msg.table != nil {
			m.table = *msg.table
		}
	}
	return m
}

// finish takes the sweep's end.
func (m sweepModel) finish(err error) sweepModel {
	m.live.paused = false
	switch {
	case err == nil:
		m.status = runDone
	case stopped(err):
		m.status = runStopped
	default:
		m.status, m.err = runFailed, err
	}
	if m.at >= 0 && m.items[m.at].status != runDone {
		m.items[m.at].status = m.status
		m.live.status = m.status
	}
	return m
}

// profile is the sweep as a profile: its settings and its [sweep] table,
// what the s key saves.
func (m sweepModel) profile() profiles.Profile {
	p := m.sj.Job.Profile
	p.Model, p.Sweep = "", &profiles.Sweep{Base: m.sj.BaseModel, Models: m.sj.Models}
	return p
}

// --- drawing ---

// headerView is the sweep's title, its protocol and settings.
func (m sweepModel) headerView(s Styles, w int) string {
	p := m.sj.Job.Profile
	badge := m.live.badge(s)
	if !m.live.paused || !m.active() {
		st := runModel{status: m.status}
		badge = st.badge(s)
	}
	// The base model's name gives way (in its middle) to the badge.
	name := filepath.Base(m.sj.BaseModel)
	named := ""
	if p.Name != "" && p.Name != "default" {
		named = " · " + p.Name
	}
	fixed := lipgloss.Width(fmt.Sprintf("plexbench sweep · %d models against %s", len(m.sj.Models), named)) + 1 + lipgloss.Width(badge)
	name = results.MiddleEllipsis(name, max(16, w-fixed))
	title := s.Title.Render("plexbench") + " " + s.Value.Render("sweep") +
		s.Dim.Render(fmt.Sprintf(" · %d models against %s", len(m.sj.Models), name)+named)
	l2 := s.Label.Render(inputName(p)) + s.Dim.Render(" · ") + s.Label.Render(windowsLine(p))
	l3 := s.Dim.Render(settings(p))
	return spread(title, badge, w) + "\n" + l2 + "\n" + truncate(l3, w)
}

// itemRows are the models' lines as one table fitted to w: each model's
// name (shortened in the middle when it must be), state and figures; the
// same-top column goes first when the width is short.
func (m sweepModel) itemRows(s Styles, w int) []string {
	t := results.Table{Header: []string{"model", "state", "PPL", "KLD", "same top", "note"},
		Drop: []string{"note", "same top", "KLD"}, Squeeze: "model", MinSqueeze: 24, SqueezeFirst: true}
	for i, it := range m.items {
		name := filepath.Base(it.model)
		if i == 0 {
			name += " (base)"
		}
		var state string
		switch {
		case it.status == runDone && it.skipped:
			state = s.Good.Render("done") + s.Dim.Render(" (recorded before)")
		case it.status == runDone:
			state = s.Good.Render("done")
		case it.status == runWaiting:
			state = s.Dim.Render("waiting")
		case it.status == runFailed:
			state = s.Bad.Render("failed")
		case it.status == runStopped:
			state = s.Warn.Render("stopped") + s.Dim.Render(" (journal kept)")
		case i == m.at:
			e := m.live.last
			state = s.Value.Render(m.live.status.String())
			if e.WindowsTotal > 0 {
				state += s.Dim.Render(fmt.Sprintf(" %d/%d", e.WindowsDone, e.WindowsTotal))
			}
		default:
			state = s.Value.Render(it.status.String())
		}
		row := []string{name, state, "", "", "", ""}
		if r := it.report; r != nil {
			row[2] = s.Label.Render("PPL ") + s.Value.Render(pm(r.Perplexity, r.PerplexityUncertainty))
			if r.KLD != nil {
				k := r.KLD.Summary()
				row[3] = s.Label.Render("KLD ") + s.Value.Render(pm(k.MeanKLD, k.MeanKLDUncertainty))
				row[4] = s.Label.Render("same top ") + s.Value.Render(pct(k.SameTop, 1))
			}
			if se := r.StoppedEarly; se != nil {
				row[5] = s.Dim.Render(fmt.Sprintf("stopped at window %d", se.Windows))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	lines, _ := t.Fit(w)
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return lines[1:]
}

// liveView is the model in flight, as the run view draws its top.
func (m sweepModel) liveView(s Styles, w int) []string {
	if m.at < 0 || m.items[m.at].status == runDone {
		return nil
	}
	r := m.live
	out := []string{rule(s, filepath.Base(r.profile.Model), w),
		r.progressView(s, w), r.statsView(s)}
	if k := r.kldView(s); k != "" {
		out = append(out, strings.TrimRight(k, "\n"))
	}
	if st := r.stopView(s); st != "" {
		out = append(out, st)
	}
	return out
}

// tableView is the compare table of the finished models, as `plexbench
// compare` prints it in a terminal w wide: the least important columns
// left out when it is too wide, and said so.
func (m sweepModel) tableView(s Styles, w int) []string {
	if len(m.table.Groups) == 0 {
		return nil
	}
	var b strings.Builder
	m.table.WriteTable(&b, w)
	out := []string{rule(s, "compare", w)}
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		out = append(out, truncate(l, w))
	}
	return out
}

// rule is a section's title line across the width: ── title ─────.
func rule(s Styles, title string, w int) string {
	l := "── " + title + " "
	return s.Header.Render(truncate(l+strings.Repeat("─", max(0, w-lipgloss.Width(l))), w))
}

// statusView is the line at the bottom: where the records went, or why
// the sweep ended.
func (m sweepModel) statusView(s Styles) string {
	switch {
	case m.err != nil:
		return s.Bad.Render("error: " + m.err.Error())
	case m.status == runStopping:
		return s.Warn.Render("stopping after the window in flight…")
	case m.status == runStopped:
		return s.Warn.Render("stopped: ") + s.Dim.Render("the finished models' records are kept; the same command with --resume continues the sweep")
	case m.status == runDone:
		return s.Good.Render("done: ") + s.Dim.Render(fmt.Sprintf("%d records in %s", len(m.items), m.sj.Root))
	case m.live.paused:
		return s.Warn.Render("paused between windows: space resumes")
	}
	return ""
}

// view lays the sweep out in w × h cells: the list and the live run
// first; the compare table takes the lines left above the status line.
func (m sweepModel) view(s Styles, w, h int) string {
	top := []string{m.headerView(s, w), ""}
	for _, l := range m.itemRows(s, w) {
		top = append(top, truncate(l, w))
	}
	if live := m.liveView(s, w); live != nil {
		top = append(append(top, ""), live...)
	}
	used := strings.Count(strings.Join(top, "\n"), "\n") + 2 // and the status line
	if t := m.tableView(s, w); t != nil && h-used >= 3 {
		if left := h - used - 1; len(t) > left {
			t = append(t[:left-1], s.Dim.Render(fmt.Sprintf("… %d more lines: plexbench compare prints them all", len(t)-left+1)))
		}
		top = append(append(top, ""), t...)
	}
	return strings.Join(append(top, m.statusView(s)), "\n")
}
