package tui

// run.go owns the run view's child model: one run's live state (built from
// its progress events, or from a saved report when re-opened) and how it
// draws: header, progress, running PPL, KLD against a base, the chart and
// the latest windows; for a multiple-choice run, its tasks, running
// accuracy and the accuracy chart instead. The A/B view shows two of
// these.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// runStatus is where a run stands.
type runStatus int

const (
	runWaiting  runStatus = iota // not started (B while A runs)
	runLoading                   // started, no event yet (loading the model)
	runRunning                   // windows going
	runStopping                  // stop asked; finishing the window in flight
	runDone                      // every window scored
	runStopped                   // stopped early; partial report
	runFailed                    // an error ended it
)

func (s runStatus) String() string {
	return [...]string{"waiting", "loading", "running", "stopping", "done", "stopped", "failed"}[s]
}

// runModel is one run's state.
type runModel struct {
	label   string // "A", "B" or "" in the single run view
	profile profiles.Profile
	base    string // the KLD base it compares against
	// choice, when it names a task file, is what the run scores instead
	// of the profile's text.
	choice workbench.Choice

	job    *job
	status runStatus
	paused bool

	last    scoring.Event // the latest event: running statistics
	idle    int           // clock ticks (seconds) since the latest event
	points  []chartPoint
	windows []scoring.WindowReport

	report  *scoring.Report // when finished
	files   results.Run
	saved   bool
	saveErr error
	err     error
	opened  string // report path, when re-opened from history
}

func newRunModel(label string, p profiles.Profile, base string) runModel {
	return runModel{label: label, profile: p, base: base}
}

// start runs spec under j.
func (m runModel) start(r Runner, j *job, spec runSpec) (runModel, tea.Cmd) {
	m.job, m.status = j, runLoading
	spec.base, spec.choice = m.base, m.choice
	return m, j.start(r, spec)
}

// choiceMode is the multiple-choice method and task file of the run; ok is
// false for a perplexity run. A run re-opened from history takes them
// from its report.
func (m runModel) choiceMode() (method, path string, ok bool) {
	if c, ok := m.choice.Mode(); ok {
		return c.Method, c.Path, true
	}
	if m.report != nil && m.report.Choice() != nil {
		return m.report.Method, m.report.Text, true
	}
	return "", "", false
}

// unit is what the run scores one at a time: windows, or a task file's
// tasks.
func (m runModel) unit() string {
	if m.scoresTasks() {
		return "task"
	}
	return "window"
}

// scoresTasks reports whether the run scores a task file.
func (m runModel) scoresTasks() bool {
	_, _, ok := m.choiceMode()
	return ok
}

// active reports whether the run is in flight.
func (m runModel) active() bool {
	return m.status == runLoading || m.status == runRunning || m.status == runStopping
}

// stop asks the run to stop after the window in flight.
func (m runModel) stop() runModel {
	if m.active() && m.job != nil {
		m.job.cancel()
		m.job.gate.set(false)
		m.status, m.paused = runStopping, false
	}
	return m
}

// hasRule reports whether the run's profile has a stopping rule.
func (m runModel) hasRule() bool {
	return m.profile.StopAtPrecision > 0 || m.profile.StopWhenDecided != ""
}

// toggleKeep asks the run to go on past its stopping rule (or, pressed
// again, to stop at it).
func (m runModel) toggleKeep() runModel {
	if m.job != nil && m.active() && m.hasRule() {
		m.job.keep.Store(!m.job.keep.Load())
	}
	return m
}

// keeping reports whether the run goes on past its stopping rule.
func (m runModel) keeping() bool { return m.job != nil && m.job.keep.Load() }

// togglePause pauses or resumes between windows.
func (m runModel) togglePause() runModel {
	if m.job == nil || (m.status != runRunning && m.status != runLoading) {
		return m
	}
	m.paused = !m.paused
	m.job.gate.set(m.paused)
	return m
}

// owns reports whether msg belongs to this run's job.
func (m runModel) owns(id int) bool { return m.job != nil && m.job.id == id }

