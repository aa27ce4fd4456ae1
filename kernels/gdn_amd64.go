//go:build !purego

package kernels

// This file owns the Go side of gdn_amd64.s, the two passes of one token
// of deltaRuleAVX2 over a (dk, dv) state (dk ≥ 1, dv a multiple of 8).
// Callers check CPU().HasAVX2() first.

// gdnDecayDot scales every state element by e in place and writes
// u[c] = Σ_r s[r][c]·k[r] (over the scaled state, r in order).
//
//go:noescape
func gdnDecayDotAVX2(s, k, u *float32, e float32, dk, dv int)

// gdnUpdateDot adds k[r]·d[c] to every state element in place and writes
// o[c] = Σ_r s[r][c]·q[r] (over the updated state, r in order).
//
//go:noescape
func gdnUpdateDotAVX2(s, k, q, d, o *float32, dk, dv int)

func gdnDecayDot(s, k, u *float32, e float32, dk, dv int) { gdnDecayDotAVX2(s, k, u, e, dk, dv) }

func gdnUpdateDot(s, k, q, d, o *float32, dk, dv int) { gdnUpdateDotAVX2(s, k, q, d, o, dk, dv) }
