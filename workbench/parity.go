package workbench

// parity.go owns tokenizer parity for the runs the workbench starts: an
// A/B is refused before either side scores when the two models'
// tokenizers, or their token streams over the text, differ
// (CheckTokenizers; scoring.TokenParity); a run against a base gets the
// base's own tokenizer, where its model file is still there, to show the
// base's side of a mismatch as text.

import (
	"path/filepath"

	"plexbench/engine"
	"plexbench/profiles"
	"plexbench/scoring"
)

// CheckTokenizers is nil when a and b tokenize their texts alike with the
// same tokenizer; else an error wrapping scoring.ErrTokenizerMismatch
// with the first differing position, both tokenizations around it and
// the two hashes. Only the models' tokenizers are read, not their
// weights.
func CheckTokenizers(a, b profiles.Profile) error {
	if (a.Server != "" && a.Tokenizer == "") || (b.Server != "" && b.Tokenizer == "") {
		return nil // a server's tokenizer is its own: each run checks its tokens against the base it compares with
	}
	sa, err := tokenSide("A", a)
	if err != nil {
		return err
	}
	sb, err := tokenSide("B", b)
	if err != nil {
		return err
	}
	return scoring.TokenParity(sa, sb)
}

// tokenSide is p's model's tokenizer and the tokens it makes of p's text
// (or p's token file), as a run of p would score them.
func tokenSide(name string, p profiles.Profile) (scoring.TokenSide, error) {
	path, err := modelPath(p)
	if p.Server != "" {
		path, err = p.Tokenizer, nil // a server's tokenizer, as --tokenizer names it
	}
	if err != nil {
		return scoring.TokenSide{}, err
	}
	tok, err := engine.LoadTokenizer(path)
	if err != nil {
		return scoring.TokenSide{}, err
	}
	s := scoring.TokenSide{Name: name, Model: filepath.Base(p.Model), Hash: tok.Hash(), Decode: tok.Decode}
	if p.Model == "" {
		s.Model = "the demo model"
	}
	req, err := request(Job{Profile: p})
	if err != nil {
		return s, err
	}
	s.Tokens = req.Tokens
	if req.Text != "" {
		s.Tokens, err = engine.TokenizeText(tok, path, req.Text)
	}
	return s, err
}

// baseDecoder renders a base's token ids with the tokenizer of the model
// that recorded it, when that is not the run's (runHash): nil when the
// tokenizers agree (the run's reads both), when the base does not name
// its model, the file is gone, or its tokenizer is no longer the one the
// base recorded.
func baseDecoder(base, runHash string) func([]int32) string {
	info, err := scoring.ReadBaseInfo(base)
	m := info.Header.Meta.Config.Model
	if err != nil || m.Path == "" || m.TokenizerSHA256 == "" || m.TokenizerSHA256 == runHash {
		return nil
	}
	tok, err := engine.LoadTokenizer(m.Path)
	if err != nil || tok.Hash() != m.TokenizerSHA256 {
		return nil
	}
	return tok.Decode
}
