// Package results is the results folder: where runs are kept (the root:
// a flag, else $PLEXBENCH_RESULTS, else ./plexbench-results), what their
// files are named (names.go), writing records and the TUI's runs with
// their sidecars, the A/B summary both the TUI and `ab` write, and the
// listings that history, compare and plot read.
package results

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

	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/scoring"
)

// DefaultRoot is the results root when neither a flag nor EnvRoot names one.
const DefaultRoot = "plexbench-results"

// EnvRoot names the environment variable that sets the results root.
const EnvRoot = "PLEXBENCH_RESULTS"

// Root is the results root: flagValue when given, else envValue (the
// caller's $PLEXBENCH_RESULTS), else DefaultRoot.
func Root(flagValue, envValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if envValue != "" {
		return envValue
	}
	return DefaultRoot
}

// maxReport bounds what a listing reads; a report of a million windows is
// about 200 MB and not something to list.
const maxReport = 256 << 20

// WriteRecord writes rep, which must carry its Record, as root/NAME.json
// (Keep with nothing beside it); it returns the record's path.
func WriteRecord(root string, rep *scoring.Report) (string, error) {
	run, err := Keep(root, rep, Beside{})
	return run.Report, err
}

// Beside is what Keep keeps with a run's report.
type Beside struct {
	// Unrecorded keeps a run that is no record (stopped, failed part-way,
	// not describable) under a stopped-run name made from Model and
	// Started, as the TUI's history keeps them; without it such a run is
	// refused.
	Unrecorded bool
	Model      string
	Started    time.Time
	// Profile, when set, is written beside the report (NAME.toml), its
	// paths relative to the root.
	Profile *profiles.Profile
	// PendingBase is a base the run recorded at a pending name
	// (PendingBase), moved beside the report (NAME.kld); the report is
	// updated to name the kept file.
	PendingBase string
}

// Keep writes rep into root, creating it: a record (rep carries its
// Record and is complete) as root/NAME.json under its record name, where
// an identical rerun replaces its own files and nothing else; with
// x.Unrecorded any other run under an unused stopped-run name. Its
// token trace goes beside it first (a record is never without its
// trace), then what x asks for. Files are written through outfile (temp
// file, sync, rename).
func Keep(root string, rep *scoring.Report, x Beside) (Run, error) {
	recorded := rep.Record != nil && rep.Record.Name != "" && !rep.Partial
	switch {
	case recorded:
	case x.Unrecorded:
	case rep.Partial && rep.Record != nil:
		return Run{}, fmt.Errorf("record %s: a partial run is not kept as a record", rep.Record.Name)
	default:
		return Run{}, fmt.Errorf("record: the report has no record information")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Run{}, fmt.Errorf("results root: %w", err)
	}
	name := ""
	if recorded {
		name = rep.Record.Name
	} else {
		var err error
		if name, err = unusedStem(root, runStem(rep, x.Model, x.Started)); err != nil {
			return Run{}, err
		}
	}
	run := Run{Report: filepath.Join(root, name+extReport)}
	if x.PendingBase != "" {
		if _, err := os.Stat(x.PendingBase); err == nil {
			run.Base = filepath.Join(root, name+extBase)
			if err := os.Rename(x.PendingBase, run.Base); err != nil {
				return Run{}, fmt.Errorf("results root: %w", err)
			}
			renameBase(rep, x.PendingBase, run.Base)
		}
	}
	data, err := rep.JSON()
	if err != nil {
		return Run{}, err
	}
	if err := writeTrace(run.Report, rep); err != nil {
		return Run{}, err
	}
	if err := outfile.WriteFile(run.Report, data); err != nil {
		return Run{}, err
	}
	if x.Profile != nil {
		run.Profile = filepath.Join(root, name+extProfile)
		return run, profiles.Save(run.Profile, x.Profile.RelativeTo(root))
	}
	return run, nil
}

// renameBase makes a report that recorded its base at from name it at
// to, in its record's protocol too: a pending name never reaches a record.
func renameBase(rep *scoring.Report, from, to string) {
	if rep.KLDBaseOut != from {
		return
	}
	rep.KLDBaseOut = to
	if ri := rep.Record; ri != nil && ri.Protocol.BaseName == filepath.Base(from) {
		ri.Protocol.BaseName = filepath.Base(to)
	}
}

