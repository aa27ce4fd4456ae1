package scoring

// seqstop.go owns the sequential stopping rules (`--stop-at-precision`,
// `--stop-when-decided`) and the anytime-valid interval they read: a
// confidence sequence over window values, which stays valid however often
// it is looked at (README, "Stopping early"). The run loop feeds it each
// finished window and asks, between windows, whether to stop.

import (
	"fmt"
	"math"
	"time"
)

// Stop rule defaults and constants.
const (
	DefaultStopMinWindows = 10
	// StopAlpha is the error rate of the stopping interval: 95% coverage
	// at every window at once.
	StopAlpha = 0.05
	// stopTuneWindows is where the mixture boundary is narrowest; it is
	// fixed in advance (a data-chosen one would void the guarantee).
	stopTuneWindows = 100
	// StopMethod names the interval in reports.
	StopMethod = "asymptotic confidence sequence (Gaussian mixture boundary, plug-in variance, window values; Waudby-Smith et al. 2024)"
)

// Statistics a stopping rule reads; ppl is read as mean_nll = ln PPL, and
// delta_ppl_percent, 100·(PPL/PPL_base − 1), as delta_mean_nll: the mean
// of the windows' paired differences NLL − base NLL, token by token against
// the base (ln(1 + Δ%/100)).
const (
	StatMeanKLD  = "mean_kld"
	StatMeanNLL  = "mean_nll"
	StatPPL      = "ppl"
	StatDeltaPPL = "delta_ppl_percent"
	StatDeltaNLL = "delta_mean_nll"
)

// StopNames are the names --stop-when-decided takes.
func StopNames() []string { return []string{StatMeanKLD, StatMeanNLL, StatPPL, StatDeltaPPL} }

// StopRule is a run's sequential stopping rule; the zero value is none.
// Both parts may be set: the run stops at whichever is met first.
type StopRule struct {
	// Precision stops once the interval's half-width is at most
	// Precision × the headline value (mean KLD when comparing, else ln PPL).
	Precision float64
	// MinWindows is the windows scored before either part may stop the
	// run (0: DefaultStopMinWindows).
	MinWindows int
	// Decide stops once the interval lies wholly on one side of its
	// threshold (names: StopNames).
	Decide *Condition
}

// Active reports whether the rule can stop a run.
func (s StopRule) Active() bool { return s.Precision > 0 || s.Decide != nil }

func (s StopRule) minWindows() int {
	if s.MinWindows <= 0 {
		return DefaultStopMinWindows
	}
	return s.MinWindows
}

// check validates the rule for a run that compares against a base or not.
func (s StopRule) check(comparing bool) error {
	switch {
	case s.Precision < 0 || math.IsNaN(s.Precision) || math.IsInf(s.Precision, 0):
		return badRequest("stop at precision %v: want a positive fraction", s.Precision)
	case s.MinWindows < 0 || s.MinWindows == 1:
		return badRequest("stop min windows %d: want 2 or more (0: %d)", s.MinWindows, DefaultStopMinWindows)
	case s.Decide != nil && (s.Decide.Metric == StatMeanKLD || s.Decide.Metric == StatDeltaPPL) && !comparing:
		return badRequest("stop when decided %s: %s needs a base to compare against", s.Decide.Text, s.Decide.Metric)
	case s.Decide != nil && s.Decide.Metric == StatDeltaPPL && s.Decide.Value <= -100:
		return badRequest("stop when decided %s: a perplexity change is above -100%%", s.Decide.Text)
	case s.Decide != nil && s.Decide.Metric == StatPPL && s.Decide.Value <= 0:
		return badRequest("stop when decided %s: a perplexity threshold must be positive", s.Decide.Text)
	}
	return nil
}

// StopReport is where a stopping rule stood when the run stopped (the
// report's stopped_early) or reached its last window (stop_rule).
type StopReport struct {
	Rule      string  `json:"rule"`      // "precision 0.1" or the condition
	Met       bool    `json:"met"`       // the rule was met (at Windows)
	Windows   int     `json:"windows"`   // windows scored at that point
	Statistic string  `json:"statistic"` // mean_kld, mean_nll or delta_mean_nll
	Value     float64 `json:"value"`     // the mean of the window values
	HalfWidth float64 `json:"half_width"`
	Method    string  `json:"method"`
	// Holds, for a decided rule: whether the condition holds (the
	// interval's side; the point value's when the rule was not met).
	Holds *bool `json:"holds,omitempty"`
}

