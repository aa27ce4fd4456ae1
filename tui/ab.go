package tui

// ab.go owns the A/B view's child model: run A (recording a base, or
// against a saved one), then B against that base, side by side, with the
// paired ΔPPL, B's KLD against A, the speed ratio, the profile diff, a
// chart of the running ΔPPL and the verdict line.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// abModel is an A/B comparison in progress or done.
type abModel struct {
	env       env
	a, b      runModel
	diff      []profiles.Change
	givenBase string // --base: both runs compare against it
	// scratch is the temporary folder A records its base in when the
	// app keeps no bases (Config.KeepBases); removed on Close.
	scratch string

	// allow: a tokenizer mismatch found before A scores compares the two
	// by bits per byte only (mismatch says how they differ), each run on
	// its own, instead of failing.
	allow    bool
	mismatch string

	cmp    scoring.Comparison // over the windows both have scored
	points []chartPoint       // running ΔPPL% after each paired window

	pairPath string
	pairErr  error
	// refused is why the pair was refused before A started (a side's
	// check: Config.Check); neither side ran.
	refused error
}

// pairSavedMsg reports the A/B summary's save.
type pairSavedMsg struct {
	path string
	err  error
}

func newABModel(e env, a, b profiles.Profile, givenBase string, allow bool) abModel {
	return abModel{env: e, a: newRunModel("A", a, givenBase), b: newRunModel("B", b, givenBase),
		diff: profiles.Diff(a, b), givenBase: givenBase, allow: allow}
}

// jobs are A's and B's runs as a check sees them before A starts.
func (m abModel) jobs() [2]workbench.Job {
	return [2]workbench.Job{{Profile: m.a.profile, Compare: m.givenBase}, {Profile: m.b.profile, Compare: m.givenBase}}
}

// bytesOnly reports whether the pair is compared by bits per byte only.
func (m abModel) bytesOnly() bool { return m.mismatch != "" }

// init starts A.
func (m abModel) init() (abModel, tea.Cmd) {
	var cmd tea.Cmd
	spec := m.env.spec(m.a.profile)
	spec.partner = &m.b.profile
	if m.scratch != "" {
		spec.baseOut = filepath.Join(m.scratch, "A.kld")
	}
	m.a, cmd = m.a.start(m.env.runner, m.env.newJob(), spec)
	m.b.status = runWaiting
	return m, cmd
}

func (m abModel) active() bool { return m.a.active() || m.b.active() }

// current is the run in flight (or the last one).
func (m abModel) current() *runModel {
	if m.a.active() || m.b.status == runWaiting {
		return &m.a
	}
	return &m.b
}

func (m abModel) stop() abModel {
	m.a, m.b = m.a.stop(), m.b.stop()
	if m.b.status == runWaiting {
		m.b.status = runStopped
	}
	return m
}

func (m abModel) tick() abModel {
	m.a, m.b = m.a.tick(), m.b.tick()
	return m
}

func (m abModel) togglePause() abModel {
	if m.a.active() {
		m.a = m.a.togglePause()
	} else {
		m.b = m.b.togglePause()
	}
	return m
}

func (m abModel) update(msg tea.Msg) (abModel, tea.Cmd) {
	switch msg := msg.(type) {
	case eventMsg:
		if m.b.owns(msg.id) {
			var cmd tea.Cmd
			m.b, cmd = m.b.update(msg)
			m = m.compare()
			return m, cmd
		}
		var cmd tea.Cmd
		m.a, cmd = m.a.update(msg)
		return m, cmd
	case doneMsg:
		switch {
		case m.a.owns(msg.id) && m.allow && !m.bytesOnly() && errors.Is(msg.err, scoring.ErrTokenizerMismatch):
			// Refused before scoring: A runs again on its own, then B.
			m.mismatch = msg.err.Error()
			m.a, m.b.base = newRunModel("A", m.a.profile, ""), ""
			var cmd tea.Cmd
			m.a, cmd = m.a.start(m.env.runner, m.env.newJob(), m.env.spec(m.a.profile))
			return m, cmd
		case m.a.owns(msg.id):
			m.a, _ = m.a.update(msg)
			return m.afterA()
		case m.b.owns(msg.id):
			m.b, _ = m.b.update(msg)
			m = m.compare()
			return m, m.savePair()
		}
	case pairSavedMsg:
		m.pairPath, m.pairErr = msg.path, msg.err
	}
	return m, nil
}

