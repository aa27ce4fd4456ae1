package results

// bases.go owns the listing of KLD bases for `plexbench bases`: the base
// files in the results root and any folders given (told apart by their
// magic, whatever their name), each with the reports and journals there
// that refer to it, and which of them nothing refers to (what `bases gc`
// removes).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"plexbench/scoring"
)

// Roles of a reference to a base.
const (
	RoleRecorded = "recorded" // the run that wrote it
	RoleCompared = "compared" // a run compared against it
	RoleJournal  = "journal"  // an unfinished run (its journal) compares against it
)

// BaseRef is one file that refers to a base.
type BaseRef struct {
	Path    string `json:"path"`
	Role    string `json:"role"`
	Partial bool   `json:"partial,omitempty"` // a stopped run's report, not a record
}

// BaseEntry is one base file with what refers to it. Err is set when the
// file has a base's magic but its header cannot be read (truncated,
// corrupt); such a base is listed, never collected.
type BaseEntry struct {
	Info scoring.BaseInfo
	Err  error
	Refs []BaseRef
}

// Unreferenced reports whether e is a readable base nothing refers to.
func (e *BaseEntry) Unreferenced() bool { return e.Err == nil && len(e.Refs) == 0 }

// referrer is a report or journal that may refer to bases.
type referrer struct {
	path    string
	rep     *scoring.Report // nil for a journal
	partial bool
	// A journal's base: its size and trailing checksum.
	jsize int64
	jsum  string
}

// FindBases lists the bases in dirs (each folder itself, not its
// subfolders; files being written, with a leading dot, left out), sorted
// by path, with the references from every report and journal in dirs. A
// missing folder lists nothing; a report that should be a record and is
// not is an error, as nothing could then be said to be unreferenced.
func FindBases(dirs []string) ([]BaseEntry, error) {
	var entries []BaseEntry
	var refs []referrer
	for _, dir := range uniqueDirs(dirs) {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bases: %w", err)
		}
		for _, de := range ents {
			name := de.Name()
			if de.IsDir() || strings.HasPrefix(name, ".") {
				continue
			}
			path := filepath.Join(dir, name)
			switch {
			case isReportName(name):
				r, err := reportReferrer(path)
				if err != nil {
					return nil, err
				}
				if r != nil {
					refs = append(refs, *r)
				}
			case strings.HasSuffix(name, ".journal"):
				if size, sum, ok, err := scoring.JournalBase(path); err == nil && ok {
					refs = append(refs, referrer{path: path, jsize: size, jsum: sum})
				}
			case scoring.IsBaseFile(path):
				info, err := scoring.ReadBaseInfo(path)
				entries = append(entries, BaseEntry{Info: info, Err: err})
			}
		}
	}
	for i := range entries {
		for _, r := range refs {
			if role, ok := r.refersTo(&entries[i]); ok {
				entries[i].Refs = append(entries[i].Refs, BaseRef{Path: r.path, Role: role, Partial: r.partial})
			}
		}
	}
	slices.SortFunc(entries, func(a, b BaseEntry) int { return strings.Compare(a.Info.Path, b.Info.Path) })
	return entries, nil
}

// uniqueDirs is dirs cleaned, each once, in order.
func uniqueDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// reportReferrer reads a report that may refer to bases: a record, or a
// stopped run's partial report; nil for JSON that is neither.
func reportReferrer(path string) (*referrer, error) {
	rep, ok, err := scoring.ReadRecord(path)
	switch {
	case err != nil:
		return nil, err
	case !ok && rep.Object != scoring.ReportObject:
		return nil, nil // an A/B summary, or other JSON
	}
	return &referrer{path: path, rep: &rep, partial: !ok}, nil
}

// refersTo is r's role for base e: a record names the base's identity in
// its protocol, a report its path (compared against, or recorded), a
// journal its checksum.
func (r *referrer) refersTo(e *BaseEntry) (string, bool) {
	id := e.Info.ID
	if r.rep == nil {
		if id.Format == scoring.BaseFormatLlama {
			// A llama.cpp base has no checksum for a journal to name:
			// one comparing against any keeps them all.
			return RoleJournal, strings.Trim(r.jsum, "0") == ""
		}
		return RoleJournal, id.Identity != "" && id.Identity == "plexbench:"+r.jsum[:min(16, len(r.jsum))]
	}
	rep := r.rep
	role := RoleRecorded
	if rep.KLD != nil {
		role = RoleCompared
	}
	if rep.Record != nil && id.Identity != "" && rep.Record.Protocol.Base == id.Identity {
		return role, true
	}
	if rep.KLD != nil && sameFile(r.path, rep.KLD.Base, e.Info.Path) {
		return RoleCompared, true
	}
	if rep.KLDBaseOut != "" && sameFile(r.path, rep.KLDBaseOut, e.Info.Path) {
		return RoleRecorded, true
	}
	return "", false
}

// sameFile reports whether named (a path a report holds: relative to where
// its run ran, or to the report's folder) is the file at path.
func sameFile(report, named, path string) bool {
	want, err := os.Stat(path)
	if err != nil || named == "" {
		return false
	}
	cands := []string{named}
	if !filepath.IsAbs(named) {
		cands = append(cands, filepath.Join(filepath.Dir(report), filepath.Base(named)))
	}
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && os.SameFile(st, want) {
			return true
		}
	}
	return false
}
