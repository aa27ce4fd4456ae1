// Package shareddata locates the project's evaluation data, ../shared/data
// beside the repository (CI lays it there too), for tests in any package.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the absolute path of ../shared/data beside the module root.
// Outside CI a test is skipped when the folder is missing; under CI (CI
// set) it fails, since CI always provides the data.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := Find()
	if err == nil {
		return dir
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("shared data: %v", err)
	}
	t.Skipf("shared data not found: %v", err)
	return ""
}

// Path joins elem onto Dir(t).
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Dir(t)}, elem...)...)
}

// Find walks up from the working directory to the folder holding go.mod
// and returns ../shared/data from there, for optional uses such as fuzz
// seeds; tests that need the data call Dir.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			data := filepath.Join(filepath.Dir(dir), "shared", "data")
			if _, err := os.Stat(filepath.Join(data, "golden.json")); err != nil {
				return "", err
			}
			return data, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}
