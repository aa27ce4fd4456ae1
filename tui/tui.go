// Package tui is plexbench's workbench: a bubbletea app that runs a
// profile and shows it converge (run view), runs two profiles on the same
// text and compares them (A/B view), and lists past runs saved in the
// results folder (history). It drives scoring through a Runner the command
// line provides and never loads a model itself.
package tui

// tui.go owns the root model: the state enum, routing of messages to the
// child models (runModel, abModel, historyModel, worstModel) and the keys
// every view shares.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
	"plexbench/workbench"
)

// Config is what the app runs.
type Config struct {
	// Profiles: none runs profiles.Default(), one opens the run view, two
	// the A/B view (A first).
	Profiles []profiles.Profile
	// Base, when set, is a saved KLD base every run compares against.
	Base string
	// Compare says what an A/B compares; CompareEngine refuses profiles
	// that differ in model, text or windows.
	Compare profiles.Comparison
	// AllowTokenizerMismatch compares an A/B whose models' tokenizers or
	// token streams differ by bits per byte only (as ab's
	// --allow-tokenizer-mismatch) instead of refusing it.
	AllowTokenizerMismatch bool
	// ResultsDir is where runs are saved (default results.DefaultRoot).
	ResultsDir string
	// KeepBases makes every perplexity run record its KLD base and keep
	// it beside its record (NAME.kld: tens of MB each), for the history's
	// b key. Without it no run records one, but an A/B's A, whose base B
	// needs: that one lives in a temporary folder removed on Close.
	KeepBases bool
	Runner    Runner
	// Check, when set, checks a run before it starts (the command line
	// passes workbench.Check): a refusal is shown instead of starting it —
	// for an A/B, of either side before A starts — and its warnings are
	// shown under the view.
	Check func(workbench.Job) (workbench.Checked, error)
	// NoColor draws without colors (NO_COLOR).
	NoColor bool
	// Context is the app's parent context; nil is Background.
	Context context.Context
	// Sweep, when set, opens the sweep view instead: Sweeper runs it (the
	// TUI sets its progress and its keep-going rule), and Profiles are
	// not used. Its records go to Sweep.Root.
	Sweep   *workbench.SweepJob
	Sweeper Sweeper
	// Choice, when it names a task file, makes the run a multiple-choice
	// run of it (as score --hellaswag, --winogrande, --multiple-choice):
	// one profile, no Base, no sweep.
	Choice workbench.Choice
}

// view is the root's state.
type view int

const (
	viewRun view = iota
	viewAB
	viewHistory
	viewWorst
	viewSweep
)

// env is what child models need to start runs.
type env struct {
	runner     Runner
	ctx        context.Context // the app's: cancelled on quit
	ids        *int            // run ID source, shared by every child
	resultsDir string
	keepBases  bool // every run keeps its base beside its record (Config.KeepBases)
}

func (e env) newJob() *job {
	*e.ids++
	return newJob(e.ctx, *e.ids)
}

func (e env) spec(p profiles.Profile) runSpec {
	return runSpec{profile: p, recordBase: e.keepBases, resultsDir: e.resultsDir}
}

// Model is the root model.
type Model struct {
	cfg    Config
	env    env
	cancel context.CancelFunc
	styles Styles
	keys   keyMap
	help   help.Model

	width, height int
	view, back    view // back: where history and the worst list return to
	showHelp      bool

	run   runModel
	ab    abModel
	hist  historyModel
	worst worstModel // the worst-tokens list
	sweep sweepModel

	ticking      bool     // a clock tick is scheduled
	flash        string   // one-line message under the view
	quitWhenDone bool     // ctrl+c: quit once the stopped run is saved
	saved        []string // files this session wrote, for the exit summary
}

// profileSavedMsg reports the `s` key's save.
type profileSavedMsg struct {
	label string
	path  string
	same  bool // the file already held these settings
	err   error
}

