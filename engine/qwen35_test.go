package engine

// Tests of the Gated DeltaNet hybrids: tiny random qwen35, qwen35moe and
// qwen3next files written by synth.WriteHybrid, against a plain float64
// forward pass over their dequantized weights written here from
// ../shared/spec/architectures.md §5 (one GDN layer, one gated attention
// layer, one MoE FFN, then whole models), and across pass plans.

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/kernels"
)

// tinyHybrid is synth's tiny preset of arch (6 layers, attention at 2
// and 5, partial RoPE, r = 2 value heads per key head, 6 experts of which
// 2 run plus a shared one) with a placeholder vocabulary.
func tinyHybrid(arch string) synth.Hybrid {
	h, err := synth.HybridPreset(arch + "-tiny")
	if err != nil {
		panic(err)
	}
	h.Vocab, h.Seed = synth.PlaceholderVocab(96), 9
	return h
}

func writeHybrid(t testing.TB, h synth.Hybrid) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), h.Arch+".gguf")
	if err := synth.WriteHybrid(path, h); err != nil {
		t.Fatal(err)
	}
	return path
}

// hybridRef is the float64 forward pass of a hybrid file.
type hybridRef struct {
	t   testing.TB
	f   *gguf.File
	h   synth.Hybrid
	eps float64
	w   map[string][]float64 // dequantized tensors by name, loaded once
}

func (r *hybridRef) get(name string) []float64 {
	if v, ok := r.w[name]; ok {
		return v
	}
	v := r.load(name)
	r.w[name] = v
	return v
}

// load dequantizes one tensor (nil when the file has none).
func (r *hybridRef) load(name string) []float64 {
	ti, ok := r.f.Tensor(name)
	if !ok {
		return nil
	}
	v := make([]float32, ti.Elements())
	if err := kernels.Dequantize(ti.Type, r.f.TensorData(ti), v); err != nil {
		r.t.Fatal(err)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// matvec is W·x for W of ggml shape {len(x), rows} starting at w.
func matvec(w, x []float64, rows int) []float64 {
	y := make([]float64, rows)
	for r := range rows {
		for c, xv := range x {
			y[r] += w[r*len(x)+c] * xv
		}
	}
	return y
}

func (r *hybridRef) rms(x, w []float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	sc := 1 / math.Sqrt(ss/float64(len(x))+r.eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * sc * w[i]
	}
	return y
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
func silu64(x float64) float64    { return x * sigmoid64(x) }

func (r *hybridRef) logits(tokens []int32) [][]float64 {
	h := r.h
	n, e := len(tokens), h.Embd
	emb := r.get("token_embd.weight")
	x := make([][]float64, n)
	for t, id := range tokens {
		x[t] = slices.Clone(emb[int(id)*e : (int(id)+1)*e])
	}
	for l := range h.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		xn := make([][]float64, n)
		for t := range n {
			xn[t] = r.rms(x[t], r.get(p+"attn_norm.weight"))
		}
		var out [][]float64
		if h.IsRecurrent(l) {
			out = r.gdn(p, xn)
		} else {
			out = r.attention(p, xn)
		}
		for t := range n {
			for i := range e {
				x[t][i] += out[t][i]
			}
			xn[t] = r.rms(x[t], r.get(p+"post_attention_norm.weight"))
		}
		for t := range n {
			var y []float64
			if h.Experts > 0 {
				y = r.moe(p, xn[t])
			} else {
				y = r.ffn(p+"ffn_gate.weight", p+"ffn_up.weight", p+"ffn_down.weight", h.FF, xn[t])
			}
			for i := range e {
				x[t][i] += y[i]
			}
		}
	}
	outW := r.get("output.weight")
	if outW == nil {
		outW = emb
	}
	lg := make([][]float64, n)
	for t := range n {
		lg[t] = matvec(outW, r.rms(x[t], r.get("output_norm.weight")), h.Vocab.Size)
	}
	return lg
}

func (r *hybridRef) ffn(gate, up, down string, ff int, xn []float64) []float64 {
	g := matvec(r.get(gate), xn, ff)
	u := matvec(r.get(up), xn, ff)
	for i := range g {
		g[i] = silu64(g[i]) * u[i]
	}
	return matvec(r.get(down), g, r.h.Embd)
}

// expert returns expert x's rows of a 3-D {cols, rows, E} tensor.
func expert(w []float64, x, cols, rows int) []float64 { return w[x*cols*rows : (x+1)*cols*rows] }

func (r *hybridRef) moe(p string, xn []float64) []float64 {
	h, e := r.h, r.h.Embd
	logits := matvec(r.get(p+"ffn_gate_inp.weight"), xn, h.Experts)
	mx := slices.Max(logits)
	probs := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		probs[i] = math.Exp(v - mx)
		sum += probs[i]
	}
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
		probs[i] /= sum
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case probs[a] > probs[b]:
			return -1
		case probs[a] < probs[b]:
			return 1
		}
		return 0
	})
	sel := order[:h.ExpertsUsed]
	var selSum float64
	for _, x := range sel {
		selSum += probs[x]
	}
	y := make([]float64, e)
	gateW, upW, downW := r.get(p+"ffn_gate_exps.weight"), r.get(p+"ffn_up_exps.weight"), r.get(p+"ffn_down_exps.weight")
	for _, x := range sel {
		g := matvec(expert(gateW, x, e, h.ExpertFF), xn, h.ExpertFF)
		u := matvec(expert(upW, x, e, h.ExpertFF), xn, h.ExpertFF)
		for i := range g {
			g[i] = silu64(g[i]) * u[i]
		}
		d := matvec(expert(downW, x, h.ExpertFF, e), g, e)
		for i := range y {
			y[i] += probs[x] / selSum * d[i]
		}
	}
	if h.SharedFF > 0 {
		gs := sigmoid64(matvec(r.get(p+"ffn_gate_inp_shexp.weight"), xn, 1)[0])
		ys := r.ffn(p+"ffn_gate_shexp.weight", p+"ffn_up_shexp.weight", p+"ffn_down_shexp.weight", h.SharedFF, xn)
		for i := range y {
			y[i] += gs * ys[i]
		}
	}
	return y
}

