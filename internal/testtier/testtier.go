// Package testtier says which tier of the test suite runs (the README's
// Tests section): make test runs the default tier, and its reruns at each
// lesser CPU level and under qemu run go test -short; make test-long runs
// the tests named TestLong… with PLEXBENCH_LONG=1: the long comparisons
// (every file and weight type on every emulated backend, the exact
// kernels against llama.cpp's oracle at every context) whose
// representatives the default tier keeps. The longest of them, the device
// at a context of 16,384 (about 25 minutes on 2 cores), also needs
// PLEXBENCH_LONG_CONTEXT=1 (make test-long-context): CI's long tier stays
// within its time.
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

// ContextEnv is the variable that adds the long-context device runs ("1").
const ContextEnv = "PLEXBENCH_LONG_CONTEXT"

// LongContext reports whether the long tier runs with the long-context
// runs added.
func LongContext() bool { return Long() && os.Getenv(ContextEnv) == "1" }

// SkipUnlessLongContext skips t unless the long tier runs with the
// long-context runs added (make test-long-context).
func SkipUnlessLongContext(t testing.TB) {
	t.Helper()
	SkipUnlessLong(t)
	if !LongContext() {
		t.Skipf("long-context runs: make test-long-context (%s=1 %s=1)", Env, ContextEnv)
	}
}