// New checks cfg and builds the app. Two profiles that are not comparable
// are refused here, before anything runs.
func New(cfg Config) (Model, error) {
	if cfg.Runner == nil {
		return Model{}, errors.New("tui: no runner")
	}
	if cfg.Sweep != nil {
		if cfg.Sweeper == nil {
			return Model{}, errors.New("tui: a sweep and no sweeper")
		}
		// The sweep's profile is the one the history's b key runs.
		cfg.Profiles = []profiles.Profile{cfg.Sweep.Job.Profile}
	}
	if len(cfg.Profiles) > 2 {
		return Model{}, fmt.Errorf("tui: %d profiles; give one, or two for an A/B", len(cfg.Profiles))
	}
	if len(cfg.Profiles) == 0 {
		cfg.Profiles = []profiles.Profile{profiles.Default()}
	}
	for _, p := range cfg.Profiles {
		if err := p.Validate(); err != nil {
			return Model{}, err
		}
	}
	if len(cfg.Profiles) == 2 {
		if err := profiles.CheckComparable(cfg.Profiles[0], cfg.Profiles[1], cfg.Compare); err != nil {
			return Model{}, err
		}
	}
	if err := checkChoice(cfg); err != nil {
		return Model{}, err
	}
	if cfg.ResultsDir == "" {
		cfg.ResultsDir = results.DefaultRoot
	}
	parent := cfg.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	m := Model{
		cfg: cfg, cancel: cancel, styles: DefaultStyles(cfg.NoColor), keys: defaultKeys(), help: help.New(),
		env:  env{runner: cfg.Runner, ctx: ctx, ids: new(int), resultsDir: cfg.ResultsDir, keepBases: cfg.KeepBases},
		hist: historyModel{dir: cfg.ResultsDir},
	}
	m.help.Styles = m.styles.Help
	switch {
	case cfg.Sweep != nil:
		m.view = viewSweep
		m.sweep = newSweepModel(*cfg.Sweep)
	case len(cfg.Profiles) == 2:
		m.view = viewAB
		m.ab = newABModel(m.env, cfg.Profiles[0], cfg.Profiles[1], cfg.Base, cfg.AllowTokenizerMismatch)
		if cfg.Base == "" && !cfg.KeepBases {
			// A's base is B's and no one else's: a temporary file.
			dir, err := os.MkdirTemp("", "plexbench-ab-")
			if err != nil {
				cancel()
				return Model{}, fmt.Errorf("tui: %w", err)
			}
			m.ab.scratch = dir
		}
	default:
		m.view = viewRun
		m.run = newRunModel("", cfg.Profiles[0], cfg.Base)
		m.run.choice = cfg.Choice
	}
	return m, nil
}

// checkChoice refuses a task file the app cannot show: beside an A/B or a
// sweep (their views pair perplexity runs), or with what `score` refuses
// beside it (workbench.CheckChoice: a base, a text, several corpora, a
// file that does not read).
func checkChoice(cfg Config) error {
	c, ok := cfg.Choice.Mode()
	switch {
	case !ok:
		return nil
	case cfg.Sweep != nil:
		return fmt.Errorf("tui: %s: a sweep scores a text; score the task file in its own run", c.Flag)
	case len(cfg.Profiles) == 2:
		return fmt.Errorf("tui: %s: an A/B pairs perplexity runs; give one profile (plexbench ab pairs two task-file records)", c.Flag)
	}
	return workbench.CheckChoice(workbench.Job{Profile: cfg.Profiles[0], Compare: cfg.Base, Choice: cfg.Choice})
}

// Close abandons any run in flight and removes an A/B's temporary base;
// the app calls it on quit.
func (m Model) Close() {
	m.cancel()
	if m.ab.scratch != "" {
		os.RemoveAll(m.ab.scratch)
	}
}

// Init starts the first run.
func (m Model) Init() tea.Cmd {
	// Init cannot return the model, so the first run starts on a message.
	return func() tea.Msg { return startMsg{} }
}

// startMsg starts the configured run or A/B.
type startMsg struct{}

// tickMsg is the one-second clock that moves elapsed and ETA between
// progress events.
type tickMsg struct{}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return tickMsg{} })
}

// withClock schedules the clock if a run is in flight and none is.
func (m Model) withClock(cmd tea.Cmd) (Model, tea.Cmd) {
	if m.ticking || !m.active() {
		return m, cmd
	}
	m.ticking = true
	return m, tea.Batch(cmd, tick())
}