// update applies one of the run's messages; messages of other runs are the
// caller's to route, and ones from a replaced job never match.
func (m runModel) update(msg tea.Msg) (runModel, tea.Cmd) {
	switch msg := msg.(type) {
	case eventMsg:
		if !m.owns(msg.id) {
			return m, nil
		}
		m = m.apply(msg.ev)
		return m, m.job.wait()
	case doneMsg:
		if !m.owns(msg.id) {
			return m, nil
		}
		return m.finish(msg), nil
	}
	return m, nil
}

// tick advances the clock between events, so elapsed and ETA move while a
// long window runs.
func (m runModel) tick() runModel {
	if m.active() && !m.paused {
		m.idle++
	}
	return m
}

// apply folds one progress event into the state.
func (m runModel) apply(ev scoring.Event) runModel {
	m.idle = 0
	if ev.Kind == scoring.EventFinished && ev.TokensPerSecond == 0 {
		// The end carries no window of its own; keep the last rate.
		ev.TokensPerSecond = m.last.TokensPerSecond
	}
	m.last = ev
	if m.status == runLoading {
		m.status = runRunning
	}
	if ev.Kind == scoring.EventWindowDone && ev.Window != nil {
		m.windows = append(m.windows, *ev.Window)
		m.points = append(m.points, chartPoint{
			Value: ev.Window.Perplexity, Run: ev.Perplexity,
			Lo: ev.Perplexity - ev.PerplexityUncertainty, Hi: ev.Perplexity + ev.PerplexityUncertainty,
		})
	}
	if ev.Kind == scoring.EventWindowDone && ev.Choice != nil {
		m.points = append(m.points, choicePoint(ev.Method, *ev.Choice))
	}
	return m
}

// choicePoint is a task's point on the accuracy chart: the running
// accuracy (the line; a task has no value of its own) in HellaSwag's
// Wilson interval or the others' ± band.
func choicePoint(method string, c scoring.ChoiceProgress) chartPoint {
	lo, hi := c.Accuracy-c.Uncertainty, c.Accuracy+c.Uncertainty
	if method == scoring.MethodHellaSwag {
		lo, hi = c.CI95Low, c.CI95High
	}
	return chartPoint{Value: c.Accuracy, Run: c.Accuracy, Lo: lo, Hi: hi}
}

// finish takes the run's end.
func (m runModel) finish(d doneMsg) runModel {
	m.files, m.saved, m.saveErr, m.err = d.files, d.saved, d.saveErr, d.err
	m.paused = false
	if d.rep.Object != "" {
		rep := d.rep
		m.report = &rep
		// The report is the authority on windows; the events' points keep
		// their exact ± band when they agree with it.
		if len(rep.Windows) > 0 && len(rep.Windows) != len(m.windows) {
			m = m.fromWindows(rep.Windows, rep)
		}
		if c := rep.Choice(); c != nil && len(c.Results) != len(m.points) {
			m = m.fromChoice(rep)
		}
	}
	switch {
	case d.err == nil:
		m.status = runDone
	case stopped(d.err):
		m.status, m.err = runStopped, nil
	case m.report != nil && m.report.Partial:
		m.status = runStopped
	default:
		m.status = runFailed
	}
	return m
}

// fromWindows rebuilds the chart and latest event from a report's
// windows: the running PPL ± after each window is scoring's, exactly what
// the run's events said (a window-clustered ± for windows without
// nll_sum_sq).
func (m runModel) fromWindows(ws []scoring.WindowReport, rep scoring.Report) runModel {
	m.windows = slices.Clone(ws)
	slices.SortStableFunc(m.windows, func(a, b scoring.WindowReport) int { return a.Index - b.Index })
	pts, _ := scoring.RunningPPL(m.windows)
	m.points = m.points[:0:0]
	for i, w := range m.windows {
		run, u := pts[i].Perplexity, pts[i].Uncertainty
		m.points = append(m.points, chartPoint{Value: w.Perplexity, Run: run, Lo: run - u, Hi: run + u})
	}
	ev := scoring.Event{Kind: scoring.EventFinished, Method: rep.Method, Ctx: rep.Ctx, Stride: rep.Stride,
		WindowsTotal: rep.WindowsTotal, WindowsDone: rep.WindowsScored, ScoredDone: rep.ScoredTokens,
		PrefillDone: rep.PrefillTokens, Elapsed: time.Duration(rep.ElapsedSeconds * float64(time.Second)),
		MeanTokensPerSecond: rep.PrefillTokensPerSecond, MeanNLL: rep.MeanNLL, Perplexity: rep.Perplexity,
		PerplexityUncertainty: rep.PerplexityUncertainty, Partial: rep.Partial, Reason: rep.PartialReason}
	if m.last.WindowsTotal > 0 {
		ev.ScoredTotal, ev.PrefillTotal = m.last.ScoredTotal, m.last.PrefillTotal
	}
	if len(ws) > 0 && ws[len(ws)-1].Seconds > 0 {
		w := ws[len(ws)-1]
		ev.TokensPerSecond = float64(w.End-w.Begin) / w.Seconds
	}
	m.last = ev
	return m
}