// afterA starts B once A has scored every window, against A's base (or
// the given one). A stopped or failed A ends the comparison.
func (m abModel) afterA() (abModel, tea.Cmd) {
	if m.a.status != runDone || m.b.status != runWaiting {
		if m.b.status == runWaiting {
			m.b.status = runStopped
		}
		return m, m.savePair()
	}
	if m.givenBase == "" && !m.bytesOnly() {
		if m.a.report == nil || m.a.report.KLDBaseOut == "" {
			m.b.status, m.b.err = runFailed, fmt.Errorf("A finished without recording a base")
			return m, nil
		}
		m.b.base = m.a.report.KLDBaseOut
	}
	var cmd tea.Cmd
	m.b, cmd = m.b.start(m.env.runner, m.env.newJob(), m.env.spec(m.b.profile))
	return m, cmd
}

// compare recomputes the comparison over the paired windows and the
// running ΔPPL chart, one pair at a time in B's order.
func (m abModel) compare() abModel {
	if m.bytesOnly() {
		return m // no token pairs across tokenizers
	}
	byIndex := make(map[int]scoring.WindowReport, len(m.a.windows))
	for _, w := range m.a.windows {
		byIndex[w.Index] = w
	}
	var acc scoring.PairedStats
	m.points = m.points[:0:0]
	for _, wb := range m.b.windows {
		wa, ok := byIndex[wb.Index]
		if !ok || !acc.Add(wa, wb) {
			continue
		}
		c := acc.Result()
		m.points = append(m.points, chartPoint{
			Value: 100 * (math.Exp(scoring.WindowDelta(wa, wb)) - 1), Run: c.DeltaPPLPercent,
			Lo: c.DeltaPPLPercent - c.DeltaPPLPercentUncertainty, Hi: c.DeltaPPLPercent + c.DeltaPPLPercentUncertainty,
		})
	}
	m.cmp = acc.Result()
	m.cmp.KLD = m.b.kld()
	return m
}

// savePair writes the A/B summary beside B's report, or beside A's when
// A stopped or failed before B ran.
func (m abModel) savePair() tea.Cmd {
	beside := m.b.files.Report
	if m.b.files.Report == "" {
		beside = m.a.files.Report
	} else if !m.b.saved {
		return nil
	}
	if !m.a.saved || beside == "" {
		return nil
	}
	diff := make([]string, len(m.diff))
	for i, c := range m.diff {
		diff[i] = c.String()
	}
	var sum results.ABSummary
	if m.bytesOnly() && m.a.report != nil && m.b.report != nil {
		sum = results.PairBitsPerByte(m.a.report, m.b.report, m.mismatch)
		sum.A, sum.B = m.side(&m.a), m.side(&m.b)
	} else {
		sum = results.NewABSummary(m.cmp, m.side(&m.a), m.side(&m.b))
		sum.Base = m.b.base
	}
	sum.Diff, sum.Verdict, sum.Partial = diff, m.verdict(), m.b.status != runDone
	path := results.ABPath(beside)
	return func() tea.Msg { return pairSavedMsg{path: path, err: results.WriteAB(path, sum)} }
}

// side is one run's headline figures for the summary.
func (m abModel) side(r *runModel) results.ABSide {
	if r.report == nil {
		return results.ABSide{Name: r.profile.Name, Report: r.files.Report}
	}
	return results.SideOf(r.profile.Name, r.files.Report, r.report)
}

// verdict is the verdict line with how far the runs got.
func (m abModel) verdict() string {
	switch {
	case m.refused != nil:
		return "not started: " + m.refused.Error()
	case m.a.status == runFailed:
		return "A failed; no comparison"
	case m.b.status == runWaiting || m.b.status == runLoading:
		return "waiting for B"
	case m.b.status == runStopped && len(m.b.windows) == 0:
		return "stopped before B scored a window; no comparison"
	case m.b.status == runFailed && len(m.b.windows) == 0:
		return "B failed; no comparison"
	}
	v := m.cmp.Verdict()
	if m.bytesOnly() {
		v = m.bytesVerdict()
	}
	total := m.b.last.WindowsTotal
	switch m.b.status {
	case runRunning, runStopping:
		v = fmt.Sprintf("so far (%d/%d windows): %s", m.cmp.Windows, total, v)
		if m.cmp.Clear() && m.b.status == runRunning {
			v += " — clear already: q stops and keeps it"
		}
		return v
	case runStopped, runFailed:
		return fmt.Sprintf("stopped at %d/%d windows: %s", m.cmp.Windows, total, v)
	}
	return v
}

