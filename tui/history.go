// history.go owns the results folder: every finished or stopped run is
// saved there as its JSON report (scoring's, unchanged), the profile it ran
// (.toml) and, when the run completed, its KLD base (.kld), all under one
// name built from the profile, the model and a digest of the settings. It
// also lists past runs for the history view.
package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/scoring/outfile"
)

// DefaultResultsDir is where runs are saved unless configured otherwise.
const DefaultResultsDir = "plexbench-results"

// RunName is the stem shared by a run's files: profile, model file stem,
// settings digest and start time, e.g. "f16kv_stories260K-f32_3fa1c2d4e5b6_20250101-120000".
func RunName(p profiles.Profile, start time.Time) string {
	model := strings.TrimSuffix(base(p.Model, "demo"), filepath.Ext(p.Model))
	return strings.Join([]string{safeName(p.Name), safeName(model), p.Digest(),
		start.Format("20060102-150405")}, "_")
}

// safeName keeps letters, digits, '.', '-'; anything else becomes '-'.
func safeName(s string) string {
	if s == "" {
		return "unnamed"
	}
	b := []byte(s)
	for i, c := range b {
		ok := c == '.' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// runFiles are the paths of one saved run.
type runFiles struct {
	Report  string // .json
	Profile string // .toml
	Base    string // .kld, recorded while the run went; kept marked partial if it stopped early
}

// newRunFiles picks unused paths in dir for a run starting now.
func newRunFiles(dir string, p profiles.Profile, start time.Time) (runFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runFiles{}, fmt.Errorf("results folder: %w", err)
	}
	stem := filepath.Join(dir, RunName(p, start))
	for i := 2; ; i++ {
		if _, err := os.Stat(stem + ".json"); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i > 100 {
			return runFiles{}, fmt.Errorf("results folder %s: too many runs named %s", dir, filepath.Base(stem))
		}
		stem = filepath.Join(dir, fmt.Sprintf("%s-%d", RunName(p, start), i))
	}
	return runFiles{Report: stem + ".json", Profile: stem + ".toml", Base: stem + ".kld"}, nil
}

// save writes the run's report and profile. The profile's paths are
// rewritten relative to the results folder so the copy stays loadable.
func (f runFiles) save(p profiles.Profile, rep *scoring.Report) error {
	data, err := rep.JSON()
	if err != nil {
		return err
	}
	if err := outfile.WriteFile(f.Report, data); err != nil {
		return err
	}
	return profiles.Save(f.Profile, p.RelativeTo(filepath.Dir(f.Profile)))
}

// pairFile is the A/B summary saved beside the two runs' reports, so the
// comparison the A/B view shows is on disk too.
type pairFile struct {
	Object     string             `json:"object"` // "plexbench.ab"
	A          string             `json:"a"`      // report paths
	B          string             `json:"b"`
	Base       string             `json:"base"` // the base B (and A, with --base) compared against
	Diff       []string           `json:"diff"`
	Comparison scoring.Comparison `json:"comparison"`
	Verdict    string             `json:"verdict"`
	Partial    bool               `json:"partial,omitempty"`
}

const pairObject = "plexbench.ab"

func savePair(path string, p pairFile) error {
	p.Object = pairObject
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(data, '\n'))
}

// Entry is one past run in the results folder.
type Entry struct {
	Report     string // path of the JSON report
	Base       string // path of its KLD base; empty when none was kept
	Profile    profiles.Profile
	HasProfile bool
	Run        scoring.Report
	Time       time.Time // the report file's modification time
	Err        error     // the report could not be read
}

// maxReport bounds what History reads; a report with a million windows is
// about 200 MB and not something to list.
const maxReport = 256 << 20

// History lists the runs saved in dir, newest first. A missing folder is
// an empty history; unreadable reports are listed with Err set.
func History(dir string) ([]Entry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	var out []Entry
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || filepath.Ext(name) != ".json" || strings.HasPrefix(name, ".") {
			continue
		}
		e, ok := loadEntry(filepath.Join(dir, name))
		if ok {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// loadEntry reads one report and its sidecars; ok is false for JSON files
// that are not run reports (A/B summaries).
func loadEntry(path string) (Entry, bool) {
	e := Entry{Report: path}
	st, err := os.Stat(path)
	if err != nil {
		e.Err = err
		return e, true
	}
	e.Time = st.ModTime()
	if st.Size() > maxReport {
		e.Err = fmt.Errorf("%s: %d bytes is too large to list", path, st.Size())
		return e, true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		e.Err = err
		return e, true
	}
	if err := json.Unmarshal(data, &e.Run); err != nil {
		e.Err = fmt.Errorf("%s: %w", path, err)
		return e, true
	}
	if e.Run.Object != scoring.ReportObject {
		return e, false
	}
	stem := strings.TrimSuffix(path, ".json")
	if p, err := profiles.Load(stem + ".toml"); err == nil {
		e.Profile, e.HasProfile = p, true
	}
	if _, err := os.Stat(stem + ".kld"); err == nil {
		e.Base = stem + ".kld"
	}
	return e, true
}