func (r *hybridRef) attention(p string, xn [][]float64) [][]float64 {
	h := r.h
	n, hd, heads, kvh := len(xn), h.HeadDim, h.Heads, h.KVHeads
	rope := func(v []float64, pos int) {
		half := h.Rot / 2
		ts := float32(math.Pow(1e7, float64(-2/float32(h.Rot))))
		th := float32(pos)
		sec := []int64{0, 0, 0, 0} // as written (WriteHybrid fills the default)
		if v, ok := r.f.Ints(h.Arch + ".rope.dimension_sections"); ok {
			sec = v
		}
		total := int(sec[0] + sec[1] + sec[2] + sec[3])
		for i := range half {
			a := float64(th)
			// IMROPE (qwen35*): the pairs of stream e take position 0.
			if k := i % max(total, 1); h.Arch != "qwen3next" && !(k%3 == 0 && k < 3*int(sec[0]) || k%3 == 1 && k < 3*int(sec[1]) || k%3 == 2 && k < 3*int(sec[2])) {
				a = 0
			}
			c, s := math.Cos(a), math.Sin(a)
			v[i], v[i+half] = v[i]*c-v[i+half]*s, v[i]*s+v[i+half]*c
			th *= ts
		}
	}
	Q, G, K, V := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for t := range n {
		qg := matvec(r.get(p+"attn_q.weight"), xn[t], 2*heads*hd)
		K[t] = matvec(r.get(p+"attn_k.weight"), xn[t], kvh*hd)
		V[t] = matvec(r.get(p+"attn_v.weight"), xn[t], kvh*hd)
		for hh := range heads {
			q := r.rms(qg[2*hd*hh:2*hd*hh+hd], r.get(p+"attn_q_norm.weight"))
			rope(q, t)
			Q[t] = append(Q[t], q...)
			G[t] = append(G[t], qg[2*hd*hh+hd:2*hd*(hh+1)]...)
		}
		for g := range kvh {
			k := r.rms(K[t][g*hd:(g+1)*hd], r.get(p+"attn_k_norm.weight"))
			rope(k, t)
			copy(K[t][g*hd:], k)
		}
	}
	out := causalAttention64(Q, K, V, heads, kvh, hd, 1/math.Sqrt(float64(hd)))
	for t, att := range out {
		for i := range att {
			att[i] *= sigmoid64(G[t][i])
		}
		out[t] = matvec(r.get(p+"attn_output.weight"), att, h.Embd)
	}
	return out
}

