package engine

// This file owns the memory check Load makes before it allocates what the
// options size: the KV cache (kv-len × the attention layers) and the pass
// buffers (tokens per pass × the model's widths), against the memory the
// machine has left (internal/sysmem), so that a kv-len or batch it cannot
// hold is refused in one line instead of ending the process out of memory.

import (
	"fmt"
	"strings"

	"plexbench/internal/sysmem"
)

// memoryAsks is what Load allocates that opt sizes. The attention
// scratch, which grows with the longest window scored, is not counted:
// it is sized by the window, not by kv-len.
func memoryAsks(hp *hparams, opt Options, ub int) []sysmem.Ask {
	kv := sysmem.Ask{
		What:  fmt.Sprintf("a KV cache of %d positions in %s", opt.KVLen, strings.ToLower(opt.KVType.String())),
		Flag:  "--kv-len",
		Fix:   "lower --kv-len (or the ctx, which sizes the cache when --kv-len is not given)",
		Bytes: kvCacheBytes(hp, opt.KVType, opt.KVLen),
	}
	pass := sysmem.Ask{
		What:  fmt.Sprintf("pass buffers of %d tokens (the least of batch and ubatch size)", ub),
		Flag:  "--ubatch-size",
		Bytes: int64(ub) * passFloats(hp) * 4,
	}
	return []sysmem.Ask{kv, pass}
}

// passFloats is the float32s per token of the pass buffers (newPass) and
// of the hybrids' GDN and MoE scratch.
func passFloats(hp *hparams) int64 {
	var maxQ, maxKV, maxFF int
	for l := range hp.nLayer {
		maxQ = max(maxQ, hp.nHead[l]*hp.headDim)
		maxKV = max(maxKV, hp.nHeadKV[l]*hp.headDim)
		maxFF = max(maxFF, hp.nFF[l])
	}
	maxFF = max(maxFF, hp.moe.ffShared)
	n := 4*hp.nEmbd + 2*maxQ + 2*maxKV + 2*maxFF + hp.nRot
	if hp.recurrent != nil {
		s := hp.ssm
		n += 3*maxQ + 2*s.convDim() + 2*s.valueDim() + 4*s.hv // qwen35's qg and gate, the GDN scratch
	}
	if m := hp.moe; m.nExpert > 0 {
		n += m.nExpert + 2*hp.nEmbd + 2*max(m.ffExp, m.ffShared) + m.nUsed*(hp.nEmbd+3) + 1
	}
	return int64(n)
}

// checkMemory refuses options whose allocations do not fit a.
func checkMemory(hp *hparams, opt Options, ub int, a sysmem.Avail) error {
	if err := sysmem.Check(a, memoryAsks(hp, opt, ub)...); err != nil {
		return fmt.Errorf("%w: %w", ErrInput, err)
	}
	return nil
}