// fromChoice rebuilds the accuracy chart and latest event from a
// multiple-choice report's results: the running figures after each task
// are scoring's, what the run's events said.
func (m runModel) fromChoice(rep scoring.Report) runModel {
	c := rep.Choice()
	total := max(c.Tasks, m.last.WindowsTotal) // a stopped run drew more than it scored
	running, _ := scoring.ChoiceRunning(c.Method, c.Results, total)
	m.points = m.points[:0:0]
	for _, p := range running {
		m.points = append(m.points, choicePoint(c.Method, p))
	}
	final := scoring.ChoiceProgress{TasksDone: c.Tasks, TasksTotal: total, Accuracy: c.Accuracy,
		CI95Low: c.CI95Low, CI95High: c.CI95High, Uncertainty: c.Uncertainty}
	if n := len(running); n > 0 {
		final.Correct = running[n-1].Correct
	}
	prefill := m.last.PrefillTotal
	if prefill == 0 && !rep.Partial {
		prefill = rep.PrefillTokens // a complete run prefilled every task
	}
	m.last = scoring.Event{Kind: scoring.EventFinished, Method: rep.Method, Ctx: rep.Ctx,
		WindowsTotal: total, WindowsDone: c.Tasks, PrefillTotal: prefill, PrefillDone: rep.PrefillTokens,
		Elapsed: time.Duration(rep.ElapsedSeconds * float64(time.Second)), MeanTokensPerSecond: rep.PrefillTokensPerSecond,
		TokensPerSecond: m.last.TokensPerSecond, Partial: rep.Partial, Reason: rep.PartialReason, Choice: &final}
	return m
}

// openedRun is a past run re-opened from the results folder.
func openedRun(e results.Entry) runModel {
	m := newRunModel("", e.Profile, "")
	if !e.HasProfile {
		m.profile = profiles.Profile{Name: strings.TrimSuffix(base(e.Report, ""), ".json"), Model: e.Run.Config.Model.Path, Text: e.Run.Text}
	}
	rep := e.Run
	m.report, m.opened = &rep, e.Report
	if rep.KLD != nil {
		m.base = rep.KLD.Base
	}
	if rep.Choice() != nil {
		m = m.fromChoice(rep)
	} else {
		m = m.fromWindows(rep.Windows, rep)
	}
	m.status = runDone
	if rep.Partial {
		m.status = runStopped
	}
	m.saved, m.files = true, results.Run{Report: e.Report, Base: e.Base}
	return m
}

// kld is the current KLD summary: the report's when finished, else the
// latest snapshot.
func (m runModel) kld() *scoring.KLDSummary {
	if m.report != nil && m.report.KLD != nil {
		return m.report.KLD.Summary()
	}
	return m.last.KLD
}

// --- drawing ---

// badge is the run state in one word, with pause folded in.
func (m runModel) badge(s Styles) string {
	word := strings.ToUpper(m.status.String())
	st := s.Badge
	switch {
	case m.paused:
		word = "PAUSED"
		st = s.Badge.Inherit(s.Warn)
	case m.status == runFailed:
		st = s.Badge.Inherit(s.Bad)
	case m.status == runStopped || m.status == runStopping:
		st = s.Badge.Inherit(s.Warn)
	}
	return st.Render(word)
}