func (m Model) onTick() (Model, tea.Cmd) {
	m.ticking = false
	m.run, m.ab = m.run.tick(), m.ab.tick()
	m.sweep.live = m.sweep.live.tick()
	return m.withClock(nil)
}

// Update routes a message to the view it belongs to.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		return m, nil
	case startMsg:
		return m.start()
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case eventMsg, doneMsg, pairSavedMsg:
		return m.onRun(msg)
	case sweepEventMsg, sweepDoneMsg:
		return m.onSweep(msg)
	case tickMsg:
		return m.onTick()
	case historyMsg:
		m.hist = m.hist.loaded(msg)
	case traceMsg:
		return m.showWorst(msg.title, msg.trace, msg.err), nil
	case profileSavedMsg:
		m.flash = savedFlash(msg)
	}
	return m, nil
}

func (m Model) start() (Model, tea.Cmd) {
	var cmd tea.Cmd
	switch m.view {
	case viewSweep:
		m.sweep, cmd = m.sweep.start(m.cfg.Sweeper, m.env.newJob())
	case viewAB:
		if m.cfg.Check != nil {
			ws, err := workbench.CheckPair(m.ab.jobs(), m.cfg.Check)
			if err != nil {
				m.ab.refused = err
				return m, nil
			}
			m.flash = warnings(ws)
		}
		m.ab, cmd = m.ab.init()
	default:
		if m.cfg.Check != nil {
			c, err := m.cfg.Check(workbench.Job{Profile: m.run.profile, Compare: m.run.base, Choice: m.run.choice})
			if err != nil {
				m.run.status, m.run.err = runFailed, err
				return m, nil
			}
			m.flash = warnings(c.Warnings)
		}
		m.run, cmd = m.run.start(m.env.runner, m.env.newJob(), m.env.spec(m.run.profile))
	}
	return m.withClock(cmd)
}

// warnings is a check's warnings as the one line under the view.
func warnings(ws []string) string {
	if len(ws) == 0 {
		return ""
	}
	return "warning: " + strings.Join(ws, "; warning: ")
}

// onSweep hands the sweep its message; a model's record joins the
// session's saved files.
func (m Model) onSweep(msg tea.Msg) (Model, tea.Cmd) {
	var cmd tea.Cmd
	m.sweep, cmd = m.sweep.update(msg)
	if e, ok := msg.(sweepEventMsg); ok && e.ev.Kind == workbench.SweepModelDone {
		m.saved = append(m.saved, e.ev.Record)
	}
	if _, ok := msg.(sweepDoneMsg); ok && m.quitWhenDone && !m.active() {
		return m.quit()
	}
	return m, cmd
}

// onRun hands a run's message to both run owners; each drops what it
// does not own, so messages of replaced runs vanish.
func (m Model) onRun(msg tea.Msg) (Model, tea.Cmd) {
	var c1, c2 tea.Cmd
	m.run, c1 = m.run.update(msg)
	m.ab, c2 = m.ab.update(msg)
	switch msg := msg.(type) {
	case doneMsg:
		if msg.saved {
			m.saved = append(m.saved, msg.files.Report)
		}
	case pairSavedMsg:
		if msg.err == nil {
			m.saved = append(m.saved, msg.path)
		}
	}
	if m.quitWhenDone && !m.active() {
		if _, ok := msg.(doneMsg); ok {
			// What the runs still have to save (the A/B summary) is
			// written before the program ends.
			m, quit := m.quit()
			return m, tea.Sequence(tea.Batch(c1, c2), quit)
		}
	}
	return m, tea.Batch(c1, c2)
}

// SavedReports lists the reports (and A/B summaries) this session saved.
func (m Model) SavedReports() []string { return m.saved }

func (m Model) active() bool { return m.run.active() || m.ab.active() || m.sweep.active() }

func (m Model) quit() (Model, tea.Cmd) {
	m.cancel()
	return m, tea.Quit
}

