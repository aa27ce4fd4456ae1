package profiles

// server.go owns the checks of the settings that score a served model.

import (
	"slices"
	"time"
)

// apis are the served APIs a profile may name ("" and "auto": detected).
var apis = []string{"", "auto", "vllm", "sglang", "openai"}

// validateServer checks server, api, server_parallel, server_timeout and
// tokenizer.
func (p Profile) validateServer(bad func(key, format string, args ...any)) {
	if !slices.Contains(apis, p.API) {
		bad("api", "%q is not one of vllm, sglang, openai, auto", p.API)
	}
	if p.ServerParallel < 0 || p.ServerParallel > 1024 {
		bad("server_parallel", "%d is outside 0..1024 (0: 4)", p.ServerParallel)
	}
	if p.ServerTimeout != "" {
		if d, err := time.ParseDuration(p.ServerTimeout); err != nil || d <= 0 {
			bad("server_timeout", "%q is not a positive duration (90s, 10m)", p.ServerTimeout)
		}
	}
	if p.Server == "" {
		for _, k := range []struct {
			key string
			set bool
		}{{"api", p.API != ""}, {"server_parallel", p.ServerParallel != 0}, {"server_timeout", p.ServerTimeout != ""}} {
			if k.set {
				bad(k.key, "set, but no server is")
			}
		}
	} else if p.Model != "" {
		bad("server", "%q set beside model %q: score one or the other", p.Server, p.Model)
	}
}

// ServerTimeoutDuration is server_timeout parsed (0: unset or invalid;
// Validate refuses an invalid one).
func (p Profile) ServerTimeoutDuration() time.Duration {
	d, _ := time.ParseDuration(p.ServerTimeout)
	return d
}