// PendingBase is where a run that keeps its KLD base beside its report
// records it while it runs (a dot name: not listed); Keep moves it
// beside the report.
func PendingBase(root string, started time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	f, err := os.CreateTemp(root, ".pending-"+started.Format("20060102-150405")+"-*"+extBase)
	if err != nil {
		return "", fmt.Errorf("results folder: %w", err)
	}
	name := f.Name()
	f.Close()
	return name, os.Remove(name) // the base writer creates it
}

// Run is one run kept in the results folder.
type Run struct {
	Report  string // .json
	Profile string // .toml; empty when none was written
	Base    string // .kld; empty when the run kept none
}

// unusedStem is stem, or stem-2, stem-3, … when a report of that name is
// in root: runs that are not records never replace each other.
func unusedStem(root, stem string) (string, error) {
	name := stem
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(root, name+extReport)); errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
		if i > 100 {
			return "", fmt.Errorf("results folder %s: too many runs named %s", root, stem)
		}
		name = fmt.Sprintf("%s-%d", stem, i)
	}
}

// ABPath is where the A/B summary of a pair is kept: beside B's report
// (or A's, when B never ran).
func ABPath(report string) string { return strings.TrimSuffix(report, extReport) + extAB }

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

// History lists the runs kept in root, newest first. A missing folder is
// an empty history; unreadable reports are listed with Err set.
func History(root string) ([]Entry, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	var out []Entry
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !isReportName(name) {
			continue
		}
		if e, ok := loadEntry(filepath.Join(root, name)); ok {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// isSidecar reports whether a file's name is one of a run's files beside
// its report (names.go), which a glob of records may also match.
func isSidecar(name string) bool {
	switch filepath.Ext(name) {
	case extProfile, extBase, extTrace:
		return true
	}
	return false
}

// isReportName reports whether a file name in the root can be a run's
// report: .json, not an A/B summary, not being written.
func isReportName(name string) bool {
	return filepath.Ext(name) == extReport && !strings.HasSuffix(name, extAB) && !strings.HasPrefix(name, ".")
}

// loadEntry reads one report and its sidecars; ok is false for JSON files
// that are not run reports.
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
	stem := strings.TrimSuffix(path, extReport)
	if p, err := profiles.Load(stem + extProfile); err == nil {
		e.Profile, e.HasProfile = p, true
	}
	if _, err := os.Stat(stem + extBase); err == nil {
		e.Base = stem + extBase
	}
	return e, true
}

// RecordPath is the record file arg names: arg itself when it is a file,
// else, for a bare name (no folder in it), root/NAME.json or root/NAME as
// the record names it (sweep and score print them). The error names what
// was looked for.
func RecordPath(root, arg string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	} else if strings.ContainsRune(arg, filepath.Separator) || filepath.IsAbs(arg) {
		return "", err
	}
	for _, p := range []string{filepath.Join(root, arg+extReport), filepath.Join(root, arg)} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: no such file, and no record of that name in %s", arg, root)
}

// Records reads the records that patterns (globs in root, or paths; *.json
// when none) match, a record of several corpora as its corpora's records,
// skipping files being written (a leading dot), runs' sidecars and JSON
// that is not a complete report. A file that should be a record and is
// not (scoring.ErrBadRecord: not JSON, a report without record
// information, a newer schema) is left out too, and said in skipped, for
// the caller to mention: one stray file never hides the others. No match
// at all is an error.
func Records(root string, patterns []string) (recs []scoring.Report, skipped []error, err error) {
	if len(patterns) == 0 {
		patterns = []string{"*" + extReport}
	}
	var files []string
	for _, p := range patterns {
		glob := p
		if !filepath.IsAbs(p) && !strings.ContainsRune(p, filepath.Separator) {
			glob = filepath.Join(root, p)
		}
		m, err := filepath.Glob(glob)
		if err != nil {
			return nil, nil, fmt.Errorf("--pattern %q: %v", p, err)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") || isSidecar(f) {
			continue // a write in progress, or a run's profile, base or trace
		}
		r, ok, err := scoring.ReadRecord(f)
		if errors.Is(err, scoring.ErrBadRecord) {
			skipped = append(skipped, err)
			continue
		}
		if err != nil {
			return nil, skipped, err
		}
		if ok {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return nil, skipped, fmt.Errorf("no records match %s in %s", strings.Join(patterns, ", "), root)
	}
	return scoring.ExpandCorpora(recs), skipped, nil
}