// StopProgress is the stopping interval after a window, for live views.
type StopProgress struct {
	Statistic string  `json:"statistic"`
	Value     float64 `json:"value"`
	HalfWidth float64 `json:"half_width"`
	// Precision is the rule's target fraction (0: no precision rule);
	// WindowsLeft the windows it still needs at the current variance
	// (-1: unknown).
	Precision   float64 `json:"precision,omitempty"`
	WindowsLeft int     `json:"windows_left"`
	// MetAt is the windows scored when the rule was met (0: not yet): a
	// run that keeps going past it still says where.
	MetAt int `json:"met_at,omitempty"`
}

// StopSummary says where a precision rule stands after e's window, for
// progress lines and live views: the interval's half-width as a fraction
// of the value against the target and the windows and time it still needs
// at the current variance, or the window it was met at; "" without one.
func (e Event) StopSummary() string {
	s := e.Stop
	switch {
	case s == nil:
		return ""
	case s.MetAt > 0:
		return fmt.Sprintf("rule met at window %d", s.MetAt)
	case e.WindowsDone < 2 && s.HalfWidth == 0:
		// One window has no spread: its ± would read 0.
		return fmt.Sprintf("%s %.6g (± after 2 windows)", s.Statistic, s.Value)
	case s.Precision == 0:
		return fmt.Sprintf("%s %.6g ± %.3g", s.Statistic, s.Value, s.HalfWidth)
	}
	rel := math.Inf(1)
	if s.Value != 0 {
		rel = s.HalfWidth / math.Abs(s.Value)
	}
	left := "~? windows left"
	if s.WindowsLeft >= 0 {
		left = fmt.Sprintf("~%d window", s.WindowsLeft)
		if s.WindowsLeft != 1 {
			left += "s"
		}
		if d, ok := e.StopETA(); ok {
			left += fmt.Sprintf(" (%s)", d.Round(time.Second))
		}
		left += " left"
	}
	return fmt.Sprintf("±%.1f%% of %s (target %.1f%%), %s", 100*rel, s.Statistic, 100*s.Precision, left)
}

// StopETA is the time until a precision rule is met at the current
// variance and rate: the ETA of the windows left, scaled to the windows
// the rule still needs; false when unknown or met.
func (e Event) StopETA() (time.Duration, bool) {
	s := e.Stop
	left := e.WindowsTotal - e.WindowsDone
	if s == nil || s.MetAt > 0 || s.WindowsLeft < 0 || e.ETA <= 0 || left <= 0 {
		return 0, false
	}
	return time.Duration(float64(e.ETA) * float64(min(s.WindowsLeft, left)) / float64(left)), true
}

// windowSeq is the running mean and variance (Welford) of window values.
type windowSeq struct {
	n        int
	mean, m2 float64
}

func (q *windowSeq) add(x float64) {
	q.n++
	d := x - q.mean
	q.mean += d / float64(q.n)
	q.m2 += d * (x - q.mean)
}

// sd is the sample standard deviation (0 below two values).
func (q *windowSeq) sd() float64 {
	if q.n < 2 {
		return 0
	}
	return math.Sqrt(q.m2 / float64(q.n-1))
}

// halfWidth is the confidence sequence's half-width after q's values.
func (q *windowSeq) halfWidth() float64 { return CSHalfWidth(q.n, q.sd()) }

// CSHalfWidth is the half-width of the two-sided (1−StopAlpha) asymptotic
// confidence sequence after n window values of sample standard deviation
// sd: sd·√(2(nρ²+1)/(n²ρ²)·ln(√(nρ²+1)/α)), Robbins' Gaussian mixture
// boundary with ρ chosen to be narrowest at stopTuneWindows.
func CSHalfWidth(n int, sd float64) float64 {
	if n < 1 {
		return math.Inf(1)
	}
	la := -2 * math.Log(StopAlpha)
	rho2 := (la + math.Log(la+1)) / stopTuneWindows
	t := float64(n)
	return sd * math.Sqrt(2*(t*rho2+1)/(t*t*rho2)*math.Log(math.Sqrt(t*rho2+1)/StopAlpha))
}

