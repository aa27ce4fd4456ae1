// record.go owns the command side of records: where the results root is,
// and what a record says about the model file, the machine and this build
// (scoring.RecordInfo); scoring.WriteRecord writes them.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"plexbench/cmd/plexbench/demo"
	"plexbench/engine/gguf"
	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/scoring/outfile"
	"plexbench/tui"
)

// resultsRoot is --results when given, else $PLEXBENCH_RESULTS, else the
// TUI's default folder: records and the TUI's history share one root.
func resultsRoot(flagValue string) string {
	switch {
	case flagValue != "":
		return flagValue
	case os.Getenv("PLEXBENCH_RESULTS") != "":
		return os.Getenv("PLEXBENCH_RESULTS")
	}
	return tui.DefaultResultsDir
}

// loadRecords reads the records that patterns (globs in root, or paths;
// *.json when none) match, skipping files being written (a leading dot)
// and JSON that is not a complete report; a file that should be a record
// and is not is an error. No match at all is an error too.
func loadRecords(root string, patterns []string) ([]scoring.Report, error) {
	if len(patterns) == 0 {
		patterns = []string{"*.json"}
	}
	var files []string
	for _, p := range patterns {
		glob := p
		if !filepath.IsAbs(p) && !strings.ContainsRune(p, filepath.Separator) {
			glob = filepath.Join(root, p)
		}
		m, err := filepath.Glob(glob)
		if err != nil {
			return nil, fmt.Errorf("--pattern %q: %v", p, err)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	var recs []scoring.Report
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue // a write in progress
		}
		r, ok, err := scoring.ReadRecord(f)
		if err != nil {
			return nil, err
		}
		if ok {
			recs = append(recs, r)
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no records match %s in %s", strings.Join(patterns, ", "), root)
	}
	return recs, nil
}

// recordInfo describes a finished run for its record.
func recordInfo(p profiles.Profile, rep *scoring.Report, started, finished time.Time) (scoring.RecordInfo, error) {
	path := p.Model
	if path == "" {
		var err error
		if path, err = demo.ModelPath(); err != nil {
			return scoring.RecordInfo{}, err
		}
	}
	model, err := recordModel(path)
	if err != nil {
		return scoring.RecordInfo{}, err
	}
	var base scoring.BaseID
	switch {
	case rep.KLD != nil:
		base, err = scoring.IdentifyBase(rep.KLD.Base)
	case rep.KLDBaseOut != "":
		base, err = scoring.IdentifyBase(rep.KLDBaseOut)
	}
	if err != nil {
		return scoring.RecordInfo{}, err
	}
	m := scoring.Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: cpuModel(), CPUs: runtime.NumCPU(),
		CPUFeatures: rep.Config.CPUFeatures, CPULevel: rep.Config.CPULevel}
	ri := scoring.NewRecordInfo(rep, base, model, m, version(), started, finished)
	ri.Profile = p.Name
	return ri, nil
}

// recordModel hashes the model file (once per file version: see
// modelHash) and sizes its tensors.
func recordModel(path string) (scoring.RecordModel, error) {
	sum, err := modelHash(path)
	if err != nil {
		return scoring.RecordModel{}, err
	}
	g, err := gguf.Open(path)
	if err != nil {
		return scoring.RecordModel{}, err
	}
	defer g.Close()
	s := summarize(g)
	return scoring.RecordModel{File: baseName(path), SHA256Prefix: sum[:16],
		Size: s.FileSize, Architecture: s.Architecture, EffectiveBPW: s.BitsPerWeight, TypeHistogram: s.TypeHistogram}, nil
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

// cpuModel is the CPU's model name where the OS says it (Linux).
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// version is this build's module version and VCS revision.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}

// hashFile is the SHA-256 of a file, in hex (a variable so tests can count
// the reads).
var hashFile = func(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return "", fmt.Errorf("model %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashCachePath is the file that remembers model hashes (a variable so
// tests use their own).
var hashCachePath = func() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "plexbench", "model-hashes.json")
}

// modelHash is the SHA-256 of the model file at path. Reading a 20 GB
// model costs tens of seconds, so the hash is remembered per file
// version — absolute path, size, modification time and inode — in the
// user's cache folder, as make and rsync judge a file unchanged. A cache
// that cannot be read or written only costs the read.
func modelHash(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	key := fmt.Sprintf("%s|%d|%d|%d", abs, fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	cachePath := hashCachePath()
	cache := map[string]string{}
	if cachePath != "" {
		if data, err := os.ReadFile(cachePath); err == nil {
			json.Unmarshal(data, &cache) // a damaged cache is rebuilt
		}
		if sum, ok := cache[key]; ok && len(sum) == 2*sha256.Size {
			return sum, nil
		}
	}
	sum, err := hashFile(path)
	if err != nil || cachePath == "" {
		return sum, err
	}
	for k := range cache { // forget older versions of this file
		if strings.HasPrefix(k, abs+"|") {
			delete(cache, k)
		}
	}
	cache[key] = sum
	if data, err := json.MarshalIndent(cache, "", " "); err == nil && os.MkdirAll(filepath.Dir(cachePath), 0o755) == nil {
		outfile.WriteFile(cachePath, data) // best effort: a failure only costs the next read
	}
	return sum, nil
}