func (r *hybridRef) gdn(p string, xn [][]float64) [][]float64 {
	h := r.h
	n, dk, hk, hv := len(xn), h.StateSize, h.KeyHeads, h.ValueHeads
	dc64, _ := r.f.Int(h.Arch + ".ssm.conv_kernel") // as written (WriteHybrid fills the default)
	dc := int(dc64)
	kd, vd := hk*dk, hv*dk
	cd, rr := 2*kd+vd, hv/hk
	conv, dt, A, nw := r.get(p+"ssm_conv1d.weight"), r.get(p+"ssm_dt.bias"), r.get(p+"ssm_a"), r.get(p+"ssm_norm.weight")
	mixed := make([][]float64, n)
	S := make([][]float64, hv) // per v-head (dk, dv)
	for j := range S {
		S[j] = make([]float64, dk*dk)
	}
	out := make([][]float64, n)
	for t := range n {
		mixed[t] = matvec(r.get(p+"attn_qkv.weight"), xn[t], cd)
		z := matvec(r.get(p+"attn_gate.weight"), xn[t], vd)
		b, a := make([]float64, hv), make([]float64, hv)
		if h.Arch == "qwen3next" {
			ba := matvec(r.get(p+"ssm_ba.weight"), xn[t], 2*hv)
			for j := range hv {
				kg, i := j/rr, j%rr
				b[j], a[j] = ba[kg*2*rr+i], ba[kg*2*rr+rr+i]
			}
		} else {
			b = matvec(r.get(p+"ssm_beta.weight"), xn[t], hv)
			a = matvec(r.get(p+"ssm_alpha.weight"), xn[t], hv)
		}
		act := make([]float64, cd)
		for c := range cd {
			for k := range dc {
				if src := t - (dc - 1) + k; src >= 0 {
					act[c] += mixed[src][c] * conv[c*dc+k]
				}
			}
			act[c] = silu64(act[c])
		}
		for hh := range 2 * hk {
			v := act[hh*dk : (hh+1)*dk]
			var ss float64
			for _, x := range v {
				ss += x * x
			}
			d := max(math.Sqrt(ss), r.eps)
			for i := range v {
				v[i] /= d
			}
		}
		o := make([]float64, vd)
		for j := range hv {
			kh := j % hk
			if h.Arch == "qwen3next" {
				kh = j / rr
			}
			q, k, v := act[kh*dk:(kh+1)*dk], act[kd+kh*dk:kd+(kh+1)*dk], act[2*kd+j*dk:2*kd+(j+1)*dk]
			beta := sigmoid64(b[j])
			sp := a[j] + dt[j]
			if sp <= 20 {
				sp = math.Log(1 + math.Exp(sp))
			}
			decay := math.Exp(sp * A[j])
			s := S[j]
			u := make([]float64, dk)
			for i := range s {
				s[i] *= decay
				u[i%dk] += s[i] * k[i/dk]
			}
			for i := range s {
				s[i] += k[i/dk] * (v[i%dk] - u[i%dk]) * beta
			}
			oj := o[j*dk : (j+1)*dk]
			for i := range s {
				oj[i%dk] += s[i] * q[i/dk] / math.Sqrt(float64(dk))
			}
			copy(oj, r.rms(oj, nw))
			for i := range oj {
				oj[i] *= silu64(z[j*dk+i])
			}
		}
		out[t] = matvec(r.get(p+"ssm_out.weight"), o, h.Embd)
	}
	return out
}

func newHybridRef(t testing.TB, path string, h synth.Hybrid) *hybridRef {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &hybridRef{t: t, f: f, h: h, eps: 1e-6, w: map[string][]float64{}}
}

func hybridTokens(n int) []int32 {
	ids := randomTokens(n, 96, 3)
	ids[0] = 5
	return ids
}

