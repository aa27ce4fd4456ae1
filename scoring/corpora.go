package scoring

// corpora.go owns the report of several corpora scored in one run: a
// section per text (each that text's own single-corpus report, scored as
// its own run) and their averages. The top level keeps what the corpora
// share (object, geometry, engine config, record) and the totals of time
// and prefill; it has no perplexity of its own: which average is "the"
// figure is the reader's choice, so both are given by name.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
)

// CorporaAverage is the report's corpora_average.
type CorporaAverage struct {
	TokenWeighted CorporaTokenWeighted `json:"token_weighted"`
	Macro         CorporaMacro         `json:"macro"`
}

// CorporaTokenWeighted pools every scored token of every corpus: mean_nll
// is Σ NLL / Σ tokens, where a corpus's Σ NLL is its mean_nll × its
// scored tokens; perplexity is exp(mean_nll); bits_per_byte is Σ NLL /
// (ln 2 · Σ text_bytes).
type CorporaTokenWeighted struct {
	Tokens      int     `json:"tokens"`
	TextBytes   int64   `json:"text_bytes"`
	MeanNLL     float64 `json:"mean_nll"`
	Perplexity  float64 `json:"perplexity"`
	BitsPerByte float64 `json:"bits_per_byte"`
}

// CorporaMacro weighs every corpus alike: the plain means over corpora of
// each corpus's perplexity and bits per byte.
type CorporaMacro struct {
	Perplexity  float64 `json:"perplexity"`
	BitsPerByte float64 `json:"bits_per_byte"`
	Corpora     int     `json:"corpora"`
}

// AverageCorpora is the averages of corpus sections.
func AverageCorpora(sections []Report) CorporaAverage {
	var a CorporaAverage
	var nll float64
	for i := range sections {
		s := &sections[i]
		nll += s.MeanNLL * float64(s.ScoredTokens)
		a.TokenWeighted.Tokens += s.ScoredTokens
		a.TokenWeighted.TextBytes += s.TextBytes
		a.Macro.Perplexity += s.Perplexity
		a.Macro.BitsPerByte += s.BitsPerByte
	}
	if n := len(sections); n > 0 {
		a.Macro.Corpora = n
		a.Macro.Perplexity /= float64(n)
		a.Macro.BitsPerByte /= float64(n)
	}
	tw := &a.TokenWeighted
	if tw.Tokens > 0 {
		tw.MeanNLL = nll / float64(tw.Tokens)
		tw.Perplexity = math.Exp(tw.MeanNLL)
	}
	if tw.TextBytes > 0 {
		tw.BitsPerByte = nll / (math.Ln2 * float64(tw.TextBytes))
	}
	return a
}

// CorporaReport is the report of sections, each corpus's own report in
// the order scored: their shared geometry and engine config (the
// first's), the summed time and prefill, and the averages. A partial
// section (a stopped run) makes the report partial; it is kept, but not
// in the averages.
func CorporaReport(sections []Report) Report {
	rep := Report{Object: ReportObject, Corpora: sections}
	var done []Report
	var busy float64
	for i := range sections {
		s := &sections[i]
		if i == 0 {
			rep.Method, rep.Ctx, rep.Stride, rep.ChunkLimit, rep.Config = s.Method, s.Ctx, s.Stride, s.ChunkLimit, s.Config
		}
		rep.ElapsedSeconds += s.ElapsedSeconds
		rep.PrefillTokens += s.PrefillTokens
		if s.PrefillTokensPerSecond > 0 {
			busy += float64(s.PrefillTokens) / s.PrefillTokensPerSecond
		}
		if s.Partial {
			rep.Partial, rep.PartialReason = true, s.PartialReason
			continue
		}
		done = append(done, *s)
	}
	if busy > 0 {
		rep.PrefillTokensPerSecond = float64(rep.PrefillTokens) / busy
	}
	avg := AverageCorpora(done)
	rep.CorporaAverage = &avg
	return rep
}

// corporaJSON is the JSON of a report of several corpora: the shared
// fields, the sections and the averages, and none of a single corpus's
// figures.
type corporaJSON struct {
	Object                 string          `json:"object"`
	Method                 string          `json:"method"`
	Ctx                    int             `json:"ctx"`
	Stride                 int             `json:"stride"`
	ChunkLimit             int             `json:"chunk_limit"`
	ElapsedSeconds         float64         `json:"elapsed_seconds"`
	PrefillTokens          int             `json:"prefill_tokens"`
	PrefillTokensPerSecond float64         `json:"prefill_tokens_per_second"`
	Config                 EngineConfig    `json:"config"`
	Corpora                []Report        `json:"corpora"`
	CorporaAverage         *CorporaAverage `json:"corpora_average"`
	Partial                bool            `json:"partial,omitempty"`
	PartialReason          string          `json:"partial_reason,omitempty"`
	Warnings               []string        `json:"warnings,omitempty"`
	Record                 *RecordInfo     `json:"record,omitempty"`
}

// MarshalJSON writes a report of several corpora as corporaJSON, and any
// other report field by field, as without this method.
func (r Report) MarshalJSON() ([]byte, error) {
	if len(r.Corpora) == 0 {
		type plain Report // without this method
		return json.Marshal(plain(r))
	}
	return json.Marshal(corporaJSON{Object: r.Object, Method: r.Method, Ctx: r.Ctx, Stride: r.Stride, ChunkLimit: r.ChunkLimit,
		ElapsedSeconds: r.ElapsedSeconds, PrefillTokens: r.PrefillTokens, PrefillTokensPerSecond: r.PrefillTokensPerSecond,
		Config: r.Config, Corpora: r.Corpora, CorporaAverage: r.CorporaAverage, Partial: r.Partial,
		PartialReason: r.PartialReason, Warnings: r.Warnings, Record: r.Record})
}

// corporaProtocol is the protocol of a record of several corpora: the
// shared geometry, the token ids of every corpus (a SHA-256 over their
// token_ids_sha256 in order) and the texts' names. Its records are
// expanded into their corpora before they are grouped (ExpandCorpora).
func corporaProtocol(r *Report) Protocol {
	h := sha256.New()
	names := make([]string, len(r.Corpora))
	for i := range r.Corpora {
		h.Write([]byte(r.Corpora[i].TokenIDsSHA256 + "\n"))
		names[i] = filepath.Base(r.Corpora[i].Text)
	}
	return Protocol{Method: r.Method, Ctx: r.Ctx, Stride: r.Stride, ChunkLimit: r.ChunkLimit,
		TokenIDsSHA256: hex.EncodeToString(h.Sum(nil)), Text: strings.Join(names, " + "), Corpora: len(r.Corpora)}
}

// ExpandCorpora replaces each record of several corpora by its corpora's
// own records, in order, so that each text is compared in its own
// protocol group; other records pass through. Sections without a record
// are left out.
func ExpandCorpora(recs []Report) []Report {
	var out []Report
	for _, r := range recs {
		if len(r.Corpora) == 0 {
			out = append(out, r)
			continue
		}
		for _, s := range r.Corpora {
			if s.Record != nil && !s.Partial {
				out = append(out, s)
			}
		}
	}
	return out
}
