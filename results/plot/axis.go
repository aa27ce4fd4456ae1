package plot

// axis.go owns axes: their range, nice ticks (1-2-5 steps on a linear
// axis, decades on a log one) and the data-to-pixel mapping.

import (
	"math"
	"strconv"
	"strings"
)

// Axis is one axis of a chart. Min and Max are set by Layout from the
// data unless Fixed.
type Axis struct {
	Label    string
	Log      bool
	Min, Max float64
	Fixed    bool // keep Min and Max as given
	// ZeroBased pulls a linear axis down to 0 when the data are all
	// positive (KLD, counts).
	ZeroBased bool
}

// Tick is one tick: its value, its label (a log axis labels 10^Sup) and
// whether it is labelled at all.
type Tick struct {
	V      float64
	Label  string
	Sup    string
	Major  bool
	OnGrid bool
}

// NiceStep is the 1-2-5 step (…, 0.1, 0.2, 0.5, 1, 2, 5, 10, …) that cuts
// span into at most n intervals, the smallest such.
func NiceStep(span float64, n int) float64 {
	if !(span > 0) || n < 1 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * mag; s >= raw*(1-1e-9) {
			return s
		}
	}
	return 10 * mag
}

// LinearTicks are the multiples of NiceStep(hi−lo, n) in [lo, hi],
// labelled with just enough decimals for the step.
func LinearTicks(lo, hi float64, n int) []Tick {
	if !(hi > lo) {
		return nil
	}
	step := NiceStep(hi-lo, n)
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var out []Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, Tick{V: v, Label: formatLinear(v, dec, step), Major: true, OnGrid: true})
	}
	return out
}

// formatLinear writes v with dec decimals; very large and very small
// steps use an exponent form with as many digits as the step needs.
func formatLinear(v float64, dec int, step float64) string {
	var s string
	switch {
	case v == 0:
		s = "0"
	case step >= 1e6 || step < 1e-4:
		prec := max(0, int(math.Floor(math.Log10(math.Abs(v))+1e-9)-math.Floor(math.Log10(step)+1e-9)))
		s = strconv.FormatFloat(v, 'e', prec, 64)
	default:
		s = strconv.FormatFloat(v, 'f', dec, 64)
	}
	return strings.Replace(s, "-", "−", -1)
}

// LogTicks are the decades 10^k in [lo, hi] (labelled 10 with superscript
// k; every second or more when there are many), with unlabelled minor
// ticks at 2..9 × 10^k when the range spans few decades. lo must be > 0.
func LogTicks(lo, hi float64, n int) []Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	k0, k1 := int(math.Ceil(math.Log10(lo)-1e-9)), int(math.Floor(math.Log10(hi)+1e-9))
	every := 1
	for (k1-k0)/every+1 > max(n, 2) {
		every++
	}
	var out []Tick
	for k := int(math.Floor(math.Log10(lo) + 1e-9)); k <= k1; k++ {
		d := math.Pow(10, float64(k))
		if k >= k0 {
			t := Tick{V: d, OnGrid: true}
			if (k-k0)%every == 0 {
				t.Major, t.Label, t.Sup = true, "10", strings.Replace(strconv.Itoa(k), "-", "−", 1)
			}
			out = append(out, t)
		}
		if k1-k0 <= 6 {
			for m := 2; m <= 9; m++ {
				if v := float64(m) * d; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					out = append(out, Tick{V: v})
				}
			}
		}
	}
	return out
}

// ticks are the axis's ticks for a length of px pixels.
func (a *Axis) ticks(px float64, horizontal bool) []Tick {
	per := 60.0
	if horizontal {
		per = 90
	}
	n := max(2, int(px/per))
	if a.Log {
		return LogTicks(a.Min, a.Max, n+2)
	}
	return LinearTicks(a.Min, a.Max, n)
}

// fit sets Min and Max from the data range [lo, hi] (finite; positive on
// a log axis): padded by pad of the span, a linear axis snapped out to
// its tick step, a log axis to whole decades when that does not widen it
// past three times its padded span.
func (a *Axis) fit(lo, hi float64, pad float64, px float64, horizontal bool) {
	if a.Fixed {
		return
	}
	if a.Log {
		if !(lo > 0) {
			lo, hi = 1e-3, 1
		}
		l0, l1 := math.Log10(lo), math.Log10(hi)
		if l1-l0 < 1e-9 {
			l0, l1 = l0-0.5, l1+0.5
		}
		p := (l1 - l0) * pad
		l0, l1 = l0-p, l1+p
		f0, f1 := math.Floor(l0+1e-9), math.Ceil(l1-1e-9)
		if f1-f0 <= 3*(l1-l0) || f1-f0 <= 2 {
			l0, l1 = f0, f1
		}
		a.Min, a.Max = math.Pow(10, l0), math.Pow(10, l1)
		return
	}
	if a.ZeroBased && lo > 0 {
		lo = 0
	}
	if hi-lo < 1e-12*math.Max(1, math.Abs(hi)) {
		d := math.Max(math.Abs(hi)*0.05, 1e-9)
		lo, hi = lo-d, hi+d
	}
	p := (hi - lo) * pad
	if !(a.ZeroBased && lo == 0) {
		lo -= p
	}
	hi += p
	per := 60.0
	if horizontal {
		per = 90
	}
	step := NiceStep(hi-lo, max(2, int(px/per)))
	a.Min, a.Max = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
}

// pos maps v to [p0, p1] (p0 at Min).
func (a *Axis) pos(v, p0, p1 float64) float64 {
	var t float64
	if a.Log {
		t = (math.Log10(v) - math.Log10(a.Min)) / (math.Log10(a.Max) - math.Log10(a.Min))
	} else {
		t = (v - a.Min) / (a.Max - a.Min)
	}
	return p0 + t*(p1-p0)
}