// settings writes the profile's engine settings on one line.
func settings(p profiles.Profile) string {
	threads := "all"
	if p.Threads > 0 {
		threads = fmt.Sprint(p.Threads)
	}
	kv := p.KVCacheDType
	if p.KVLen > 0 {
		kv += fmt.Sprintf("×%d", p.KVLen)
	}
	parts := []string{
		fmt.Sprintf("batch %d/%d", p.BatchSize, p.UBatchSize),
		"kv " + kv,
		"threads " + threads,
		p.Backend,
		p.PrefillAttention,
	}
	if p.Device != "" {
		parts = append(parts, "device "+p.Device)
	}
	if p.StrictDeviceKernels {
		parts = append(parts, "strict")
	}
	if len(p.Kernels) > 0 {
		parts = append(parts, "kernels "+profiles.FormatKernels(p.Kernels))
	}
	return strings.Join(parts, " · ")
}

// windowsLine is method and window geometry.
func windowsLine(p profiles.Profile) string {
	s := fmt.Sprintf("%s ctx %d", p.Method, p.Ctx)
	if p.Method == "sliding" {
		stride := p.Stride
		if stride == 0 {
			stride = p.Ctx
		}
		s += fmt.Sprintf(" stride %d", stride)
	}
	if p.Chunks > 0 {
		s += fmt.Sprintf(" · first %d windows", p.Chunks)
	}
	return s
}

func inputName(p profiles.Profile) string {
	if p.Tokens != "" {
		return "tokens " + base(p.Tokens, "")
	}
	return "text " + base(p.Text, "demo text")
}

// headerView is the run view's top three lines.
func (m runModel) headerView(s Styles, w int) string {
	p := m.profile
	title := s.Title.Render("plexbench") + " " + s.Value.Render(p.Name)
	if p.Description != "" {
		title += s.Dim.Render(" — " + p.Description)
	}
	input, geometry := inputName(p), windowsLine(p)
	method, path, choice := m.choiceMode()
	if choice {
		input, geometry = method+" "+base(path, ""), m.tasksLine(method)
	}
	model := base(p.Model, "demo (stories260K)")
	if p.Server != "" {
		model = "served at " + p.Server
	}
	var about string
	if r := m.report; r != nil && r.Config.Model.Architecture != "" {
		if c := r.Choice(); c != nil {
			about = s.Dim.Render(fmt.Sprintf(" · %s, %d tasks in the file", r.Config.Model.Architecture, c.TasksInFile))
		} else {
			about = s.Dim.Render(fmt.Sprintf(" · %s, %d tokens", r.Config.Model.Architecture, r.Tokens))
		}
	}
	// A long model name gives way in its middle, keeping its type.
	rest := s.Dim.Render(" · ") + input + about
	name := results.MiddleEllipsis(model, max(16, w-6-lipgloss.Width(rest)))
	l2 := s.Label.Render("model ") + name + rest
	l3 := s.Label.Render(geometry) + s.Dim.Render(" · "+settings(p))
	if lipgloss.Width(l3) > w {
		// Too long for one line: the settings get their own.
		l3 = s.Label.Render(geometry) + "\n" + s.Dim.Render(settings(p))
	}
	return spread(title, m.badge(s), w) + "\n" + l2 + "\n" + l3
}

// tasksLine is a multiple-choice run's mode, context and tasks drawn.
func (m runModel) tasksLine(method string) string {
	ctx := m.profile.Ctx
	if m.last.Ctx > 0 {
		ctx = m.last.Ctx
	}
	l := fmt.Sprintf("%s ctx %d", method, ctx)
	if n := m.last.WindowsTotal; n > 0 {
		l += fmt.Sprintf(" · %d tasks drawn", n)
	}
	return l
}

