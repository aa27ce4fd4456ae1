package workbench

// request.go owns the scoring request a job stands for: the profile's
// text or token file (the embedded demo text when neither is named and no
// base supplies the tokens), its windows, and the job's bases.

import (
	"encoding/json"
	"errors"
	"fmt"

	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench/demo"
)

// request is the scoring request of j (without its journal).
func request(j Job) (scoring.Request, error) {
	p := j.Profile
	req := scoring.Request{
		Method: p.Method, Ctx: p.Ctx, Stride: p.Stride, Chunks: p.Chunks,
		KLDBaseOut: j.BaseOut, KLDBaseFormat: j.BaseFormat, KLDTopK: p.KLDTopK, KLDBase: j.Compare,
		IncludeTokenIDs: j.TokenIDs, CoarsenTopK: j.CoarsenTopK,
		CoarsenTopKs: j.CoarsenTopKs, Shard: j.Shard, Resume: j.Resume,
		AllowTokenizerMismatch: j.AllowTokenizerMismatch, Progress: j.Progress, KeepGoing: j.KeepGoing,
	}
	switch n := len(p.Corpora); {
	case n > 1:
		return req, fmt.Errorf("%d corpora: only plexbench score scores several texts (one run per text); this run scores one: give --perplexity once, or text in the profile", n)
	case n == 1:
		p.Text = p.Corpora[0]
	}
	var err error
	if req.Stop, err = StopRule(p); err != nil {
		return req, err
	}
	if j.Compare != "" && j.GeometryFromBase {
		// A comparison inherits the geometry the base was recorded with,
		// unless the caller asks for one (then it must agree).
		g := j.GeometryGiven
		if !g["method"] {
			req.Method = ""
		}
		if !g["ctx"] {
			req.Ctx = 0
		}
		if !g["stride"] {
			req.Stride = 0
		}
		if !g["chunks"] {
			req.Chunks = 0
		}
	}
	switch {
	case p.Text != "" && p.Tokens != "":
		return req, errors.New("give --perplexity or --perplexity-tokens, not both")
	case p.Text != "":
		text, err := ReadText(p.Text)
		if err != nil {
			return req, err
		}
		req.Text, req.TextPath = text, p.Text
	case p.Tokens != "":
		ids, err := readTokenFile(p.Tokens)
		if err != nil {
			return req, err
		}
		req.Tokens, req.TextPath = ids, p.Tokens
	case j.Compare != "":
		// The base carries the token ids.
	default:
		req.Text, req.TextPath = PerplexityText(demo.Text()), demo.TextName
	}
	return req, nil
}

// StopRule is the stopping rule p's stop_* settings stand for.
func StopRule(p profiles.Profile) (scoring.StopRule, error) {
	rule := scoring.StopRule{Precision: p.StopAtPrecision, MinWindows: p.StopMinWindows}
	if p.StopWhenDecided != "" {
		c, err := scoring.ParseCondition(p.StopWhenDecided, scoring.StopNames())
		if err != nil {
			return rule, fmt.Errorf("stop_when_decided %w", err)
		}
		rule.Decide = &c
	}
	return rule, nil
}

// PerplexityText is a text file's content as llama-perplexity scores it:
// the bytes as they are, with exactly one trailing "\n" dropped.
func PerplexityText(data []byte) string {
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	return string(data)
}

// ReadText reads a text file for scoring, refusing empty files.
func ReadText(path string) (string, error) {
	data, err := readInput(path, "tokenizing")
	if err != nil {
		return "", err
	}
	if len(data) == 0 {
		return "", fmt.Errorf("%s: the file is empty", path)
	}
	return PerplexityText(data), nil
}

// readTokenFile reads a JSON array of token ids.
func readTokenFile(path string) ([]int32, error) {
	data, err := readInput(path, "parsing")
	if err != nil {
		return nil, err
	}
	var ids []int32
	if err := json.Unmarshal(data, &ids); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of token ids: %v", path, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: the token array is empty", path)
	}
	return ids, nil
}
