package scoring

// windows.go owns the token-window geometry of both methods: which tokens
// each window feeds to prefill, which of its rows are scored, and the size
// checks that refuse a run before any work.

import (
	"errors"
	"fmt"

	"plexbench/kernels"
)

// ErrTooFewTokens marks a text too short for the method and ctx.
var ErrTooFewTokens = errors.New("too few tokens")

// Geometry is how a token stream is cut into windows.
type Geometry struct {
	Method string // MethodChunks or MethodSliding ("" = chunks)
	Ctx    int    // tokens per chunk or window
	Stride int    // sliding: tokens between window starts (0 = Ctx); chunks: 0 or Ctx
	Chunks int    // score only the first Chunks windows; <= 0: all

	// AddBOS and BOS: each window's first token is overwritten by BOS for
	// the forward pass when the vocab asks for BOS (llama-perplexity's
	// chunks rule, used for both methods).
	AddBOS bool
	BOS    int32

	// KVCapacity, when > 0, is the engine's KV cache size; a window longer
	// than it is refused.
	KVCapacity int
}

// Window is one chunk or window. Tokens [Begin, End) of the text go
// through prefill at positions 0..End-Begin-1, with the first replaced by
// BOSID when SubstituteBOS. Rows FirstRow..FirstRow+Scored-1 (window
// positions) are scored; row p predicts text token Begin+p+1, so the
// targets are FirstTarget..End-1 for both methods.
type Window struct {
	Index         int
	Begin, End    int
	FirstTarget   int
	Scored        int
	FirstRow      int
	SubstituteBOS bool
	BOSID         int32
}

// LastRow is the window position of the last scored row.
func (w Window) LastRow() int { return w.FirstRow + w.Scored - 1 }

// Len is the number of tokens the window sends through prefill.
func (w Window) Len() int { return w.End - w.Begin }

// Input returns the window's prefill tokens, copied into dst (grown when
// too short) with the BOS substitution applied; tokens is never modified.
func (w Window) Input(tokens, dst []int32) []int32 {
	n := w.Len()
	dst = kernels.Grow(dst, n)
	copy(dst, tokens[w.Begin:w.End])
	if w.SubstituteBOS && n > 0 {
		dst[0] = w.BOSID
	}
	return dst
}

// Plan is the resolved geometry and its windows.
type Plan struct {
	Method      string
	Ctx         int
	Stride      int // chunks: Ctx
	ChunkLimit  int // as requested; 0 = all
	Tokens      int // tokens in the text
	Windows     []Window
	Scored      int // tokens scored over all windows
	PrefillToks int // tokens sent through prefill over all windows
	WindowsMax  int // windows before the chunk limit
}

// resolve fills defaults and checks everything that does not depend on the
// text, so a bad ctx is refused before tokenizing.
func (g Geometry) resolve() (Geometry, error) {
	if g.Method == "" {
		g.Method = MethodChunks
	}
	if g.Ctx <= 0 {
		return g, badRequest("ctx must be > 0, got %d", g.Ctx)
	}
	if g.Chunks < 0 {
		g.Chunks = 0
	}
	switch g.Method {
	case MethodChunks:
		if g.Stride != 0 && g.Stride != g.Ctx {
			return g, badRequest("stride %d applies to method %s only; method %s uses stride = ctx %d",
				g.Stride, MethodSliding, MethodChunks, g.Ctx)
		}
		g.Stride = g.Ctx
		if g.Ctx < 2 {
			// ctx 1 has no scored row (ctx − ctx/2 − 1 = 0).
			return g, badRequest("method %s needs ctx >= 2, got %d", g.Method, g.Ctx)
		}
	case MethodSliding:
		if g.Stride == 0 {
			g.Stride = g.Ctx
		}
		if g.Stride < 1 || g.Stride > g.Ctx {
			return g, badRequest("stride %d out of range 1..ctx (%d)", g.Stride, g.Ctx)
		}
		if g.Ctx < 2 {
			return g, badRequest("method %s needs ctx >= 2, got %d", g.Method, g.Ctx)
		}
	default:
		return g, badRequest("unknown method %q (want %s or %s)", g.Method, MethodChunks, MethodSliding)
	}
	if g.KVCapacity > 0 && g.Ctx > g.KVCapacity {
		return g, badRequest("ctx %d exceeds the KV cache capacity %d (raise --kv-len or lower the ctx)",
			g.Ctx, g.KVCapacity)
	}
	return g, nil
}

// PlanWindows cuts n tokens into windows. Both methods need at least
// 2·ctx tokens, as llama-perplexity does.
//
// chunks (llama-perplexity): floor(n/ctx) chunks [i·ctx, (i+1)·ctx), the
// remainder dropped; rows ctx/2..ctx−2 are scored (targets ctx/2+1..ctx−1,
// ctx−ctx/2−1 per chunk); the first token is replaced by BOS for the
// forward pass when AddBOS.
//
// sliding (our own method, not llama.cpp's --ppl-stride): window i holds
// tokens [i·stride, min(i·stride+ctx, n)) and scores exactly the targets no
// earlier window scored, stopping at the window that reaches the end of the
// text. stride == ctx: each window scores all its tokens but the first.
// stride < ctx: every token but the text's first is scored exactly once,
// with at least ctx−stride tokens of context after the first window. The
// last window may be shorter than ctx so the tail is scored too. The BOS
// rule is the chunks one: when the vocab asks for BOS, each window's first
// token is replaced by BOS for the forward pass, so every window starts
// like a fresh prompt (llama.cpp's --ppl-stride mode, which we do not
// reproduce, substitutes none).
func PlanWindows(n int, g Geometry) (Plan, error) {
	g, err := g.resolve()
	if err != nil {
		return Plan{}, err
	}
	if n < 2*g.Ctx {
		return Plan{}, fmt.Errorf("%w: text tokenizes to %d tokens; method %s at ctx %d needs at least %d",
			ErrTooFewTokens, n, g.Method, g.Ctx, 2*g.Ctx)
	}
	p := Plan{Method: g.Method, Ctx: g.Ctx, Stride: g.Stride, ChunkLimit: g.Chunks, Tokens: n}
	if g.Method == MethodChunks {
		first := g.Ctx / 2
		count := n / g.Ctx
		p.WindowsMax = count
		if g.Chunks > 0 && g.Chunks < count {
			count = g.Chunks
		}
		p.Windows = make([]Window, count)
		for i := range p.Windows {
			b := i * g.Ctx
			p.Windows[i] = Window{
				Index: i, Begin: b, End: b + g.Ctx,
				FirstTarget: b + first + 1, Scored: g.Ctx - 1 - first, FirstRow: first,
				SubstituteBOS: g.AddBOS, BOSID: g.BOS,
			}
		}
	} else {
		next := 1 // first target not yet scored; token 0 never is
		for b := 0; b < n; b += g.Stride {
			e := min(b+g.Ctx, n)
			ft := max(b+1, next)
			if ft < e {
				p.Windows = append(p.Windows, Window{
					Index: len(p.Windows), Begin: b, End: e,
					FirstTarget: ft, Scored: e - ft, FirstRow: ft - b - 1,
					SubstituteBOS: g.AddBOS, BOSID: g.BOS,
				})
				next = e
			}
			if e == n {
				break
			}
		}
		p.WindowsMax = len(p.Windows)
		if g.Chunks > 0 && g.Chunks < len(p.Windows) {
			p.Windows = p.Windows[:g.Chunks]
		}
	}
	for _, w := range p.Windows {
		p.Scored += w.Scored
		p.PrefillToks += w.Len()
	}
	return p, nil
}
