package workbench

// record.go owns what a record says beyond the report: the model file's
// identity (its SHA-256, remembered per file version) and size in bits,
// the machine, this build's version and the wall times.

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
	"strings"
	"time"

	"plexbench/engine/gguf"
	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/results"
	"plexbench/scoring"
)

// describe gives a finished run's report its record information, or a
// warning saying why it cannot be kept as a record; h hashes the model,
// profile is the settings the run ran.
func describe(h *modelHasher, profile profiles.Profile, path string, rep *scoring.Report, started time.Time) {
	if ri, err := recordInfo(h, profile, path, rep, started, time.Now()); err != nil {
		rep.Warnings = append(rep.Warnings, "not kept as a record: "+err.Error())
	} else {
		rep.Record = &ri
	}
}

// recordInfo describes a finished run for its record.
func recordInfo(h *modelHasher, profile profiles.Profile, path string, rep *scoring.Report, started, finished time.Time) (scoring.RecordInfo, error) {
	var model scoring.RecordModel
	var err error
	if profile.Server != "" {
		model = servedRecordModel(rep)
	} else if model, err = recordModel(h, path); err != nil {
		return scoring.RecordInfo{}, err
	}
	model.TokenizerSHA256 = rep.Config.Model.TokenizerSHA256
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
	ri.Profile, ri.ProfileDigest = profile.Name, profile.Digest()
	ri.Name = results.RecordName(rep, &ri)
	return ri, nil
}

// recordModel hashes the model file (once per file version: see
// modelHasher.hash) and sizes its tensors.
func recordModel(h *modelHasher, path string) (scoring.RecordModel, error) {
	sum, err := h.hash(path)
	if err != nil {
		return scoring.RecordModel{}, err
	}
	g, err := gguf.Open(path)
	if err != nil {
		return scoring.RecordModel{}, err
	}
	defer g.Close()
	s := g.TensorStats()
	return scoring.RecordModel{File: baseName(path), SHA256Prefix: sum[:16],
		Size: g.FileSize, Architecture: g.Architecture(), EffectiveBPW: s.BitsPerWeight(), TypeHistogram: s.TypeHistogram}, nil
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

// hashFile is the SHA-256 of a file, in hex.
func hashFile(path string) (string, error) {
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

// hashCachePath is the file in the user's cache folder that remembers
// model hashes ("" when there is no such folder).
func hashCachePath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "plexbench", "model-hashes.json")
}

// A modelHasher hashes model files for their records. Its nil value is
// the one runs use: hashes remembered in the user's cache folder
// (hashCachePath), files read by hashFile; tests give their own.
type modelHasher struct {
	cache string                            // the file remembering hashes; "" remembers none
	read  func(path string) (string, error) // a file's SHA-256; nil: hashFile
}

// hash is the SHA-256 of the model file at path. Reading a 20 GB model
// costs tens of seconds, so the hash is remembered per file version —
// absolute path, size, modification time and inode — in the cache, as
// make and rsync judge a file unchanged. A cache that cannot be read or
// written only costs the read.
func (h *modelHasher) hash(path string) (string, error) {
	cachePath, read := hashCachePath(), hashFile
	if h != nil {
		cachePath, read = h.cache, h.read
		if read == nil {
			read = hashFile
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	key := fmt.Sprintf("%s|%d|%d|%d", abs, fi.Size(), fi.ModTime().UnixNano(), inode(fi))
	cache := map[string]string{}
	if cachePath != "" {
		if data, err := os.ReadFile(cachePath); err == nil {
			json.Unmarshal(data, &cache) // a damaged cache is rebuilt
		}
		if sum, ok := cache[key]; ok && len(sum) == 2*sha256.Size {
			return sum, nil
		}
	}
	sum, err := read(path)
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