// progressView is the bar with windows (tasks) done/total, elapsed and ETA.
func (m runModel) progressView(s Styles, w int) string {
	e := m.last
	frac := 0.0
	if e.WindowsTotal > 0 {
		frac = float64(e.WindowsDone) / float64(e.WindowsTotal)
	}
	since := time.Duration(m.idle) * time.Second
	right := fmt.Sprintf(" %d/%d %ss · %s", e.WindowsDone, e.WindowsTotal, m.unit(), clock(e.Elapsed+since))
	switch {
	case m.active() && e.ETA > 0:
		right += " · ETA " + clock(max(0, e.ETA-since))
	case m.status == runLoading:
		right = " loading the model…"
	case m.status == runWaiting:
		right = " waiting for A"
	}
	prefix := ""
	if m.label != "" {
		prefix = s.Value.Render(m.label) + " "
	}
	// A fixed width for the text keeps A's and B's bars the same length.
	right = padRight(right, 40)
	barW := max(10, w-lipgloss.Width(right)-len(m.label)-1)
	bar := progress.New(progress.WithFillCharacters('█', '░'), progress.WithoutPercentage(),
		progress.WithWidth(barW), progress.WithColors(s.BarFull.GetForeground()))
	bar.EmptyColor = s.BarEmpty.GetForeground()
	return prefix + bar.ViewAs(frac) + s.Dim.Render(right)
}

// statsView is the running perplexity and speed.
func (m runModel) statsView(s Styles) string {
	e := m.last
	ppl := "–"
	if e.Perplexity > 0 {
		ppl = pm(e.Perplexity, e.PerplexityUncertainty)
	}
	return s.Label.Render("PPL ") + s.Value.Render(ppl) +
		s.Label.Render("   tok/s ") + s.Value.Render(rate(e.TokensPerSecond)) + s.Dim.Render(" now · ") +
		s.Value.Render(rate(e.MeanTokensPerSecond)) + s.Dim.Render(" mean") +
		s.Dim.Render(fmt.Sprintf("   %d tokens scored", e.ScoredDone)) + m.keptView(s)
}

// choiceStatsView is a multiple-choice run's running accuracy, as the
// headless progress line writes it, and its prefill speed.
func (m runModel) choiceStatsView(s Styles, method string) string {
	e := m.last
	acc := s.Label.Render(scoring.ChoiceMetric(method)+" ") + s.Value.Render("–")
	if c := e.Choice; c != nil && c.TasksDone > 0 {
		acc = s.Value.Render(c.Figure(method)) + s.Dim.Render(fmt.Sprintf("   %d right of %d", c.Correct, c.TasksDone))
	}
	prefilled := fmt.Sprintf("   %d tokens through prefill", e.PrefillDone)
	if e.PrefillTotal > 0 {
		prefilled = fmt.Sprintf("   %d of %d tokens through prefill", e.PrefillDone, e.PrefillTotal)
	}
	speed := s.Label.Render("prefill tok/s ") + s.Value.Render(rate(e.TokensPerSecond)) + s.Dim.Render(" now · ") +
		s.Value.Render(rate(e.MeanTokensPerSecond)) + s.Dim.Render(" mean") + s.Dim.Render(prefilled) + m.keptView(s)
	return acc + "\n" + speed
}

// keptView is FlashPrefill's kept fraction of attention blocks so far;
// empty for dense prefill attention.
func (m runModel) keptView(s Styles) string {
	if m.profile.PrefillAttention != profiles.FlashPrefillV2 {
		return ""
	}
	kept := "–"
	if m.last.AttentionKept > 0 {
		kept = pct(m.last.AttentionKept, 1)
	}
	return s.Label.Render("   attn kept ") + s.Value.Render(kept)
}

// ruleMetAt is the window the stopping rule was met at (0: not met).
func (m runModel) ruleMetAt() int {
	switch {
	case m.report != nil && m.report.StoppedEarly != nil:
		return m.report.StoppedEarly.Windows
	case m.report != nil && m.report.StopRule != nil && m.report.StopRule.Met:
		return m.report.StopRule.Windows
	case m.last.Stop != nil:
		return m.last.Stop.MetAt
	}
	return 0
}

