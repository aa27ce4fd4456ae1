package testtier

import "testing"

// TestLong: only PLEXBENCH_LONG=1 turns the long tier on.
func TestLong(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "": false, "0": false, "true": false} {
		t.Setenv(Env, v)
		if got := Long(); got != want {
			t.Errorf("%s=%q: Long() = %v, want %v", Env, v, got, want)
		}
	}
}
