package workbench

// served.go owns what a profile's server settings become: the served
// engine a Bench scores on instead of a loaded model (package served),
// and what a record says of a model it never read.

import (
	"context"
	"strings"

	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/served"
)

// benchEngine is what a Bench scores on: a loaded model or a server.
type benchEngine interface {
	scoring.Engine
	Close() error
}

// ServedConfig is the served engine's config for p.
func ServedConfig(p profiles.Profile) served.Config {
	return served.Config{URL: p.Server, API: p.API, Tokenizer: p.Tokenizer, Parallel: p.ServerParallel,
		Timeout: p.ServerTimeoutDuration()}
}

// openServed reaches p's server.
func openServed(p profiles.Profile) (*served.Engine, error) {
	return served.Open(context.Background(), ServedConfig(p))
}

// servedRecordModel is a served model as its record names it: the model
// the server names, its API, the tokenizer the run checked with.
func servedRecordModel(rep *scoring.Report) scoring.RecordModel {
	m := rep.Config.Model
	_, name, _ := strings.Cut(m.Path, "#") // served.Engine's URL#model
	return scoring.RecordModel{File: baseName(name), Architecture: m.Architecture}
}

// servedWarnings adds what a served run's report lacks: without a local
// tokenizer, the bytes each token covers, so bits per byte.
func servedWarnings(p profiles.Profile, rep *scoring.Report) {
	if p.Server != "" && p.Tokenizer == "" && rep.ScoredTokens > 0 {
		rep.Warnings = append(rep.Warnings, "no bits per byte: the server's tokens have no local tokenizer to measure their bytes (give --tokenizer FILE.gguf)")
	}
}

// IsServerURL says whether a sweep's model names a server (http:// or
// https://) rather than a model file.
func IsServerURL(model string) bool {
	return strings.HasPrefix(model, "http://") || strings.HasPrefix(model, "https://")
}

// withModel is p scoring model: a model file, or a server's URL (a
// sweep over endpoints).
func withModel(p profiles.Profile, model string) profiles.Profile {
	if IsServerURL(model) {
		p.Server, p.Model = model, ""
		return p
	}
	p.Model = model
	return p
}

// sweptModel is what a sweep's run scores: its model file or server.
func sweptModel(p profiles.Profile) string {
	if p.Server != "" {
		return p.Server
	}
	return p.Model
}

// modelFiles are the models that are files, not servers.
func modelFiles(models ...string) []string {
	var files []string
	for _, m := range models {
		if !IsServerURL(m) {
			files = append(files, m)
		}
	}
	return files
}
