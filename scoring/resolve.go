package scoring

// resolve.go owns what a request becomes before its first window: the
// geometry (method, ctx, stride, chunk limit, from the request and a
// base), the token ids (the text's, or the base's), and the check that a
// base covers the windows planned.

import (
	"fmt"
)

// geometryFor resolves method/ctx/stride/chunks from the request and, when
// comparing, the base: zero request fields take the base's values, others
// must agree with it, but for the chunks: a run may score fewer than the
// base holds (its first ones; a partial base is checked after planning).
// KV capacity is checked here, before tokenizing.
func geometryFor(req *Request, base *BaseReader, info ModelInfo, cfg EngineConfig) (Geometry, error) {
	if base == nil {
		return geometryOf(req, nil, "", info, cfg)
	}
	return geometryOf(req, &base.Header, base.Name, info, cfg)
}

// CheckGeometry is the geometry a run of req would take, or its refusal,
// found before the model loads: against the base whose header is h (nil
// when the run compares against none; name for messages) and, when
// kvCapacity > 0, within a KV cache of that many positions.
func CheckGeometry(req Request, h *BaseHeader, name string, kvCapacity int) (Geometry, error) {
	return geometryOf(&req, h, name, ModelInfo{}, EngineConfig{KVCapacity: kvCapacity})
}

func geometryOf(req *Request, h *BaseHeader, name string, info ModelInfo, cfg EngineConfig) (Geometry, error) {
	g := Geometry{Method: req.Method, Ctx: req.Ctx, Stride: req.Stride, Chunks: req.Chunks,
		AddBOS: info.AddBOS, BOS: info.BOS, KVCapacity: cfg.KVCapacity}
	if h != nil {
		mismatch := func(field string, b, run any) error {
			return fmt.Errorf("%w: %s: %s is %v in the base, %v in this run", ErrBaseMismatch, name, field, b, run)
		}
		if g.Method == "" {
			g.Method = h.Method
		} else if g.Method != h.Method {
			return g, mismatch("method", h.Method, g.Method)
		}
		if g.Ctx == 0 {
			g.Ctx = h.Ctx
		} else if g.Ctx != h.Ctx {
			return g, mismatch("ctx", h.Ctx, g.Ctx)
		}
		if g.Stride == 0 {
			g.Stride = h.Stride
		} else if g.Stride != h.Stride {
			return g, mismatch("stride", h.Stride, g.Stride)
		}
		switch {
		case g.Chunks <= 0:
			g.Chunks = h.ChunkLimit
		case h.ChunkLimit > 0 && g.Chunks > h.ChunkLimit && !h.Partial(): // a partial base is checked after planning
			return g, fmt.Errorf("%w: %s holds the first %d chunks (its chunk limit), this run asks for %d: give --perplexity-chunks %d or less, or leave it out to score all the base holds",
				ErrBaseMismatch, name, h.ChunkLimit, g.Chunks, h.ChunkLimit)
		}
	}
	if g.Ctx == 0 {
		g.Ctx = DefaultCtx
	}
	return g.resolve()
}

// requestTokens is what the request gives to score: its text tokenized,
// or its tokens; nil when it gives neither (the base's are scored).
func requestTokens(req *Request, eng Engine) ([]int32, error) {
	switch {
	case req.Text != "":
		src := "text"
		if req.TextPath != "" {
			src = req.TextPath
		}
		tokens, err := eng.Tokenize(req.Text)
		if err != nil {
			return nil, fmt.Errorf("tokenizing %s: %w", src, err)
		}
		if len(tokens) == 0 {
			return nil, badRequest("%s tokenizes to no tokens", src)
		}
		return tokens, nil
	case len(req.Tokens) > 0:
		return req.Tokens, nil
	}
	return nil, nil
}

// tokensFor returns the ids to score: the base's when comparing (the
// request's were checked against them: checkParity), else the request's.
// Every id must be inside the vocabulary.
func tokensFor(req *Request, tokens []int32, base *BaseReader, info ModelInfo) ([]int32, error) {
	src := "tokens"
	if req.TextPath != "" {
		src = req.TextPath
	}
	if base != nil {
		tokens, src = base.Tokens, base.Name
	}
	if tokens == nil {
		return nil, badRequest("nothing to score: text and tokens are empty")
	}
	if v := info.VocabSize; v > 0 {
		for i, t := range tokens {
			if t < 0 || int(t) >= v {
				return nil, badRequest("%s: token %d at index %d is outside the vocabulary (size %d)", src, t, i, v)
			}
		}
	}
	return tokens, nil
}

// baseCovers checks that a base holds the windows plan scores: all of
// them, or its first ones (a partial base, or a run of fewer chunks).
func baseCovers(base *BaseReader, plan Plan) error {
	if base == nil {
		return nil
	}
	h := &base.Header
	if h.Partial() || len(plan.Windows) < h.Windows {
		// A partial base's first windows, or the first of a complete one
		// (a run limited to fewer chunks).
		if len(plan.Windows) > h.Windows {
			return fmt.Errorf("%w: %s is a partial base holding %d windows, this run needs %d: give --perplexity-chunks %s",
				ErrBaseMismatch, base.Name, h.Windows, len(plan.Windows), chunksUpTo(h.Windows))
		}
		if plan.Scored > h.Scored {
			return fmt.Errorf("%w: %s is a partial base holding %d scored tokens, this run scores %d",
				ErrBaseMismatch, base.Name, h.Scored, plan.Scored)
		}
		return nil
	}
	if plan.Scored != h.Scored || len(plan.Windows) != h.Windows {
		return fmt.Errorf("%w: %s holds %d windows / %d scored tokens, this run plans %d / %d",
			ErrBaseMismatch, base.Name, h.Windows, h.Scored, len(plan.Windows), plan.Scored)
	}
	return nil
}

// shard is the part of p a run of shard s scores: every window without
// a shard.
func (p Plan) shard(s ShardSpec) Plan {
	if s.N == 0 {
		return p
	}
	all := p.Windows
	p.Windows, p.Scored, p.PrefillToks = nil, 0, 0
	for _, w := range all {
		if s.has(w.Index) {
			p.Windows = append(p.Windows, w)
			p.Scored += w.Scored
			p.PrefillToks += w.Len()
		}
	}
	return p
}

// chunksUpTo is the --perplexity-chunks values that ask for at most n
// windows (0 means all of them, so it is not one).
func chunksUpTo(n int) string {
	if n == 1 {
		return "1"
	}
	return fmt.Sprintf("from 1 to %d", n)
}
