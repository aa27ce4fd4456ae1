package scoring

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// simulateStops runs the stopping rule rule on runs sequences of
// log-normal window values (ln X ~ N(0, sigma²)) of at most horizon
// windows and returns how often the interval at the stopping time (or at
// the horizon, for runs that never stop) covered the true mean, for the
// confidence sequence and for the naive fixed-n interval x̄ ± 1.96·se
// peeked at after every window under the same rule.
func simulateStops(runs, horizon int, sigma float64, stop func(n int, mean, hw float64) bool) (cs, naive float64) {
	rng := rand.New(rand.NewPCG(23, 1))
	mu := math.Exp(sigma * sigma / 2)
	var csCov, naiveCov int
	for range runs {
		var q windowSeq
		csDone, naiveDone := false, false
		for q.n < horizon && !(csDone && naiveDone) {
			q.add(math.Exp(sigma * rng.NormFloat64()))
			hw, nhw := q.halfWidth(), 1.96*q.sd()/math.Sqrt(float64(q.n))
			if !csDone && (stop(q.n, q.mean, hw) || q.n == horizon) {
				csDone = true
				csCov += covers(q.mean, hw, mu)
			}
			if !naiveDone && (stop(q.n, q.mean, nhw) || q.n == horizon) {
				naiveDone = true
				naiveCov += covers(q.mean, nhw, mu)
			}
		}
	}
	return float64(csCov) / float64(runs), float64(naiveCov) / float64(runs)
}

func covers(mean, hw, mu float64) int {
	if math.Abs(mean-mu) <= hw {
		return 1
	}
	return 0
}

// TestStopCoverage: the interval a stopping rule reads covers the true
// mean at the stopping time at least 95% of the time on heavy-tailed
// (log-normal) window values, while the naive interval, peeked at after
// every window under the same rule, does not.
func TestStopCoverage(t *testing.T) {
	runs := 4000
	if testing.Short() {
		runs = 2000
	}
	const minWindows = DefaultStopMinWindows
	for _, c := range []struct {
		name         string
		sigma        float64
		horizon      int
		stop         func(n int, mean, hw float64) bool
		naiveBelowTo float64 // the naive interval's coverage must be below this
	}{
		// --stop-at-precision 0.1 on window values as spread as real
		// per-window KLDs (ln sd 0.3) and far heavier (ln sd 1).
		{"precision/sigma0.35", 0.35, 2000, func(n int, m, hw float64) bool { return n >= minWindows && hw <= 0.1*m }, 0.95},
		{"precision/sigma1", 1, 2000, func(n int, m, hw float64) bool { return n >= minWindows && hw <= 0.1*m }, 0.95},
		// --stop-when-decided with the threshold a little above the true
		// mean: stopping on the wrong side is a miss.
		{"decided/sigma0.35", 0.35, 1000, func(n int, m, hw float64) bool {
			thr := 1.03 * math.Exp(0.35*0.35/2)
			return n >= minWindows && (m+hw < thr || m-hw > thr)
		}, 0.9},
	} {
		cs, naive := simulateStops(runs, c.horizon, c.sigma, c.stop)
		t.Logf("%s: %d runs: coverage at the stop: confidence sequence %.4f, naive %.4f", c.name, runs, cs, naive)
		if cs < 0.95 {
			t.Errorf("%s: the confidence sequence covered the mean in %.4f of runs, want ≥ 0.95", c.name, cs)
		}
		if naive >= c.naiveBelowTo {
			t.Errorf("%s: the naive interval covered the mean in %.4f of runs; peeking should push it below %.2f", c.name, naive, c.naiveBelowTo)
		}
	}
}

// TestStopKeepGoing: a precision rule stops the run at the first window
// meeting it; the same run with KeepGoing true scores every window, its
// events say where the rule was met, its report keeps that moment as
// stop_rule (met, same windows and value) with no stopped_early, and the
// windows up to it equal the stopped run's.
func TestStopKeepGoing(t *testing.T) {
	f := newFake(64, 8, 5, 0)
	run := func(keep bool) (Report, []Event) {
		var evs []Event
		req := Request{Tokens: randomTokens(6, 3000, 64), Ctx: 100, Stop: StopRule{Precision: 0.05, MinWindows: 3},
			KeepGoing: func() bool { return keep },
			Progress:  func(e Event) { evs = append(evs, e) }}
		rep, err := Run(context.Background(), f, req)
		if err != nil {
			t.Fatal(err)
		}
		return rep, evs
	}
	stopped, _ := run(false)
	kept, evs := run(true)
	s := stopped.StoppedEarly
	if s == nil || !s.Met || stopped.WindowsScored >= stopped.WindowsTotal {
		t.Fatalf("the rule did not stop the run early: %+v", stopped.StoppedEarly)
	}
	if kept.StoppedEarly != nil || kept.WindowsScored != kept.WindowsTotal || kept.StopRule == nil || *kept.StopRule != *s {
		t.Fatalf("kept going: stopped_early %+v, %d of %d windows, stop_rule %+v (want %+v)",
			kept.StoppedEarly, kept.WindowsScored, kept.WindowsTotal, kept.StopRule, s)
	}
	for i, w := range stopped.Windows {
		if w.NLLSum != kept.Windows[i].NLLSum {
			t.Fatalf("window %d differs between the runs", i)
		}
	}
	metAt := 0
	for _, e := range evs {
		if e.Kind != EventWindowDone {
			continue
		}
		if e.Stop == nil || (e.WindowsDone < s.Windows) != (e.Stop.MetAt == 0) || (e.Stop.MetAt != 0 && e.Stop.MetAt != s.Windows) {
			t.Fatalf("window %d's event: stop %+v, rule met at %d", e.WindowsDone, e.Stop, s.Windows)
		}
		if _, ok := e.StopETA(); ok && e.Stop.MetAt != 0 {
			t.Fatal("a stop ETA after the rule was met")
		}
		metAt = e.Stop.MetAt
	}
	if metAt != s.Windows {
		t.Fatalf("last event met_at %d, want %d", metAt, s.Windows)
	}
}

// TestStopSummaryOneWindow: after one window the stopping interval has no
// width yet; the summary says when it will instead of "± 0".
func TestStopSummaryOneWindow(t *testing.T) {
	e := Event{WindowsDone: 1, Stop: &StopProgress{Statistic: StatMeanKLD, Value: 0.0610654, WindowsLeft: -1}}
	if got, want := e.StopSummary(), "mean_kld 0.0610654 (± after 2 windows)"; got != want {
		t.Fatalf("one window: %q, want %q", got, want)
	}
	e.WindowsDone, e.Stop.HalfWidth = 2, 0.05
	if got, want := e.StopSummary(), "mean_kld 0.0610654 ± 0.05"; got != want {
		t.Fatalf("two windows: %q, want %q", got, want)
	}
}
