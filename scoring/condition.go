package scoring

// condition.go owns the threshold language shared by `ab --fail-if` and
// `score --stop-when-decided`: "name>value" (or >=, <, <=). What a name
// stands for is the caller's: an A/B summary's figure, or a run's
// statistic.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Condition is one "name op value" threshold.
type Condition struct {
	Text   string // as written, spaces removed
	Metric string
	Op     string // ">", ">=", "<" or "<="
	Value  float64
}

// ParseCondition parses s; its name must be one of names.
func ParseCondition(s string, names []string) (Condition, error) {
	t := strings.ReplaceAll(s, " ", "")
	i := strings.IndexAny(t, "<>")
	if i <= 0 {
		return Condition{}, fmt.Errorf("%q: want NAME>VALUE, NAME>=VALUE, NAME<VALUE or NAME<=VALUE", s)
	}
	c := Condition{Text: t, Metric: t[:i], Op: t[i : i+1]}
	rest := t[i+1:]
	if strings.HasPrefix(rest, "=") {
		c.Op += "="
		rest = rest[1:]
	}
	if !slices.Contains(names, c.Metric) {
		return Condition{}, fmt.Errorf("%q: unknown name %q (have %s)", s, c.Metric, strings.Join(names, ", "))
	}
	v, err := strconv.ParseFloat(rest, 64)
	if err != nil {
		return Condition{}, fmt.Errorf("%q: %q is not a number", s, rest)
	}
	c.Value = v
	return c, nil
}

// Holds reports whether x satisfies the condition.
func (c Condition) Holds(x float64) bool {
	switch c.Op {
	case ">":
		return x > c.Value
	case ">=":
		return x >= c.Value
	case "<":
		return x < c.Value
	}
	return x <= c.Value
}
