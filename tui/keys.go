package tui

// keys.go owns the key bindings and the help each view shows.

import "charm.land/bubbles/v2/key"

type keyMap struct {
	Stop    key.Binding
	Pause   key.Binding
	Save    key.Binding
	History key.Binding
	Help    key.Binding
	Quit    key.Binding
	Force   key.Binding
	Keep    key.Binding // a stopping rule met: go on to the last window

	Up, Down key.Binding
	Open     key.Binding
	SetBase  key.Binding
	Back     key.Binding

	Worst  key.Binding
	Toggle key.Binding
}

func defaultKeys() keyMap {
	return keyMap{
		Stop:    key.NewBinding(key.WithKeys("q", "esc"), key.WithHelp("q", "stop")),
		Pause:   key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "pause")),
		Save:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "save profile")),
		History: key.NewBinding(key.WithKeys("h"), key.WithHelp("h", "history")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q", "esc"), key.WithHelp("q", "quit")),
		Force:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "stop and quit")),
		Keep:    key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "keep going past the stop rule")),
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Open:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		SetBase: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "new run against its base")),
		Back:    key.NewBinding(key.WithKeys("esc", "q", "h"), key.WithHelp("esc", "back")),
		Worst:   key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "worst tokens")),
		Toggle:  key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "tokens/windows")),
	}
}

// runHelp is the help of the run and A/B views; running says whether a
// run is in flight (q stops it) or not (q quits), rule whether it has a
// stopping rule (c keeps going past it), tasks whether it scores a task
// file (it has no worst tokens for w).
type runHelp struct {
	k                    keyMap
	running, rule, tasks bool
}

func (h runHelp) ShortHelp() []key.Binding {
	if h.running && h.rule {
		return []key.Binding{h.k.Stop, h.k.Pause, h.k.Keep, h.k.Save, h.k.History, h.k.Help}
	}
	if h.running {
		return []key.Binding{h.k.Stop, h.k.Pause, h.k.Save, h.k.History, h.k.Help}
	}
	if h.tasks {
		return []key.Binding{h.k.Quit, h.k.Save, h.k.History, h.k.Help}
	}
	return []key.Binding{h.k.Quit, h.k.Worst, h.k.Save, h.k.History, h.k.Help}
}

func (h runHelp) FullHelp() [][]key.Binding {
	first := []key.Binding{h.k.Quit, h.k.Force}
	if h.running {
		first = []key.Binding{h.k.Stop, h.k.Pause, h.k.Force}
		if h.rule {
			first = append(first, h.k.Keep)
		}
	}
	if !h.running && !h.tasks {
		first = append(first, h.k.Worst)
	}
	return [][]key.Binding{first, {h.k.Save, h.k.History, h.k.Help}}
}

// worstHelp is the help of the worst-tokens view.
type worstHelp struct{ k keyMap }

func (h worstHelp) ShortHelp() []key.Binding {
	return []key.Binding{h.k.Up, h.k.Down, h.k.Toggle, h.k.Back}
}

func (h worstHelp) FullHelp() [][]key.Binding {
	return [][]key.Binding{{h.k.Up, h.k.Down}, {h.k.Toggle, h.k.Back, h.k.Help}}
}

// historyHelp is the help of the history view.
type historyHelp struct{ k keyMap }

func (h historyHelp) ShortHelp() []key.Binding {
	return []key.Binding{h.k.Up, h.k.Down, h.k.Open, h.k.SetBase, h.k.Back}
}

func (h historyHelp) FullHelp() [][]key.Binding {
	return [][]key.Binding{{h.k.Up, h.k.Down, h.k.Open}, {h.k.SetBase, h.k.Back, h.k.Help}}
}

// closeHelp is the footer while the help page is open.
type closeHelp struct{ k keyMap }

func (h closeHelp) ShortHelp() []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("?", "esc"), key.WithHelp("?/esc", "close help"))}
}

func (h closeHelp) FullHelp() [][]key.Binding { return [][]key.Binding{h.ShortHelp()} }
