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

// TestLongContext: the long-context runs need both variables at "1".
func TestLongContext(t *testing.T) {
	for _, c := range []struct {
		long, ctx string
		want      bool
	}{{"1", "1", true}, {"1", "", false}, {"", "1", false}, {"1", "true", false}} {
		t.Setenv(Env, c.long)
		t.Setenv(ContextEnv, c.ctx)
		if got := LongContext(); got != c.want {
			t.Errorf("%s=%q %s=%q: LongContext() = %v, want %v", Env, c.long, ContextEnv, c.ctx, got, c.want)
		}
	}
}
