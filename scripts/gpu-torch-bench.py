#!/usr/bin/env python3
"""PyTorch eager bf16 prefill of the shapes scripts/gpu-check.sh times.

The baseline plexbench's device prefill is compared with (issue 22): one
window of --ctx tokens, batch 1, random weights, in the order of a Qwen3
block as Hugging Face's eager code runs it: RMSNorm (in float32, cast
back), q/k/v projections, per-head q/k RMSNorm, NEOX RoPE,
scaled_dot_product_attention (causal, GQA), o projection, SwiGLU FFN,
residual adds; then the output norm and the LM head on the last
--head-rows positions (plexbench's window runs the head on the rows it
scores: the second half) with log-softmax and the target's log-prob, as
perplexity needs. --warmup passes, then the median of --runs timed with
CUDA events (perf_counter on the CPU).

Prints one line, which gpu-check.sh reads:

    torch-bench: qwen3-8b L36 ctx 4096 head 2048 bf16 cuda: median 123.4 ms of 5, 33194.2 tok/s, 512.3 TFLOP/s

FLOPs (multiply-adds × 2), per layer: 2·T·E·(Hq·D + 2·Hkv·D) for q/k/v,
2·T·Hq·D·E for o, 3·2·T·E·F for the FFN, and 2·Hq·D·T·(T+1) for QKᵀ and
PV over the causal half; plus 2·R·E·V for the head over R rows.
"""

import argparse
import statistics
import sys
import time

SHAPES = {
    # name: (embd, heads, kv heads, head dim, ffn, layers, vocab)
    "qwen3-0.6b": (1024, 16, 8, 128, 3072, 28, 151936),
    "qwen3-8b": (4096, 32, 8, 128, 12288, 36, 151936),
    "tiny": (64, 4, 2, 16, 160, 2, 512),  # a smoke test of this script
}


def flops(e, hq, hkv, d, ff, layers, t, r, vocab):
    """The FLOP count of one prefill window (see the module's docstring)."""
    per_layer = 2 * t * e * (hq * d + 2 * hkv * d) + 2 * t * hq * d * e + 3 * 2 * t * e * ff + 2 * hq * d * t * (t + 1)
    return layers * per_layer + 2 * r * e * vocab


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-0.6b")
    ap.add_argument("--layers", type=int, default=0, help="blocks (0: the shape's own)")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--head-rows", type=int, default=-1, help="rows the LM head runs on (-1: ctx/2, as a perplexity window)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as err:
        print(f"torch-bench: SKIP no torch ({err})")
        return 0
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("torch-bench: SKIP torch has no CUDA device")
        return 0

    e, hq, hkv, d, ff, layers, vocab = SHAPES[a.shape]
    layers = a.layers or layers
    t = a.ctx
    r = t // 2 if a.head_rows < 0 else a.head_rows
    dev, dt = torch.device(a.device), getattr(torch, a.dtype)
    torch.manual_seed(1)
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    def mat(rows, cols):
        return (torch.randn(rows, cols, device=dev, dtype=torch.float32) * (cols**-0.5)).to(dt)

    def vec(n):
        return (1 + 0.03 * torch.randn(n, device=dev, dtype=torch.float32)).to(dt)

    blocks = [
        dict(
            attn_norm=vec(e), wq=mat(hq * d, e), wk=mat(hkv * d, e), wv=mat(hkv * d, e), q_norm=vec(d), k_norm=vec(d),
            wo=mat(e, hq * d), ffn_norm=vec(e), gate=mat(ff, e), up=mat(ff, e), down=mat(e, ff),
        )
        for _ in range(layers)
    ]
    embd, out_norm, out = mat(vocab, e), vec(e), mat(vocab, e)
    tokens = torch.randint(0, vocab, (t + 1,), device=dev)

    # NEOX RoPE tables, base 1e6 as Qwen3's.
    inv = 1.0 / (1e6 ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(t, device=dev, dtype=torch.float32), inv)
    cos, sin = torch.cat([ang.cos()] * 2, -1).to(dt), torch.cat([ang.sin()] * 2, -1).to(dt)

    def rms(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w

    def rope(x):  # (heads, t, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def attention(q, k, v):  # (heads, t, d), (kv, t, d)
        k, v = k.repeat_interleave(hq // hkv, 0), v.repeat_interleave(hq // hkv, 0)
        if sdpa is not None:
            return sdpa(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), is_causal=True).squeeze(0)
        s = (q @ k.transpose(-1, -2)).float() * d**-0.5  # torch < 2.0: no SDPA
        s = s.masked_fill(torch.ones(t, t, device=dev, dtype=torch.bool).triu(1), float("-inf"))
        return (s.softmax(-1).to(v.dtype)) @ v

    def forward():
        x = embd[tokens[:t]]
        for b in blocks:
            h = rms(x, b["attn_norm"])
            q = rms((h @ b["wq"].T).view(t, hq, d), b["q_norm"]).transpose(0, 1)
            k = rms((h @ b["wk"].T).view(t, hkv, d), b["k_norm"]).transpose(0, 1)
            v = (h @ b["wv"].T).view(t, hkv, d).transpose(0, 1)
            o = attention(rope(q), rope(k), v).transpose(0, 1).reshape(t, hq * d)
            x = x + o @ b["wo"].T
            h = rms(x, b["ffn_norm"])
            x = x + (F.silu(h @ b["gate"].T) * (h @ b["up"].T)) @ b["down"].T
        h = rms(x[t - r :], out_norm)
        lp = (h @ out.T).float().log_softmax(-1)
        return lp.gather(1, tokens[t - r + 1 : t + 1, None]).sum()

    cuda = dev.type == "cuda"
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.runs):
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                forward()
                end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                forward()
                ms = (time.perf_counter() - t0) * 1e3
            if i >= a.warmup:
                times.append(ms)
    med = statistics.median(times)
    fl = flops(e, hq, hkv, d, ff, layers, t, r, vocab)
    note = "" if sdpa is not None else " (no SDPA in this torch: masked softmax)"
    print(
        f"torch-bench: {a.shape} L{layers} ctx {t} head {r} {a.dtype} {dev.type}: median {med:.1f} ms of {len(times)}, "
        f"{t / med * 1e3:.1f} tok/s, {fl / med / 1e9:.1f} TFLOP/s{note}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