// stopView is where the profile's stopping rule stands; empty without one.
func (m runModel) stopView(s Styles) string {
	if !m.hasRule() {
		return ""
	}
	rule := []string{}
	if p := m.profile.StopAtPrecision; p > 0 {
		rule = append(rule, fmt.Sprintf("precision %g", p))
	}
	if d := m.profile.StopWhenDecided; d != "" {
		rule = append(rule, d)
	}
	l := s.Label.Render("stop rule ") + s.Value.Render(strings.Join(rule, " or ")) + s.Dim.Render(" · ")
	at := m.ruleMetAt()
	switch {
	case at > 0 && m.active() && m.keeping():
		return l + s.Warn.Render(fmt.Sprintf("met at window %d: going on to the last (c: stop now)", at))
	case at > 0 && m.report != nil && m.report.StoppedEarly != nil:
		return l + s.Good.Render(fmt.Sprintf("met at window %d: stopped there, complete over those windows", at))
	case at > 0:
		return l + s.Good.Render(fmt.Sprintf("met at window %d", at))
	case m.keeping():
		return l + s.Dim.Render(m.last.StopSummary()+" · goes on when met (c)")
	case m.last.Stop != nil:
		return l + s.Dim.Render(m.last.StopSummary()+" · stops when met (c)")
	}
	from := m.profile.StopMinWindows
	if from == 0 {
		from = scoring.DefaultStopMinWindows
	}
	return l + s.Dim.Render(fmt.Sprintf("may stop from window %d", from))
}

// kldView is the comparison against the base, two lines; empty without one.
func (m runModel) kldView(s Styles) string {
	if m.base == "" {
		return ""
	}
	k := m.kld()
	if k == nil {
		what := ": waiting for the first window"
		if !m.active() {
			what = ": no window compared"
		}
		return s.Label.Render("KLD ") + s.Dim.Render("vs "+base(m.base, "")+what) + "\n"
	}
	l1 := s.Label.Render("KLD ") + s.Value.Render(pm(k.MeanKLD, k.MeanKLDUncertainty)) +
		s.Dim.Render(fmt.Sprintf("  p50 %s  p90 %s  p99 %s  max %s", small(k.P50), small(k.P90), small(k.P99), small(k.Max)))
	l2 := s.Label.Render("same top ") + s.Value.Render(pctPM(k.SameTop, k.SameTopUncertainty)) +
		s.Label.Render("   Δp ") + s.Value.Render(signedPct(k.MeanDeltaP)) +
		s.Dim.Render("   vs base "+base(m.base, ""))
	if k.NonFinite > 0 {
		l2 += s.Warn.Render(fmt.Sprintf("   %d non-finite", k.NonFinite))
	}
	return l1 + "\n" + l2
}

// chartView is the per-window PPL chart.
func (m runModel) chartView(s Styles, w, h int) string {
	title := s.Label.Render("per-window PPL ") + s.ChartDot.Render("·") + s.Label.Render("  running PPL ") +
		s.ChartLine.Render("─") + s.Label.Render(" ± ") + s.ChartBand.Render("░")
	c := chart{Points: m.points, Total: m.last.WindowsTotal, Mark: m.ruleMetAt()}
	return title + "\n" + c.render(s, w, h-1)
}

// choiceChartView is the running accuracy over the tasks, in its
// interval or ± band.
func (m runModel) choiceChartView(s Styles, method string, w, h int) string {
	band := "±"
	if method == scoring.MethodHellaSwag {
		band = "Wilson 95%"
	}
	title := s.Label.Render("running "+scoring.ChoiceMetric(method)+" (%) ") + s.ChartLine.Render("─") + s.Label.Render(" "+band+" ") + s.ChartBand.Render("░")
	c := chart{Points: m.points, Total: m.last.WindowsTotal, Within: [2]float64{0, 100}}
	return title + "\n" + c.render(s, w, h-1)
}