// onKey handles the keys; the history view has its own.
func (m Model) onKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Force):
		if !m.active() || m.quitWhenDone {
			return m.quit()
		}
		m = m.stop()
		m.quitWhenDone = true
		m.flash = "stopping after the " + m.run.unit() + " in flight; the partial report is saved, then plexbench quits (ctrl+c again: quit now)"
		return m, nil
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		return m, nil
	}
	if m.showHelp && key.Matches(msg, k.Back) {
		m.showHelp = false
		return m, nil
	}
	switch m.view {
	case viewHistory:
		return m.onHistoryKey(msg)
	case viewWorst:
		var back bool
		if m.worst, back = m.worst.key(m.keys, msg); back {
			m.view = m.back
		}
		return m, nil
	}
	switch {
	case key.Matches(msg, k.Stop):
		if m.active() {
			m = m.stop()
			return m, nil
		}
		return m.quit()
	case key.Matches(msg, k.Keep):
		switch m.view {
		case viewSweep:
			m.sweep.live = m.sweep.live.toggleKeep()
		case viewAB:
			m.ab.a, m.ab.b = m.ab.a.toggleKeep(), m.ab.b.toggleKeep()
		default:
			m.run = m.run.toggleKeep()
		}
	case key.Matches(msg, k.Pause):
		switch m.view {
		case viewSweep:
			m.sweep.live = m.sweep.live.togglePause()
		case viewAB:
			m.ab = m.ab.togglePause()
		default:
			m.run = m.run.togglePause()
		}
	case key.Matches(msg, k.Save):
		return m, m.saveProfiles()
	case key.Matches(msg, k.Worst):
		return m.openWorst()
	case key.Matches(msg, k.History):
		m.back, m.view = m.view, viewHistory
		m.hist.loading = true
		return m, loadHistory(m.cfg.ResultsDir)
	}
	return m, nil
}

func (m Model) stop() Model {
	m.run, m.ab, m.sweep = m.run.stop(), m.ab.stop(), m.sweep.stop()
	return m
}

func (m Model) onHistoryKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	var act historyAction
	m.hist, act = m.hist.key(m.keys, msg)
	switch act {
	case histBack:
		m.view = m.back
	case histOpen, histSetBase:
		if m.active() {
			m.flash = "a run is in flight: go back (esc) and stop it (q) first"
			return m, nil
		}
		e := *m.hist.selected()
		if act == histOpen {
			if n := len(e.Run.Corpora); n > 0 {
				// The run view shows one run: the first corpus's.
				m.flash = fmt.Sprintf("a run of %d corpora: showing the first, %s (plexbench compare lists each)", n, base(e.Run.Corpora[0].Text, "?"))
				e.Run, e.HasProfile = e.Run.Corpora[0], false
			}
			m.run, m.view = openedRun(e), viewRun
			return m, nil
		}
		if e.Base == "" {
			m.flash = "that run kept no base (runs keep theirs with plexbench tui --keep-base)"
			return m, nil
		}
		// A new run of the first profile against the chosen run's base; a
		// partial base (its run stopped early) covers its complete windows.
		p := m.cfg.Profiles[0]
		m.flash = "new run against " + e.Base
		if n := e.Run.WindowsScored; e.Run.Partial && (p.Chunks <= 0 || p.Chunks > n) {
			p.Chunks = n
			m.flash += fmt.Sprintf(" (partial: its %d complete windows)", n)
		}
		m.run, m.view = newRunModel("", p, e.Base), viewRun
		var cmd tea.Cmd
		m.run, cmd = m.run.start(m.env.runner, m.env.newJob(), m.env.spec(m.run.profile))
		return m.withClock(cmd)
	}
	return m, nil
}

// saveProfiles is the `s` key: each shown profile goes back to the file it
// came from (when its settings changed) or to NAME.toml here.
func (m Model) saveProfiles() tea.Cmd {
	type item struct {
		label string
		p     profiles.Profile
	}
	var items []item
	switch m.view {
	case viewAB:
		items = []item{{"A", m.ab.a.profile}, {"B", m.ab.b.profile}}
	case viewSweep:
		items = []item{{"", m.sweep.profile()}}
	default:
		items = []item{{"", m.run.profile}}
	}
	var cmds []tea.Cmd
	for _, it := range items {
		cmds = append(cmds, func() tea.Msg {
			path, same, err := saveProfile(it.p)
			return profileSavedMsg{label: it.label, path: path, same: same, err: err}
		})
	}
	return tea.Batch(cmds...)
}

