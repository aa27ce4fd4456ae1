// Package testtier says which tier of the test suite runs (the README's
// Tests section): make test runs the default tier, and its reruns at each
// lesser CPU level and under qemu run go test -short; make test-long runs
// the tests named TestLong… with PLEXBENCH_LONG=1: the long comparisons
// (every file and weight type on every emulated backend, the exact
// kernels against llama.cpp's oracle at every context) whose
// representatives the default tier keeps.
package testtier

import (
	"os"
	"testing"
)

// Env is the variable that turns the long tier on ("1").
const Env = "PLEXBENCH_LONG"

// Long reports whether the long tier runs.
func Long() bool { return os.Getenv(Env) == "1" }

// SkipUnlessLong skips t unless the long tier runs; a TestLong… function calls it
// first.
func SkipUnlessLong(t testing.TB) {
	t.Helper()
	if !Long() {
		t.Skipf("long tier: make test-long (%s=1)", Env)
	}
}