// tableView lists the latest windows, newest first, in rows lines. Narrow
// terminals drop the token range and mean NLL columns.
func (m runModel) tableView(s Styles, w, rows int) string {
	withKLD := m.base != ""
	wide := w >= 90 || (!withKLD && w >= 72)
	var head string
	if wide {
		head = fmt.Sprintf("%6s %13s %6s %10s %9s %7s %8s", "window", "tokens", "scored", "PPL", "mean NLL", "secs", "tok/s")
	} else {
		head = fmt.Sprintf("%6s %6s %10s %7s %8s", "window", "scored", "PPL", "secs", "tok/s")
	}
	if withKLD {
		head += fmt.Sprintf(" %10s %7s", "KLD", "same")
	}
	lines := []string{s.Header.Render(head)}
	for i := len(m.windows) - 1; i >= 0 && len(lines) <= rows; i-- {
		win := m.windows[i]
		tps := 0.0
		if win.Seconds > 0 {
			tps = float64(win.End-win.Begin) / win.Seconds
		}
		var l string
		if wide {
			l = fmt.Sprintf("%6d %13s %6d %10s %9.5f %7.3f %8s", win.Index+1,
				fmt.Sprintf("%d–%d", win.Begin, win.End), win.Scored, ppl(win.Perplexity), win.MeanNLL, win.Seconds, rate(tps))
		} else {
			l = fmt.Sprintf("%6d %6d %10s %7.3f %8s", win.Index+1, win.Scored, ppl(win.Perplexity), win.Seconds, rate(tps))
		}
		if withKLD {
			kl, st := "–", "–"
			if win.MeanKLD != nil {
				kl = small(*win.MeanKLD)
			}
			if win.SameTop != nil {
				st = pct(*win.SameTop, 1)
			}
			l += fmt.Sprintf(" %10s %7s", kl, st)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// statusView is the line under the table: where the report went, or why
// the run ended.
func (m runModel) statusView(s Styles) string {
	switch {
	case m.err != nil:
		return s.Bad.Render("error: " + m.err.Error())
	case m.saveErr != nil:
		return s.Bad.Render("could not save the report: " + m.saveErr.Error())
	case m.opened != "":
		return s.Dim.Render("opened " + m.opened)
	case m.status == runStopping:
		return s.Warn.Render("stopping after the " + m.unit() + " in flight…")
	case m.status == runStopped && m.saved:
		return s.Warn.Render("stopped: ") + s.Dim.Render("partial report saved to "+m.files.Report)
	case m.status == runDone && m.saved:
		return s.Good.Render("done: ") + s.Dim.Render("report saved to "+m.files.Report)
	case m.paused:
		return s.Warn.Render("paused between " + m.unit() + "s: space resumes")
	}
	return ""
}

// view lays the run out in w × h cells.
func (m runModel) view(s Styles, w, h int) string {
	if method, _, ok := m.choiceMode(); ok {
		return m.choiceView(s, method, w, h)
	}
	top := []string{m.headerView(s, w), m.progressView(s, w), m.statsView(s)}
	if k := m.kldView(s); k != "" {
		top = append(top, strings.TrimRight(k, "\n"))
	}
	if st := m.stopView(s); st != "" {
		top = append(top, st)
	}
	fixed := 0
	for _, t := range top {
		fixed += strings.Count(t, "\n") + 1
	}
	status := m.statusView(s)
	left := h - fixed - 1 // the status line
	var body []string
	if m.status == runFailed && len(m.windows) == 0 {
		return m.failedView(s, top, w)
	}
	if left >= 8 {
		tableRows := max(2, left*2/5)
		chartH := left - tableRows - 1
		body = append(body, m.chartView(s, w, chartH), m.tableView(s, w, tableRows))
	} else if left >= 2 {
		body = append(body, m.tableView(s, w, left-1))
	}
	return strings.Join(append(append(top, body...), status), "\n")
}

// failedView is a run that failed before its first window (task): nothing
// to chart, the error is the content.
func (m runModel) failedView(s Styles, top []string, w int) string {
	msg := "the run failed before its first " + m.unit()
	if m.err != nil {
		msg = m.err.Error()
	}
	return strings.Join(append(top, "", s.Bad.Render(wrap(msg, w))), "\n")
}

// choiceView lays a multiple-choice run out in w × h cells: no PPL, KLD or
// windows, the accuracy and a small chart of it instead.
func (m runModel) choiceView(s Styles, method string, w, h int) string {
	top := []string{m.headerView(s, w), m.progressView(s, w), m.choiceStatsView(s, method)}
	if m.status == runFailed && len(m.points) == 0 {
		return m.failedView(s, top, w)
	}
	fixed := 0
	for _, t := range top {
		fixed += strings.Count(t, "\n") + 1
	}
	body := top
	if left := h - fixed - 1; left >= 4 { // the status line; a chart needs four
		body = append(body, m.choiceChartView(s, method, w, min(left, 16)))
	}
	return strings.Join(append(body, m.statusView(s)), "\n")
}
