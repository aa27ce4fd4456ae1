package results

// names.go is the results folder's naming rule, the one place it is
// written. Every file of a run shares one stem:
//
//	MODEL_TEXT_DIGEST.json      a record (a complete run): the report with its record object
//	MODEL_TEXT_DIGEST.toml      the profile it ran (TUI runs), paths relative to the root
//	MODEL_TEXT_DIGEST.kld       the KLD base it recorded (TUI runs with --keep-base)
//	MODEL_TEXT_DIGEST.trace     its per-token trace, for `plexbench worst` (scoring/trace.go)
//	MODEL_TEXT_DIGEST.ab.json   the A/B summary, beside B's record
//	MODEL_TEXT_DIGEST_shardIofN.json  a shard's record
//	MODEL_TEXT_DIGEST_noise.json      a noise measurement's record (plexbench noise)
//	MODEL_TEXT_DIGEST_early-N.json    a record of a run a stopping rule ended at window N
//	MODEL_TEXT_stopped-TIME.json      a stopped or failed run the TUI keeps (never a record)
//	MODEL_TEXT_SETTINGS.sweep-base.kld  the base a sweep's base model recorded, its journals beside it
//
// MODEL is the model file's stem, TEXT the text's ("tokens" for a token
// file, "corpora-A-B" for a run of several texts), or "vs-BASE" for a run
// compared against a base (its tokens are the base's, whether the text
// was read again or not: one record either way), DIGEST the record's
// digest of protocol, engine config, model hash and, for a run stopped
// early, its rule and windows (scoring.RecordInfo): an identical rerun
// gets its own name back and replaces its files, anything else gets
// another. Names starting with '.' are files being written.

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"plexbench/scoring"
)

// Sidecar extensions, after the stem.
const (
	extReport  = ".json"
	extProfile = ".toml"
	extBase    = ".kld"
	extAB      = ".ab.json"
	extTrace   = ".trace"
)

// TracePath is where the token trace of the report at path is kept.
func TracePath(report string) string { return strings.TrimSuffix(report, extReport) + extTrace }

// RecordName is the stem of rep's record ri: model, text, digest, and
// the shard when it is one.
func RecordName(rep *scoring.Report, ri *scoring.RecordInfo) string {
	name := stem(ri.Model.File, "model") + "_" + textStem(rep) + "_" + ri.Digest
	if ri.Protocol.Shard != "" {
		name += "_shard" + strings.ReplaceAll(ri.Protocol.Shard, "/", "of")
	}
	if rep.Noise != nil {
		name += "_noise" // never replaced by a plain run of the same settings
	}
	if s := rep.StoppedEarly; s != nil {
		name += fmt.Sprintf("_early-%d", s.Windows) // its digest differs too
	}
	return name
}

// SweepBase is where a sweep keeps the base its base model records when
// it is given no path: MODEL_TEXT_SETTINGS.sweep-base.kld in root (TEXT
// "demo" for the embedded text), SETTINGS the digest of the settings the
// base model runs with (profiles.Profile.Digest), so that a sweep of other
// settings never writes over the base earlier records point to.
func SweepBase(root, model, text, settings string) string {
	return filepath.Join(root, stem(model, "model")+"_"+stem(text, "demo")+"_"+settings+".sweep-base"+extBase)
}

// runStem is the stem of a run that is not a record (stopped, failed, or
// not describable): model, text and when it started.
func runStem(rep *scoring.Report, model string, started time.Time) string {
	return stem(model, "demo") + "_" + textStem(rep) + "_stopped-" + started.Format("20060102-150405")
}

func textStem(rep *scoring.Report) string {
	if len(rep.Corpora) > 0 {
		stems := make([]string, len(rep.Corpora))
		for i := range rep.Corpora {
			stems[i] = stem(rep.Corpora[i].Text, "demo")
		}
		return SafeName("corpora-" + strings.Join(stems, "+"))
	}
	if rep.KLD != nil {
		return "vs-" + stem(rep.KLD.Base, "base") // the tokens are the base's
	}
	return stem(rep.Text, "tokens")
}

// stem is a path's file name without its extension, made safe; empty
// when the path is.
func stem(p, empty string) string {
	if p == "" {
		return empty
	}
	return SafeName(strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)))
}

// SafeName keeps letters, digits, '.', '-' of s (others become '-'), at
// most 48 bytes; "unnamed" for an empty s.
func SafeName(s string) string {
	if s == "" {
		return "unnamed"
	}
	b := []byte(s)
	for i, c := range b {
		if !(c == '.' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 48)])
}
