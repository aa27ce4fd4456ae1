package serve

// prompts.go owns reading prompts as the APIs give them — a text, a list
// of token ids, or a batch of either — into token ids, with the bounds a
// prompt must keep, and a token's text as responses show it.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// prompts reads raw, the request's field param: a string, a list of ids,
// or a list of either. Texts are tokenized as the scoring path tokenizes
// (BOS when the vocabulary asks and addSpecial; special-token texts never
// parsed); ids are taken as given. Each prompt must be non-empty, within
// the context and the vocabulary; a batch holds at most MaxPrompts. The
// shape is told from the first bytes and read into typed lists (4 bytes
// an id, however long the body); a value of the wrong shape is read again
// generically, when small, to say where it goes wrong.
func (s *Server) prompts(raw json.RawMessage, param string, addSpecial bool) ([][]int32, *apiError) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, badRequest(param, "%s is missing", param)
	}
	var out [][]int32
	var err error
	var e *apiError
	switch {
	case t[0] == '"':
		var text string
		if err = json.Unmarshal(t, &text); err == nil {
			var ids []int32
			if ids, e = s.text(text, param, addSpecial); e == nil {
				out = [][]int32{ids}
			}
		}
	case t[0] == '[' && len(bytes.TrimSpace(t[1:])) > 0:
		switch bytes.TrimSpace(t[1:])[0] {
		case ']':
			return nil, badRequest(param, "%s is an empty list", param)
		case '"':
			var texts []string
			if err = json.Unmarshal(t, &texts); err == nil && len(texts) > s.cfg.MaxPrompts {
				return nil, s.tooMany(param, len(texts))
			}
			for i := 0; err == nil && e == nil && i < len(texts); i++ {
				var ids []int32
				if ids, e = s.text(texts[i], param+"["+strconv.Itoa(i)+"]", addSpecial); e == nil {
					out = append(out, ids)
				}
			}
		case '[':
			if err = json.Unmarshal(t, &out); err == nil && len(out) > s.cfg.MaxPrompts {
				return nil, s.tooMany(param, len(out))
			}
			for i := 0; err == nil && e == nil && i < len(out); i++ {
				e = s.checkIDs(out[i], param+"["+strconv.Itoa(i)+"]")
			}
		default:
			var ids []int32
			if err = json.Unmarshal(t, &ids); err == nil {
				out, e = [][]int32{ids}, s.checkIDs(ids, param)
			}
		}
	}
	switch {
	case e != nil:
		return nil, e
	case err == nil && out != nil:
		return out, nil
	case len(t) <= 1<<20:
		return s.promptsSlow(t, param, addSpecial)
	}
	return nil, badRequest(param, "%s: want a text, a list of token ids, or a list of either: %v", param, err)
}

// idsOf reads a list of token ids, at most limit of them (0: no limit):
// typed (4 bytes an id), or, for a small value of the wrong shape, read
// again generically to say which element is wrong.
func (s *Server) idsOf(raw json.RawMessage, name string, limit int) ([]int32, *apiError) {
	var ids []int32
	err := json.Unmarshal(raw, &ids)
	if err != nil {
		var v []any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if len(raw) > 1<<20 || dec.Decode(&v) != nil {
			return nil, badRequest(name, "%s: want a list of token ids: %v", name, err)
		}
		for i, x := range v {
			if _, e := s.tokenID(x, name+"["+strconv.Itoa(i)+"]"); e != nil {
				return nil, e
			}
		}
		return nil, badRequest(name, "%s: want a list of token ids: %v", name, err)
	}
	if limit > 0 && len(ids) > limit {
		return nil, badRequest(name, "%s names %d ids; at most %d", name, len(ids), limit)
	}
	return ids, s.inVocab(ids, name)
}

// tooMany refuses a batch of n prompts.
func (s *Server) tooMany(param string, n int) *apiError {
	return badRequest(param, "%s holds %d prompts; at most %d per request (serve --max-prompts)", param, n, s.cfg.MaxPrompts)
}

// checkIDs checks one prompt of token ids: its length, then each id.
func (s *Server) checkIDs(ids []int32, name string) *apiError {
	if e := s.checkLen(ids, name); e != nil {
		return e
	}
	return s.inVocab(ids, name)
}