// bytesVerdict is the bits-per-byte comparison's verdict: the summary's
// once both runs are done, else B − A over the text each has scored.
func (m abModel) bytesVerdict() string {
	if m.a.report != nil && m.b.report != nil && m.b.status == runDone {
		return results.PairBitsPerByte(m.a.report, m.b.report, m.mismatch).Verdict
	}
	a, b := m.a.last, m.b.last
	d, u := b.BitsPerByte-a.BitsPerByte, math.Hypot(a.BitsPerByteUncertainty, b.BitsPerByteUncertainty)
	return fmt.Sprintf("by bits per byte only (tokenizers differ): B − A %s", pmSigned(d, u))
}

// --- drawing ---

func (m abModel) headerView(s Styles, w int) string {
	a, b := m.a.profile, m.b.profile
	title := s.Title.Render("plexbench A/B") + "  " + s.Value.Render("A "+a.Name) + s.Dim.Render(" vs ") + s.Value.Render("B "+b.Name)
	cur := m.current()
	l2 := s.Label.Render("model ") + base(a.Model, "demo (stories260K)")
	if b.Model != a.Model {
		l2 += s.Dim.Render(" / ") + base(b.Model, "demo (stories260K)")
	}
	l2 += s.Dim.Render(" · ") + inputName(a)
	if more := s.Dim.Render(" · " + windowsLine(a)); lipgloss.Width(l2+more) <= w {
		l2 += more
	} else {
		l2 += "\n" + s.Label.Render(windowsLine(a))
	}
	diff := s.Label.Render("B − A: ")
	if len(m.diff) == 0 {
		diff += s.Dim.Render("no settings differ (a noise check)")
	} else {
		parts := make([]string, len(m.diff))
		for i, c := range m.diff {
			if c.Key == "model" || c.Key == "text" || c.Key == "tokens" {
				parts[i] = fmt.Sprintf("%s %s → %s", c.Key, base(c.A, "demo"), base(c.B, "demo"))
				continue
			}
			parts[i] = fmt.Sprintf("%s %s → %s", c.Key, show(c.A), show(c.B))
		}
		diff += strings.Join(parts, ", ")
	}
	if m.givenBase != "" {
		diff += s.Dim.Render(" · both vs " + base(m.givenBase, ""))
	}
	if m.bytesOnly() {
		diff += s.Warn.Render(" · by bits per byte only")
	}
	badge := cur.label + " " + cur.badge(s)
	if m.refused != nil {
		badge = s.Badge.Inherit(s.Bad).Render("REFUSED")
	}
	return spread(title, badge, w) + "\n" + l2 + "\n" + diff
}