// TestHybridMatchesReference compares the engine's logits of every
// position with the float64 forward pass: single-layer models of each
// kind of mixer and FFN first (a failure names the part), then whole
// models of each arch. F32 weights, F32 KV, the default kernels and the
// plain Go recurrence.
func TestHybridMatchesReference(t *testing.T) {
	one := func(arch string, recurrent bool) synth.Hybrid {
		h := tinyHybrid(arch)
		h.Layers, h.Recurrent = 1, []bool{recurrent}
		return h
	}
	cases := []struct {
		name string
		h    synth.Hybrid
	}{
		{"qwen35/one GDN layer", one("qwen35", true)},
		{"qwen35/one gated attention layer", one("qwen35", false)},
		{"qwen35moe/one MoE FFN", one("qwen35moe", false)},
		{"qwen3next/one GDN layer (grouped, ssm_ba)", one("qwen3next", true)},
		{"qwen35/whole", tinyHybrid("qwen35")},
		{"qwen35moe/whole", tinyHybrid("qwen35moe")},
		{"qwen3next/whole", tinyHybrid("qwen3next")},
	}
	still := tinyHybrid("qwen35moe")
	still.Sections = [4]int{1, 1, 1, 1} // pair 3 is on stream e: it does not turn
	cases = append(cases, struct {
		name string
		h    synth.Hybrid
	}{"qwen35moe/whole, a still IMROPE pair", still})
	tokens := hybridTokens(40)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeHybrid(t, c.h)
			want := newHybridRef(t, path, c.h).logits(tokens)
			for _, ksSpec := range []string{"", "gdn=go"} {
				ks, err := kernels.ParseKernels(ksSpec)
				if err != nil {
					t.Fatal(err)
				}
				t.Run(cmp.Or(ksSpec, "default"), func(t *testing.T) {
					// Without AVX2 the default gdn is go: the same kernels.
					if testing.Short() && ksSpec != "" && sameKernels(ks, kernels.KernelSet{}) {
						t.Skipf("short: %q resolves to the default kernels on this CPU", ksSpec)
					}
					m, err := Load(path, Options{Threads: 2, KVType: kernels.F32, KVLen: 64, Kernels: ks})
					if err != nil {
						t.Fatal(err)
					}
					got := engineLogits(t, m, tokens)
					m.Close()
					worst := 0.0
					for i := range got {
						worst = max(worst, relErr(got[i], want[i]))
					}
					if worst > 1e-4 {
						t.Errorf("kernels %q: logits differ from the float64 pass by %.3g relative (tol 1e-4)", ksSpec, worst)
					}
				})
			}
		})
	}
}

// TestHybridPassPlanInvariance runs one window as passes of 1, 7 and 64
// tokens and as one pass: the recurrent states carried across passes give
// the same logits (within 1e-5 relative; the matmuls' activation rows do
// not depend on the pass, only attention's tiling does), and a second
// window on the same model gives the same logits again.
func TestHybridPassPlanInvariance(t *testing.T) {
	tokens := hybridTokens(70)
	for _, arch := range []string{"qwen35", "qwen35moe", "qwen3next"} {
		h := tinyHybrid(arch)
		path := writeHybrid(t, h)
		var ref [][]float32
		for _, ub := range []int{len(tokens), 1, 7, 64} {
			m, err := Load(path, Options{Threads: 2, KVType: kernels.F32, KVLen: 96, UBatchSize: ub})
			if err != nil {
				t.Fatal(err)
			}
			win := tokens
			if testing.Short() && ub == 1 {
				// Single-token passes cost the most under qemu; 24 of
				// them still carry the states and conv windows across
				// 23 boundaries (position i depends on tokens ≤ i only,
				// so the one-pass rows are still the reference).
				win = tokens[:24]
			}
			got := engineLogits(t, m, win)
			// A second window on the same model starts from zero states.
			// The reset does not depend on the pass plan: short mode
			// checks it on one plan of several passes only.
			if !testing.Short() || ub == 7 {
				again := engineLogits(t, m, win)
				for i := range got {
					if e := relErr(again[i], got[i]); e != 0 {
						t.Fatalf("%s ubatch %d: a second window differs at position %d by %.3g: the states were not reset", arch, ub, i, e)
					}
				}
			}
			m.Close()
			if ref == nil {
				ref = got
				continue
			}
			for i := range got {
				if e := relErr(got[i], ref[i]); e > 1e-5 {
					t.Fatalf("%s ubatch %d: position %d differs from one pass by %.3g relative", arch, ub, i, e)
				}
			}
		}
	}
}