// inVocab refuses an id outside the vocabulary.
func (s *Server) inVocab(ids []int32, name string) *apiError {
	for i, id := range ids {
		if id < 0 || int(id) >= s.vocab {
			return badRequest(name, "%s[%d] is %d: not a token id of this vocabulary (0..%d)", name, i, id, s.vocab-1)
		}
	}
	return nil
}

// promptsSlow is prompts read generically, for a value of the wrong shape:
// it says which element is wrong and how.
func (s *Server) promptsSlow(raw json.RawMessage, param string, addSpecial bool) ([][]int32, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest(param, "%s: %v", param, err)
	}
	var out [][]int32
	add := func(ids []int32, e *apiError) *apiError {
		if e == nil {
			out = append(out, ids)
		}
		return e
	}
	switch v := v.(type) {
	case string:
		if e := add(s.text(v, param, addSpecial)); e != nil {
			return nil, e
		}
	case []any:
		if len(v) == 0 {
			return nil, badRequest(param, "%s is an empty list", param)
		}
		switch v[0].(type) {
		case json.Number:
			if e := add(s.idList(v, param)); e != nil {
				return nil, e
			}
		case string, []any:
			if len(v) > s.cfg.MaxPrompts {
				return nil, s.tooMany(param, len(v))
			}
			for i, p := range v {
				name := param + "[" + strconv.Itoa(i) + "]"
				var e *apiError
				switch p := p.(type) {
				case string:
					e = add(s.text(p, name, addSpecial))
				case []any:
					e = add(s.idList(p, name))
				default:
					e = badRequest(param, "%s is %s: a batch holds texts or lists of token ids", name, kind(p))
				}
				if e != nil {
					return nil, e
				}
			}
		default:
			return nil, badRequest(param, "%s[0] is %s: want a text, a token id or a list of token ids", param, kind(v[0]))
		}
	default:
		return nil, badRequest(param, "%s is %s: want a text, a list of token ids, or a list of either", param, kind(v))
	}
	return out, nil
}

// text tokenizes one text prompt.
func (s *Server) text(t, name string, addSpecial bool) ([]int32, *apiError) {
	ids := s.tok.Encode(t, addSpecial, false)
	return ids, s.checkLen(ids, name)
}

// idList reads one prompt of token ids.
func (s *Server) idList(v []any, name string) ([]int32, *apiError) {
	if len(v) > s.ctx {
		return nil, s.checkLen(make([]int32, len(v)), name)
	}
	ids := make([]int32, len(v))
	for i, x := range v {
		id, e := s.tokenID(x, name+"["+strconv.Itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		ids[i] = id
	}
	return ids, s.checkLen(ids, name)
}

// tokenID reads one token id.
func (s *Server) tokenID(x any, name string) (int32, *apiError) {
	num, ok := x.(json.Number)
	if !ok {
		return 0, badRequest(name, "%s is %s: want a token id", name, kind(x))
	}
	id, err := strconv.ParseInt(num.String(), 10, 64)
	if err != nil || id < 0 || id >= int64(s.vocab) {
		return 0, badRequest(name, "%s is %s: not a token id of this vocabulary (0..%d)", name, num, s.vocab-1)
	}
	return int32(id), nil
}

// checkLen refuses an empty prompt or one longer than the context.
func (s *Server) checkLen(ids []int32, name string) *apiError {
	switch {
	case len(ids) == 0:
		return badRequest(name, "%s is empty: no tokens to score", name)
	case len(ids) > s.ctx:
		return badRequest(name, "%s has %d tokens; this server's context holds %d (serve --kv-len)", name, len(ids), s.ctx)
	}
	return nil
}

// kind names a JSON value's type for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	}
	return "an object"
}

// tokenText is a token's text as responses show it: what it adds to the
// decoded text, or, for a control token that adds nothing (BOS), its own
// text ("<s>"). A byte token's lone byte shows as U+FFFD in JSON.
func (s *Server) tokenText(id int32) string {
	if p := s.tok.Piece(id); p != "" {
		return p
	}
	return s.tok.TokenText(id)
}

// runeLen is a string's length as Python's len counts it, which vLLM's
// text_offset adds up.
func runeLen(t string) int { return len([]rune(strings.ToValidUTF8(t, "\uFFFD"))) }