// saveProfile writes p to its source file, or to NAME.toml (NAME-2.toml, …)
// in the working directory when it has none. A source that already holds
// p's settings is left alone, comments and all.
func saveProfile(p profiles.Profile) (path string, same bool, err error) {
	if p.Source != "" {
		if disk, err := profiles.Load(p.Source); err == nil && len(profiles.Diff(disk, p)) == 0 &&
			disk.Name == p.Name && disk.Description == p.Description {
			return p.Source, true, nil
		}
		return p.Source, false, profiles.Save(p.Source, p.RelativeTo(filepath.Dir(p.Source)))
	}
	path = results.SafeName(p.Name) + ".toml"
	for i := 2; ; i++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i > 100 {
			return "", false, fmt.Errorf("too many files named %s", path)
		}
		path = fmt.Sprintf("%s-%d.toml", results.SafeName(p.Name), i)
	}
	return path, false, profiles.Save(path, p.RelativeTo("."))
}

func savedFlash(msg profileSavedMsg) string {
	who := "profile"
	if msg.label != "" {
		who = "profile " + msg.label
	}
	switch {
	case msg.err != nil:
		return who + ": " + msg.err.Error()
	case msg.same:
		return who + " unchanged in " + msg.path
	}
	return who + " saved to " + msg.path
}

// size is the terminal size, 80×24 until the first WindowSizeMsg.
func (m Model) size() (int, int) {
	if m.width <= 0 || m.height <= 0 {
		return 80, 24
	}
	return m.width, m.height
}

// View draws the current view, cropped to the terminal.
func (m Model) View() tea.View {
	w, h := m.size()
	var footer []string
	if m.flash != "" {
		footer = append(footer, m.styles.Warn.Render(m.flash))
	}
	var km help.KeyMap = runHelp{k: m.keys, running: m.active(), rule: m.run.hasRule() || m.ab.a.hasRule() || m.sweep.live.hasRule(),
		tasks: m.view == viewRun && m.run.scoresTasks()}
	switch {
	case m.showHelp:
		km = closeHelp{k: m.keys}
	case m.view == viewHistory:
		km = historyHelp{k: m.keys}
	case m.view == viewWorst:
		km = worstHelp{k: m.keys}
	}
	footer = append(footer, m.help.View(km))
	for i, l := range footer {
		footer[i] = truncate(l, w)
	}
	bodyH := h - strings.Count(strings.Join(footer, "\n"), "\n") - 1
	var body string
	switch {
	case m.showHelp:
		body = m.helpPage(w)
	case m.view == viewHistory:
		body = m.hist.view(m.styles, w, bodyH)
	case m.view == viewWorst:
		body = m.worst.view(m.styles, w, bodyH)
	case m.view == viewAB:
		body = m.ab.view(m.styles, w, bodyH)
	case m.view == viewSweep:
		body = m.sweep.view(m.styles, w, bodyH)
	default:
		body = m.run.view(m.styles, w, bodyH)
	}
	v := tea.NewView(fit(body, w, bodyH) + "\n" + strings.Join(footer, "\n"))
	v.AltScreen = true
	v.WindowTitle = "plexbench"
	return v
}

