package profiles

// Diffing profiles and the comparability guard for A/B runs.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Change is one setting that differs between two profiles.
type Change struct {
	Key  string // TOML key
	A, B string // the values, paths resolved
}

func (c Change) String() string { return fmt.Sprintf("%s: %s → %s", c.Key, show(c.A), show(c.B)) }

func show(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// Diff lists the settings that differ between a and b, in file order. Name
// and description are labels, not settings, and are not compared. Paths are
// compared resolved, each against its own profile's file.
func Diff(a, b Profile) []Change {
	a, b = a.Resolve(), b.Resolve()
	var out []Change
	for i := range fields {
		f := &fields[i]
		if f.alias {
			continue
		}
		va, vb := f.get(&a), f.get(&b)
		if va != vb {
			out = append(out, Change{Key: f.key, A: va, B: vb})
		}
	}
	return out
}

// Comparison says what an A/B run compares, which decides what the profiles
// may differ in.
type Comparison int

const (
	// CompareEngine compares engine settings on one model: the model, text
	// and windows must be the same.
	CompareEngine Comparison = iota
	// CompareModels compares two models (quantizations, say) on one text:
	// only the text and windows must be the same.
	CompareModels
)

// ParseComparison reads a --compare value: engine, or models (model).
func ParseComparison(s string) (Comparison, error) {
	switch s {
	case "engine":
		return CompareEngine, nil
	case "models", "model":
		return CompareModels, nil
	}
	return 0, fmt.Errorf("--compare %q: want engine or models", s)
}

// ErrNotComparable is wrapped by CheckComparable's errors.
var ErrNotComparable = errors.New("profiles are not comparable")

// CheckComparable refuses an A/B whose profiles score different tokens (text,
// method, ctx, stride, chunk limit) or, for an engine comparison, run
// different model files. Files are compared by content, so two paths to one
// model pass.
func CheckComparable(a, b Profile, kind Comparison) error {
	a, b = a.Resolve(), b.Resolve()
	var why []string
	if a.Text != b.Text || a.Tokens != b.Tokens {
		fa, fb := a.Text+a.Tokens, b.Text+b.Tokens
		same, err := sameContent(fa, fb)
		if err != nil {
			return err
		}
		if !same || (a.Text == "") != (b.Text == "") {
			why = append(why, fmt.Sprintf("text (%s vs %s)", inputName(a), inputName(b)))
		}
	}
	if !slices.Equal(a.Corpora, b.Corpora) {
		why = append(why, fmt.Sprintf("corpora (%d texts vs %d)", len(a.Corpora), len(b.Corpora)))
	}
	if a.Method != b.Method {
		why = append(why, fmt.Sprintf("method (%s vs %s)", a.Method, b.Method))
	}
	if a.Ctx != b.Ctx {
		why = append(why, fmt.Sprintf("ctx (%d vs %d)", a.Ctx, b.Ctx))
	}
	if a.Stride != b.Stride {
		why = append(why, fmt.Sprintf("stride (%d vs %d)", a.Stride, b.Stride))
	}
	if a.Chunks != b.Chunks {
		why = append(why, fmt.Sprintf("chunks (%d vs %d)", a.Chunks, b.Chunks))
	}
	if kind == CompareEngine && a.Model != b.Model {
		same, err := sameContent(a.Model, b.Model)
		if err != nil {
			return err
		}
		if !same {
			why = append(why, fmt.Sprintf("model (%s vs %s); to compare two models on one text, ask for a model comparison", orDemo(a.Model), orDemo(b.Model)))
		}
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s and %s differ in %s", ErrNotComparable, a.Name, b.Name, strings.Join(why, ", "))
}

func inputName(p Profile) string {
	switch {
	case p.Tokens != "":
		return "tokens " + p.Tokens
	case p.Text != "":
		return p.Text
	}
	return "the demo text"
}

func orDemo(s string) string {
	if s == "" {
		return "the demo model"
	}
	return s
}

// sameContent reports whether two files hold the same bytes. Empty names
// (the embedded demo files) equal only each other.
func sameContent(a, b string) (bool, error) {
	if a == b {
		return true, nil
	}
	if a == "" || b == "" {
		return false, nil
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	if os.SameFile(sa, sb) {
		return true, nil
	}
	if sa.Size() != sb.Size() {
		return false, nil
	}
	ha, err := fileHash(a)
	if err != nil {
		return false, err
	}
	hb, err := fileHash(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ha, hb), nil
}

func fileHash(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h.Sum(nil), nil
}
