package hip

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cacheFormat changes whenever what the cache stores changes meaning.
const cacheFormat = 1

// CacheKey is everything that decides a compiled code object
// (../shared/spec/gpu-runtime.md §2): the dialect and source, the exact
// options (-D values included), the full target ("sm_90",
// "gfx90a:sramecc+:xnack-") and the compiler's identity (version, library
// path, size and mtime).
type CacheKey struct {
	Source   string
	Options  []string
	Target   string
	Compiler string
}

// Hash is the key's file name: sha256 over length-prefixed fields, so
// that no two different keys can run together into the same bytes.
func (k CacheKey) Hash() string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put(fmt.Sprintf("plexbench-kernel-cache/%d", cacheFormat))
	put(k.Source)
	put(fmt.Sprint(len(k.Options)))
	for _, o := range k.Options {
		put(o)
	}
	put(k.Target)
	put(k.Compiler)
	return hex.EncodeToString(h.Sum(nil))
}

// Cache is an on-disk store of compiled code objects. The zero value (no
// Dir) stores nothing.
type Cache struct {
	Dir string
}

// DefaultCacheDir is os.UserCacheDir()/plexbench/kernels ("" when the
// user has no cache directory).
func DefaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "plexbench", "kernels")
}

func (c Cache) path(k CacheKey) string { return filepath.Join(c.Dir, k.Hash()+".bin") }

// Get returns the stored code for k; ok is false on a miss.
func (c Cache) Get(k CacheKey) (code []byte, ok bool, err error) {
	if c.Dir == "" {
		return nil, false, nil
	}
	code, err = os.ReadFile(c.path(k))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("kernel cache %s: %w", c.Dir, err)
	}
	return code, len(code) > 0, nil
}

// Put stores code for k, written to a temporary file and renamed, so a
// reader never sees a partial file.
func (c Cache) Put(k CacheKey, code []byte) error {
	if c.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("kernel cache %s: %w", c.Dir, err)
	}
	f, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("kernel cache %s: %w", c.Dir, err)
	}
	_, werr := f.Write(code)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), c.path(k))
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("kernel cache %s: %w", c.Dir, werr)
	}
	return nil
}

// Remove drops k's entry (after the driver refused to load it).
func (c Cache) Remove(k CacheKey) {
	if c.Dir != "" {
		os.Remove(c.path(k))
	}
}

// fileIdentity is "path size mtime" of a library, for the compiler part
// of a key: a reinstalled compiler at the same version changes it.
func fileIdentity(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s %d %d", path, st.Size(), st.ModTime().UnixNano())
}