// windowsFor is the fewest windows (≥ n) at which a sequence of standard
// deviation sd reaches half-width ≤ target; -1 when it would take over a
// billion.
func windowsFor(n int, sd, target float64) int {
	if CSHalfWidth(n, sd) <= target {
		return n
	}
	lo, hi := n, 2*n
	for CSHalfWidth(hi, sd) > target {
		if hi > 1e9 {
			return -1
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if CSHalfWidth(mid, sd) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// stopper applies a StopRule to a run's finished windows.
type stopper struct {
	rule     StopRule
	headline string // the precision rule's statistic
	nll, kld windowSeq
	delta    windowSeq   // paired NLL − base NLL, when comparing
	met      *StopReport // the first window at which the rule was met
}

// newStopper is rule's stopper; nil when the rule is none.
func newStopper(rule StopRule, comparing bool) *stopper {
	if !rule.Active() {
		return nil
	}
	s := &stopper{rule: rule, headline: StatMeanNLL}
	if comparing {
		s.headline = StatMeanKLD
	}
	return s
}

func (s *stopper) seq(stat string) *windowSeq {
	switch stat {
	case StatMeanKLD:
		return &s.kld
	case StatDeltaNLL:
		return &s.delta
	}
	return &s.nll
}

// add feeds one finished window, with its mean paired difference against
// the base when paired; the first window meeting the rule is kept.
func (s *stopper) add(wr *WindowReport, delta float64, paired bool) {
	s.nll.add(wr.MeanNLL)
	if wr.MeanKLD != nil {
		s.kld.add(*wr.MeanKLD)
	}
	if paired {
		s.delta.add(delta)
	}
	if s.met != nil {
		return
	}
	for _, r := range s.reports() {
		if r.Met {
			s.met = &r
			return
		}
	}
}

// reports is where each part of the rule stands now.
func (s *stopper) reports() []StopReport {
	var out []StopReport
	if s.rule.Precision > 0 {
		out = append(out, s.precision())
	}
	if s.rule.Decide != nil {
		out = append(out, s.decided())
	}
	return out
}

func (s *stopper) interval(stat string) (StopReport, *windowSeq) {
	q := s.seq(stat)
	return StopReport{Windows: q.n, Statistic: stat, Value: q.mean, HalfWidth: q.halfWidth(), Method: StopMethod}, q
}

// precision: the headline's half-width against Precision × its value.
func (s *stopper) precision() StopReport {
	r, q := s.interval(s.headline)
	r.Rule = fmt.Sprintf("precision %g", s.rule.Precision)
	r.Met = q.n >= s.rule.minWindows() && r.HalfWidth <= s.rule.Precision*math.Abs(r.Value)
	return r
}

// decided: the interval against the condition's threshold (a perplexity
// threshold read on ln PPL, a perplexity change on the paired difference
// of ln PPL; both maps keep the order).
func (s *stopper) decided() StopReport {
	c := *s.rule.Decide
	stat := c.Metric
	switch stat {
	case StatPPL:
		stat, c.Value = StatMeanNLL, math.Log(c.Value)
	case StatDeltaPPL:
		stat, c.Value = StatDeltaNLL, math.Log1p(c.Value/100)
	}
	r, q := s.interval(stat)
	r.Rule = s.rule.Decide.Text
	lo, hi := c.Holds(r.Value-r.HalfWidth), c.Holds(r.Value+r.HalfWidth)
	r.Met = q.n >= s.rule.minWindows() && lo == hi
	holds := c.Holds(r.Value)
	if r.Met {
		holds = lo
	}
	r.Holds = &holds
	return r
}

// progress is the stopping interval now, for the window's event.
func (s *stopper) progress() *StopProgress {
	stat := s.headline
	if s.rule.Precision == 0 {
		stat = s.decided().Statistic
	}
	r, q := s.interval(stat)
	p := &StopProgress{Statistic: stat, Value: r.Value, HalfWidth: r.HalfWidth, WindowsLeft: -1}
	if s.met != nil {
		p.MetAt = s.met.Windows
	}
	if s.rule.Precision > 0 && q.n >= 2 {
		p.Precision = s.rule.Precision
		if n := windowsFor(max(q.n, s.rule.minWindows()), q.sd(), s.rule.Precision*math.Abs(q.mean)); n >= 0 {
			p.WindowsLeft = n - q.n
		}
	}
	return p
}

// finish fills the report's stop fields: stopped_early when the rule
// stopped the run before its last window, else stop_rule (how the rule
// stood at the last window; the decided part when set, as it carries the
// answer), with a warning when it was not met.
func (s *stopper) finish(rep *Report, early bool) {
	if early {
		rep.StoppedEarly = s.met
		return
	}
	if s.met != nil {
		rep.StopRule = s.met
		return
	}
	rs := s.reports()
	r := rs[len(rs)-1]
	rep.StopRule = &r
	rep.Warnings = append(rep.Warnings, fmt.Sprintf("stop rule %s not met after all %d windows (%s %.6g ± %.3g)",
		r.Rule, r.Windows, r.Statistic, r.Value, r.HalfWidth))
}