// helpPage explains what the numbers, the chart's marks and every key
// mean, each entry wrapped at spaces to the width under its label.
func (m Model) helpPage(w int) string {
	s := m.styles
	unit := m.run.unit()
	var lines []string
	entry := func(label, text string) {
		for i, l := range results.WrapWords(text, max(20, w-7), "") {
			if i == 0 {
				lines = append(lines, s.Value.Render(fmt.Sprintf("%-6s ", label))+l)
			} else {
				lines = append(lines, "       "+l)
			}
		}
	}
	// pair lays two keys on one line when the width allows.
	pair := func(k1, t1, k2, t2 string) {
		if k2 != "" && w >= 80 && len([]rune(t1)) <= 32 {
			lines = append(lines, s.Value.Render(fmt.Sprintf("%-6s ", k1))+fmt.Sprintf("%-33s", t1)+
				s.Value.Render(fmt.Sprintf("%-6s ", k2))+t2)
			return
		}
		entry(k1, t1)
		if k2 != "" {
			entry(k2, t2)
		}
	}
	lines = append(lines, s.Title.Render("plexbench")+s.Dim.Render(" — what you are looking at"), "")
	if m.run.scoresTasks() {
		entry("acc", "a task file's accuracy so far, as llama-perplexity prints it: HellaSwag's acc_norm in its Wilson 95% interval, Winogrande's and multiple choice's ± its standard error.")
		entry("chart", "─ the running accuracy after each task, ░ its interval or ± band.")
	} else {
		entry("PPL ±", "perplexity over the tokens scored so far; ± is llama.cpp's standard error of the mean NLL, carried to perplexity.")
		entry("KLD", "against a base: mean KL divergence over the base's top-k ids and the rest (± token-level), its percentiles, same top (both rank the same token first) and Δp (the change in the true token's probability).")
		entry("A/B", "A runs first and records a base; B is scored against it; ΔPPL's ± comes from the paired per-window differences.")
		if m.cfg.KeepBases {
			entry("bases", "each run keeps its KLD base beside its record (--keep-base).")
		} else {
			entry("bases", "a run keeps no KLD base unless the TUI starts with --keep-base (an A/B's A records one for B, removed on quit).")
		}
		entry("chart", "· one window's value, ─ the running value, ░ its ± band; ˄ ˅ a window above or below the drawn range; ┄ zero on a Δ chart; ┆ over ┴ the window a stop rule was met at.")
	}
	lines = append(lines, "")
	if m.view == viewHistory {
		pair("↑/↓", "choose a past run", "enter", "open it in the run view")
		entry("b", "start a new run of "+m.cfg.Profiles[0].Name+" against the chosen run's kept base")
		pair("esc", "back", "✗", "in done: stopped before its end")
	} else {
		pair("q/esc", "stop after the "+unit+" in flight", "space", "pause/resume between "+unit+"s")
		if m.run.scoresTasks() {
			entry("", "(nothing running: quit)")
		} else {
			pair("", "(nothing running: quit)", "c", "go on past a met stop rule")
		}
		pair("s", "save the profile(s)", "h", "history: past runs")
		if !m.run.scoresTasks() {
			pair("w", "worst tokens of the finished run", "t", "tokens ↔ windows (worst list)")
		}
	}
	pair("?", "this help", "ctrl+c", "stop, save, then quit")
	return strings.Join(lines, "\n")
}

// openWorst is the w key: the worst tokens of the finished run shown (B
// in an A/B), from its report's trace or, re-opened from history, the
// trace kept beside it.
func (m Model) openWorst() (Model, tea.Cmd) {
	r := m.run
	switch m.view {
	case viewAB:
		r = m.ab.b
	case viewSweep:
		r = m.sweep.live // the model in flight, or the last finished
	}
	title := r.profile.Name
	if r.base != "" {
		title += " vs " + filepath.Base(r.base)
	}
	switch {
	case r.active() || r.report == nil:
		m.flash = "the worst tokens are listed once the run has finished"
	case r.report.Choice() != nil:
		m.flash = "a task file's run scores answers, not a text's tokens: it has no worst tokens"
	case r.report.Trace != nil:
		return m.showWorst(title, r.report.Trace, nil), nil
	case r.opened != "":
		return m, loadTrace(title, r.opened, *r.report)
	default:
		m.flash = "this run kept no token trace"
	}
	return m, nil
}

// showWorst opens the worst-tokens view on tr, or says why not.
func (m Model) showWorst(title string, tr *scoring.TokenTrace, err error) Model {
	if err == nil {
		m.worst, err = newWorstModel(title, tr)
	}
	if err != nil {
		m.flash = err.Error()
		return m
	}
	if m.view != viewWorst {
		m.back, m.view = m.view, viewWorst
	}
	return m
}
