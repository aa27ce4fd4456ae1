package engine

import (
	"errors"
	"strings"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/internal/sysmem"
	"plexbench/kernels"
)

// TestTensorAccounting: as llama.cpp's loader, Load accounts for every
// tensor of the file. A block_count below the file's blocks leaves tensors
// unused and is refused naming them (llama.cpp's "wrong number of
// tensors"); one above them is refused naming every missing tensor; a
// tensor the architecture does not load is refused; a reranker's head is
// not.
func TestTensorAccounting(t *testing.T) {
	good := build(t, specs["qwen3"], 21) // 2 blocks
	extra := func(name string) func(*editor) {
		return func(e *editor) {
			e.tensors = append(e.tensors, gguf.TensorInfo{Name: name, Type: kernels.F32, Dims: []int64{16}})
			if e.from == nil {
				e.from = map[string]string{}
			}
			e.from[name] = "blk.0.attn_q_norm.weight" // 16 f32
		}
	}
	cases := []struct {
		name string
		edit func(*editor)
		want []string // substrings of the one-line error; nil: loads
	}{
		{"block_count 1 of 2", func(e *editor) { e.setKey("qwen3.block_count", uint32(1)) }, []string{
			"invalid model: wrong number of tensors; expected 13, got 24: 11 not used by qwen3",
			"(qwen3.block_count is 1, the file has tensors for 2 blocks)",
			": blk.1.attn_norm.weight, blk.1.attn_q.weight, blk.1.attn_k.weight, blk.1.attn_v.weight, …"}},
		{"block_count 3 of 2", func(e *editor) { e.setKey("qwen3.block_count", uint32(3)) }, []string{
			`invalid model: tensor "blk.2.attn_norm.weight" is missing, and 10 more (blk.2.attn_q.weight, blk.2.attn_k.weight, blk.2.attn_v.weight, blk.2.attn_q_norm.weight, …)`,
			"(qwen3.block_count is 3, the file has tensors for 2 blocks)"}},
		{"a tensor qwen3 does not load", extra("rope_freqs.weight"), []string{
			"wrong number of tensors; expected 24, got 25: 1 not used by qwen3: rope_freqs.weight"}},
		{"a reranker's head", extra("cls_out.weight"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := rewrite(t, good.path, c.edit)
			m, err := Load(path, Options{Threads: 1, KVLen: 32})
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				m.Close()
				return
			}
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !errors.Is(err, ErrModel) || !strings.HasPrefix(msg, "engine: "+path+": ") || strings.Contains(msg, "\n") {
				t.Errorf("err %q: want one ErrModel line naming %s", msg, path)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("err %q\nwant it to contain %q", msg, w)
				}
			}
		})
	}
}

// TestMemoryCheck: the bytes Load asks for are what it allocates (the KV
// cache exactly, the pass buffers at least), and a request over the
// memory available is refused in one line naming the flag to lower.
func TestMemoryCheck(t *testing.T) {
	fx := build(t, specs["qwen3"], 22)
	m := open(t, fx, Options{Threads: 1, KVLen: 100, KVType: kernels.F16, UBatchSize: 48})
	hp, opt := m.hp, m.opt
	asks := memoryAsks(hp, opt, m.ub)
	var kv int64
	for l := range hp.nLayer {
		kv += int64(len(m.kv.k[l]) + len(m.kv.v[l]))
	}
	if asks[0].Bytes != kv {
		t.Errorf("KV cache: asks %d bytes, allocates %d", asks[0].Bytes, kv)
	}
	p := m.p
	var pass int64
	for _, b := range [][]float32{p.x, p.xn, p.tmp, p.q, p.k, p.v, p.att, p.gate, p.up, p.hidden, p.cos, p.sin} {
		pass += 4 * int64(len(b))
	}
	if asks[1].Bytes < pass {
		t.Errorf("pass buffers: asks %d bytes, allocates %d", asks[1].Bytes, pass)
	}
	need := asks[0].Bytes + asks[1].Bytes
	fits := sysmem.Avail{Bytes: need, Known: true, From: "MemAvailable"}
	if err := checkMemory(hp, opt, m.ub, fits); err != nil {
		t.Errorf("exactly enough: %v", err)
	}
	if err := checkMemory(hp, opt, m.ub, sysmem.Avail{}); err != nil {
		t.Errorf("unknown memory: %v", err)
	}
	short := fits
	short.Bytes--
	err := checkMemory(hp, opt, m.ub, short)
	if !errors.Is(err, ErrInput) || !errors.Is(err, sysmem.ErrTooLarge) {
		t.Fatalf("one byte short: err %v", err)
	}

	long := opt
	long.KVLen = 1 << 22
	err = checkMemory(hp, long, m.ub, sysmem.Avail{Bytes: 512 << 20, Known: true, From: "MemAvailable"})
	want := "invalid input: not enough memory: a KV cache of 4194304 positions in f16 (--kv-len) takes 1.0 GiB; 512.0 MiB is available (MemAvailable): lower --kv-len (or the ctx, which sizes the cache when --kv-len is not given)"
	if err == nil || err.Error() != want {
		t.Errorf("kv-len 4194304:\n got %v\nwant %s", err, want)
	}
	err = checkMemory(hp, opt, 1<<22, sysmem.Avail{Bytes: 1 << 30, Known: true, From: "the cgroup's memory limit"})
	if err == nil || !strings.HasSuffix(err.Error(), "is available (the cgroup's memory limit): lower --ubatch-size") {
		t.Errorf("4194304 tokens a pass: %v", err)
	}
}

// TestMemoryCheckHybrid: a hybrid's pass asks for at least what its pass
// buffers and GDN and MoE scratch grow to.
func TestMemoryCheckHybrid(t *testing.T) {
	for _, arch := range []string{"qwen35", "qwen3next"} {
		m, err := Load(writeHybrid(t, tinyHybrid(arch)), Options{Threads: 1, KVType: kernels.F32, KVLen: 32, UBatchSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int32, 20)
		for i := range ids {
			ids[i] = int32(3 + i)
		}
		if err := m.Prefill(t.Context(), ids, 0, func(int, []float32, int) error { return nil }); err != nil {
			t.Fatal(err)
		}
		p, s := m.p, &m.p.hyb
		var n int
		for _, b := range [][]float32{p.x, p.xn, p.tmp, p.q, p.k, p.v, p.att, p.gate, p.up, p.hidden, p.cos, p.sin,
			s.qg, s.gate, s.gdn.mixed, s.gdn.act, s.gdn.z, s.gdn.b, s.gdn.a, s.gdn.ba, s.gdn.o,
			s.moe.probs, s.moe.w, s.moe.x, s.moe.g, s.moe.u, s.moe.y, s.moe.slots, s.moe.shGate} {
			n += len(b)
		}
		n += len(s.moe.sel) + len(s.moe.rows)
		if ask := memoryAsks(m.hp, m.opt, m.ub)[1].Bytes; ask < 4*int64(n) {
			t.Errorf("%s: pass buffers ask %d bytes, allocate %d", arch, ask, 4*n)
		}
		m.Close()
	}
}