// TestHybridLayerPattern checks which layers are recurrent under the
// interval rule, under attention.recurrent_layers, and that MTP blocks are
// not part of the trunk.
func TestHybridLayerPattern(t *testing.T) {
	h := tinyHybrid("qwen35")
	h.Layers, h.Interval, h.NextN = 8, 4, 1
	m, err := Load(writeHybrid(t, h), Options{Threads: 1, KVType: kernels.F32, KVLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.hp.recurrent, []bool{true, true, true, false, true, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("interval 4: recurrent %v, want %v", got, want)
	}
	if m.hp.nLayer != 8 || m.hp.nLayerAll != 9 {
		t.Errorf("trunk %d of %d blocks, want 8 of 9", m.hp.nLayer, m.hp.nLayerAll)
	}
	m.Close()

	h.NextN = 0
	h.Recurrent = []bool{false, true, false, true, true, true, true, true}
	m, err = Load(writeHybrid(t, h), Options{Threads: 1, KVType: kernels.F32, KVLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.hp.recurrent, h.Recurrent) {
		t.Errorf("recurrent_layers: %v, want %v", m.hp.recurrent, h.Recurrent)
	}
	m.Close()
}

// TestHybridBadInput: missing keys and tensors, and value heads that are
// not a multiple of the key heads, fail with one line naming them.
func TestHybridBadInput(t *testing.T) {
	path := writeHybrid(t, tinyHybrid("qwen35"))
	cases := []struct {
		name string
		edit func(*editor)
		want string
	}{
		{"no sections", func(e *editor) { e.dropKey("qwen35.rope.dimension_sections") }, "qwen35.rope.dimension_sections is missing"},
		{"no conv kernel", func(e *editor) { e.dropKey("qwen35.ssm.conv_kernel") }, "qwen35.ssm.conv_kernel is missing"},
		{"no state size", func(e *editor) { e.dropKey("qwen35.ssm.state_size") }, "qwen35.ssm.state_size is missing"},
		{"no ssm_a", func(e *editor) { e.dropTensor("blk.0.ssm_a") }, `"blk.0.ssm_a" is missing`},
		{"no gate", func(e *editor) { e.dropTensor("blk.1.attn_gate.weight") }, `"blk.1.attn_gate.weight" is missing`},
		{"value heads", func(e *editor) {
			e.setKey("qwen35.ssm.time_step_rank", uint32(3))
			e.setKey("qwen35.ssm.inner_size", uint32(48))
		}, "not a multiple of ssm.group_count"},
		{"qwen3next legacy ssm_in", func(e *editor) {
			e.renameTensor("blk.0.attn_qkv.weight", "blk.0.ssm_in.weight")
		}, `"blk.0.ssm_in.weight" is qwen3next's legacy fused`},
		{"qwen3next no ssm_ba", func(e *editor) { e.dropTensor("blk.1.ssm_ba.weight") }, `"blk.1.ssm_ba.weight" is missing`},
	}
	next := writeHybrid(t, tinyHybrid("qwen3next"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := path
			if strings.HasPrefix(c.name, "qwen3next") {
				src = next
			}
			bad := rewrite(t, src, c.edit)
			_, err := Load(bad, Options{Threads: 1, KVType: kernels.F32})
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, bad) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %q and the file", msg, c.want)
			}
		})
	}
}

func TestLayerPattern(t *testing.T) {
	a, g := "attention", "GDN"
	for _, c := range []struct {
		kinds []string
		want  string
	}{
		{[]string{g, g, g, a, g, g, g, a}, "3×GDN + 1×attention, repeated 2×"},
		{[]string{a, a, a}, "1×attention, repeated 3×"},
		{[]string{g, g, a, g, g, a, g}, "2×GDN + 1×attention + 2×GDN + 1×attention + 1×GDN"},
		{[]string{a}, "1×attention"},
	} {
		if got := layerPattern(c.kinds); got != c.want {
			t.Errorf("%v: %q, want %q", c.kinds, got, c.want)
		}
	}
	f, err := gguf.Open(writeHybrid(t, tinyHybrid("qwen35moe")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lay, err := ReadLayout(f)
	if err != nil {
		t.Fatal(err)
	}
	if lay.Pattern != "2×GDN + 1×attention, repeated 2×" || lay.Experts != 6 || lay.ExpertsUsed != 2 || !lay.SharedExpert {
		t.Errorf("layout %+v", lay)
	}
}