func show(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// sideBySide is the table of A's and B's numbers and the paired results.
func (m abModel) sideBySide(s Styles, w int) []string {
	colW := max(18, min(30, (w-14)/2))
	row := func(label, a, b string) string {
		return s.Label.Render(padRight(label, 14)) + padRight(a, colW) + b
	}
	ppl := func(r runModel) string {
		if r.last.Perplexity == 0 {
			return "–"
		}
		return s.Value.Render(pm(r.last.Perplexity, r.last.PerplexityUncertainty))
	}
	speed := func(r runModel) string { return rate(r.last.MeanTokensPerSecond) }
	lines := []string{
		s.Header.Render(padRight("", 14) + padRight("A "+m.a.profile.Name, colW) + "B " + m.b.profile.Name),
		row("PPL", ppl(m.a), ppl(m.b)),
		row("tok/s mean", speed(m.a), speed(m.b)),
	}
	kv := func(r runModel) (string, string, string) {
		k := r.kld()
		if k == nil {
			return "–", "–", "–"
		}
		return s.Value.Render(pm(k.MeanKLD, k.MeanKLDUncertainty)) + s.Dim.Render(" token SE"),
			pctPM(k.SameTop, k.SameTopUncertainty) + " · Δp " + signedPct(k.MeanDeltaP),
			fmt.Sprintf("p50 %s p99 %s max %s", small(k.P50), small(k.P99), small(k.Max))
	}
	bpb := func(r runModel) string {
		if r.last.BitsPerByte == 0 {
			return "–"
		}
		return s.Value.Render(pm(r.last.BitsPerByte, r.last.BitsPerByteUncertainty))
	}
	if m.bytesOnly() {
		lines = append(lines, row("bits/byte", bpb(m.a), bpb(m.b)))
		d := "–"
		if a, b := m.a.last, m.b.last; a.BitsPerByte > 0 && b.BitsPerByte > 0 {
			d = pmSigned(b.BitsPerByte-a.BitsPerByte, math.Hypot(a.BitsPerByteUncertainty, b.BitsPerByteUncertainty))
		}
		return append(lines, row("KLD vs base", s.Dim.Render("– (tokenizers differ)"), s.Dim.Render("–")),
			s.Label.Render(padRight("Δbits/byte", 14))+s.Value.Render(d)+s.Dim.Render("  B − A, errors in quadrature (no paired tokens)"),
			s.Dim.Render(truncate(m.mismatch, w)))
	}
	ka1, ka2, ka3 := kv(m.a)
	kb1, kb2, kb3 := kv(m.b)
	if m.givenBase == "" {
		ka1, ka2, ka3 = s.Dim.Render("(the base)"), "", ""
	}
	lines = append(lines, row("KLD vs base", ka1, kb1), row("same top", ka2, kb2), row("KLD pct", ka3, kb3))
	c := m.cmp
	if c.Windows > 0 {
		d := "–"
		if c.Windows > 1 {
			d = pmSigned(c.DeltaPPLPercent, c.DeltaPPLPercentUncertainty) + "%"
		}
		lines = append(lines, s.Label.Render(padRight("ΔPPL B−A", 14))+s.Value.Render(d)+
			s.Dim.Render(fmt.Sprintf("  paired over %d windows", c.Windows)))
		sp := "–"
		if c.SpeedRatio > 0 {
			sp = fmt.Sprintf("%.3f× ± %.3f", c.SpeedRatio, c.SpeedRatioUncertainty)
		}
		kept := func(r runModel) string {
			if r.last.AttentionKept == 0 {
				return "–"
			}
			return pct(r.last.AttentionKept, 1)
		}
		lines = append(lines, s.Label.Render(padRight("speed B/A", 14))+s.Value.Render(sp)+
			s.Dim.Render(fmt.Sprintf("  attn kept A %s · B %s", kept(m.a), kept(m.b))))
	} else {
		lines = append(lines, s.Label.Render(padRight("ΔPPL B−A", 14))+s.Dim.Render("after B's first window"), "")
	}
	return lines
}

// verdictView is the verdict, wrapped to w cells: it is the line the A/B
// exists for, so it is never cut.
func (m abModel) verdictView(s Styles, w int) string {
	v := m.verdict()
	st := s.Value
	switch {
	case strings.Contains(v, "matches"):
		st = s.Good
	case strings.Contains(v, "worse") || strings.Contains(v, "failed"):
		st = s.Bad
	case strings.Contains(v, "differs") || strings.Contains(v, "stopped"):
		st = s.Warn
	}
	return wrap(s.Label.Render("verdict ")+st.Render(v), w)
}

func (m abModel) statusView(s Styles) string {
	switch {
	case m.refused != nil:
		return s.Bad.Render("refused before A started; nothing was scored (q quits)")
	case m.pairErr != nil:
		return s.Bad.Render("could not save the A/B summary: " + m.pairErr.Error())
	case m.pairPath != "":
		return s.Good.Render("saved: ") + s.Dim.Render(m.pairPath)
	}
	if st := m.b.statusView(s); st != "" && m.b.status != runWaiting {
		return st
	}
	return m.a.statusView(s)
}

func (m abModel) view(s Styles, w, h int) string {
	if m.refused != nil {
		return strings.Join([]string{m.headerView(s, w), "", m.verdictView(s, w), m.statusView(s)}, "\n")
	}
	top := []string{m.headerView(s, w), m.a.progressView(s, w), m.b.progressView(s, w)}
	top = append(top, m.sideBySide(s, w)...)
	fixed := 0
	for _, t := range top {
		fixed += strings.Count(t, "\n") + 1
	}
	verdict := m.verdictView(s, w)
	left := h - fixed - strings.Count(verdict, "\n") - 2 // verdict and status lines
	out := top
	if left >= 5 && !m.bytesOnly() {
		title := s.Label.Render("ΔPPL% B−A: per window ") + s.ChartDot.Render("·") + s.Label.Render("  running ") +
			s.ChartLine.Render("─") + s.Label.Render(" ± ") + s.ChartBand.Render("░")
		c := chart{Points: m.points, Total: max(m.b.last.WindowsTotal, m.a.last.WindowsTotal), Zero: true}
		out = append(out, title, c.render(s, w, left-1))
	}
	return strings.Join(append(out, verdict, m.statusView(s)), "\n")
}
