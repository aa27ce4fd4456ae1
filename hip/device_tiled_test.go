package hip

// device_tiled_test.go: the tiled kernels at the sizes they were tiled
// for. Attention (attention.cu) at the last positions of a 32,768 and a
// 262,144 token context, dense and over FlashPrefill-style kept blocks,
// against a float64 reference: a few query rows each, so that the test
// stays fast while the keys span every tile and step of the kernel.

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// launchAttention appends attention.cu's tile arguments to a and launches
// f with gpu.Attention's geometry for tokens queries of nh heads of hd
// dims over a typ cache (the engine's launch sites call the same).
func launchAttention(t *testing.T, f kernelFn, a *Args, typ kernels.Type, tokens, nh, hd int) {
	t.Helper()
	rb, qrb := typ.RowBytes(hd), 4*hd
	if typ == kernels.Q8_0 {
		qrb = rb
	}
	g, err := gpu.Attention(tokens, nh, hd, rb, qrb, warpSize(t))
	if err != nil {
		t.Fatal(err)
	}
	if g.Shared > gpu.MaxShared {
		t.Fatalf("attention asks for %d bytes of shared memory, over %d", g.Shared, gpu.MaxShared)
	}
	a.I32(int32(g.KeyTile)).I32(int32(g.KeyStride))
	launch(t, f, Dim3(g.Grid), Dim3(g.Block), a, g.Shared)
}

// TestAttentionGeometry: the shared memory is the same at every position
// and within the no-opt-in limit for every cache type and head dim up to
// 256; larger head dims are refused.
func TestAttentionGeometry(t *testing.T) {
	for _, typ := range []kernels.Type{kernels.F32, kernels.F16, kernels.BF16, kernels.Q8_0} {
		for _, hd := range []int{8, 44, 64, 128, 256} {
			if typ == kernels.Q8_0 && hd%32 != 0 {
				continue
			}
			rb, qrb := typ.RowBytes(hd), 4*hd
			if typ == kernels.Q8_0 {
				qrb = rb
			}
			g1, err := gpu.Attention(1, 8, hd, rb, qrb, 64)
			if err != nil {
				t.Fatal(err)
			}
			g2, _ := gpu.Attention(262144, 8, hd, rb, qrb, 64)
			if g1.Shared != g2.Shared || g1.Shared > gpu.MaxShared || g1.KeyStride < rb || g1.KeyStride/4%2 != 1 {
				t.Errorf("%v hd %d: shared %d/%d bytes, stride %d for rows of %d", typ, hd, g1.Shared, g2.Shared, g1.KeyStride, rb)
			}
		}
	}
	if _, err := gpu.Attention(1, 1, 512, 2048, 2048, 32); err == nil {
		t.Error("head dim 512 accepted")
	}
}

func TestDeviceAttentionLong(t *testing.T) { onDevices(t, checkAttentionLong) }

// attnCase is one launch: tokens queries from pos0 over a cache of
// pos0+tokens keys, hd dims, nh query heads over nkv KV heads; b > 0 keeps
// only some key blocks of b keys (FlashPrefill's attn_fp_).
type attnCase struct {
	typ                 kernels.Type
	tokens, pos0, hd, b int
	nh, nkv             int
	tol                 float64
}

func checkAttentionLong(t *testing.T) {
	for _, c := range []attnCase{
		{kernels.F32, 11, 32767 - 10, 64, 0, 4, 2, 1e-5},
		{kernels.F16, 3, 32767 - 2, 256, 0, 2, 1, 2e-3},
		{kernels.F32, 3, 32767 - 2, 256, 0, 2, 1, 1e-5}, // key tiles of 32 (warp 32) and 16 (warp 64)
		{kernels.BF16, 5, 32767 - 4, 8, 0, 2, 1, 1.6e-2},
		{kernels.Q8_0, 3, 32767 - 2, 128, 0, 2, 1, 1e-5},
		{kernels.F16, 3, 262143 - 2, 64, 0, 2, 1, 2e-3},
		{kernels.F32, 2, 262143 - 1, 32, 0, 2, 1, 1e-5},
		{kernels.F16, 16, 32768 - 16, 64, 128, 2, 1, 2e-3},
		{kernels.Q8_0, 16, 262144 - 16, 64, 128, 2, 1, 1e-5},
	} {
		checkAttentionCase(t, c)
	}
}

// checkAttentionCase runs one case against refAttention64.
func checkAttentionCase(t *testing.T, c attnCase) {
	kv := strings.ToLower(c.typ.String())
	n := c.pos0 + c.tokens
	r := rand.New(rand.NewPCG(uint64(n), uint64(c.hd)))
	// Small values: a flat softmax, so the output sums over every key.
	q := randF32(r, c.tokens*c.nh*c.hd, 0.5)
	kb, k := cacheRows(t, c.typ, randF32(r, c.nkv*n*c.hd, 0.5), c.hd)
	vb, v := cacheRows(t, c.typ, randF32(r, c.nkv*n*c.hd, 1), c.hd)
	qb, score := f32Bytes(q), floatScores(q, k, c.typ, c.nh, c.hd, n)
	if c.typ == kernels.Q8_0 {
		qb, _ = cacheRows(t, c.typ, q, c.hd)
		score = q8Scores(qb, kb, c.nh, c.hd, n)
	}
	var keep func(t, h, j int) bool
	var sel []byte
	var nqb, m int
	entry, what := "attn_"+kv, "dense"
	if c.b > 0 {
		// Blocks of c.b: the pass starts on a block; each (head, query
		// block) keeps block 0, its own block and ~1/8 of the others.
		nqb, m = (c.tokens+c.b-1)/c.b, (n+c.b-1)/c.b
		sel = make([]byte, c.nh*nqb*m)
		for h := range c.nh {
			for x := range nqb {
				qbk := c.pos0/c.b + x
				for j := 0; j <= qbk; j++ {
					if j == 0 || j == qbk || r.IntN(8) == 0 {
						sel[(h*nqb+x)*m+j] = 1
					}
				}
			}
		}
		keep = func(t, h, j int) bool { return sel[(h*nqb+t/c.b)*m+j/c.b] == 1 }
		entry, what = "attn_fp_"+kv, "FlashPrefill blocks"
	}
	want, mag := refAttention64(score, keep, v, c, n)
	bq, bk, bv, bo := upload(t, qb), upload(t, kb), upload(t, vb), output(t, 4*len(want))
	scale := attnScaleOf(c.hd)
	var a Args
	a.Ptr(bq, 0).Ptr(bk, 0).Ptr(bv, 0).Ptr(bo, 0).I32(int32(c.tokens)).I32(int32(c.nh)).I32(int32(c.nkv)).I32(int32(c.hd)).
		I32(int32(n)).I32(int32(c.pos0)).F32(scale)
	if c.b > 0 {
		a.Ptr(upload(t, sel), 0).I32(int32(nqb)).I32(int32(m)).I32(int32(math.Log2(float64(c.b))))
	}
	launchAttention(t, fn(t, "attention.cu", entry), &a, c.typ, c.tokens, c.nh, c.hd)
	got, worst := bytesF32(download(t, bo, 4*len(want))), 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i])-want[i])/max(mag[i], 1e-30))
	}
	check(t, entry+", "+what+", last position "+strconv.Itoa(n-1)+", hd "+strconv.Itoa(c.hd)+" (relative to Σp|v|)", worst, c.tol)
}

// refAttention64 is attention in float64 from the kernel's f32 scores
// (score: K·Q unscaled, the kernel's products) over the keys keep allows
// (nil: all): p_j = rnd(exp(s_j − max))/Σ exp(s_k − max), rnd rounding to
// an f16 or bf16 cache's type as the kernel rounds its step's p; out and
// Σ p·|v|.
func refAttention64(score func(t, h, g, j int) float32, keep func(t, h, j int) bool, v []float32, c attnCase, capacity int) (out, mag []float64) {
	hd, nh := c.hd, c.nh
	out, mag = make([]float64, c.tokens*nh*hd), make([]float64, c.tokens*nh*hd)
	scale := attnScaleOf(hd)
	for t := range c.tokens {
		for h := range nh {
			g, nk := h/(nh/c.nkv), c.pos0+t+1
			var js []int
			var s []float64
			mx := math.Inf(-1)
			for j := range nk {
				if keep == nil || keep(t, h, j) {
					x := float64(score(t, h, g, j) * scale)
					js, s = append(js, j), append(s, x)
					mx = max(mx, x)
				}
			}
			var sum float64
			for i := range s {
				e := math.Exp(s[i] - mx)
				sum += e
				s[i] = float64(roundTo(c.typ, float32(e)))
			}
			o, mg := out[(t*nh+h)*hd:][:hd], mag[(t*nh+h)*hd:][:hd]
			for i, j := range js {
				p := s[i] / sum
				for d, x := range v[(g*capacity+j)*hd:][:hd] {
					o[d] += p * float64(x)
					mg[d] += p * math.Abs(float64(x))
				}
			}
		}
	}
	return out, mag
}

func TestDeviceMatMulTiled(t *testing.T) { onDevices(t, checkMatMulTiled) }

// checkMatMulTiled: the tiled products give the plain per-output loop's
// bits. Quantized: mmq_<type> against mm_<type> (one warp per output,
// checked against the exact terms by TestDeviceMatMulQuant) on sizes that
// leave partial tiles of rows, tokens and staged chunks. Float:
// matmul_<type> against y = fmaf(w_k, x_k, y) over k in order, computed
// here.
func checkMatMulTiled(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, q := range quantLayouts() {
		N, K, M := 67, 130*32, 131 // 130 blocks: a chunk of 128 and 2
		if q.typ.BlockSize() == 256 {
			K = 18 * 256 // 18 super-blocks: a chunk of 16 and 2
		}
		w, x := quantWeights(r, q.typ, N, K), quantActs(r, M, K)
		arb := kernels.VecDotType(q.typ).RowBytes(K)
		xq := make([]byte, M*arb)
		for m := range M {
			kernels.QuantizeActivation(q.typ, x[m*K:(m+1)*K], xq[m*arb:(m+1)*arb])
		}
		bw, bx := upload(t, w), upload(t, xq)
		outs := [2][]float32{}
		for i, prefix := range []string{"mm_", "mmq_"} {
			by := output(t, 4*M*N)
			var a Args
			a.Ptr(bw, 0).Ptr(bx, 0).Ptr(by, 0).I32(int32(N)).I32(int32(K)).I32(int32(M))
			g := gpu.Launch{Grid: gpu.Dim3{X: N, Y: M}, Block: gpu.Dim3{X: warpSize(t)}}
			if prefix == "mmq_" {
				g, _ = gpu.QuantMatMul(N, M, warpSize(t))
			}
			launch(t, fn(t, "quant.cu", prefix+q.name()), Dim3(g.Grid), Dim3(g.Block), &a)
			outs[i] = bytesF32(download(t, by, 4*M*N))
		}
		check(t, "mmq_"+q.name()+" against mm_ (values differing)", float64(differing(outs[0], outs[1])), 0)
	}
	for _, typ := range []kernels.Type{kernels.F32, kernels.F16, kernels.BF16} {
		N, K, M := 37, 75, 131
		wf, x := randF32(r, N*K, 1), randF32(r, M*K, 1)
		wb := make([]byte, typ.RowBytes(len(wf)))
		if err := kernels.Quantize(typ, wf, wb); err != nil {
			t.Fatal(err)
		}
		if err := kernels.Dequantize(typ, wb, wf); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, M*N)
		for m := range M {
			for n := range N {
				var acc float32
				for k := range K {
					acc = float32(math.FMA(float64(wf[n*K+k]), float64(roundTo(typ, x[m*K+k])), float64(acc)))
				}
				want[m*N+n] = acc
			}
		}
		bw, bx, by := upload(t, wb), upload(t, f32Bytes(x)), output(t, 4*M*N)
		var a Args
		a.Ptr(bw, 0).Ptr(bx, 0).Ptr(by, 0).I32(int32(N)).I32(int32(K)).I32(int32(M))
		g := gpu.MatMul(N, M)
		name := "matmul_" + strings.ToLower(typ.String())
		launch(t, fn(t, "matmul.cu", name), Dim3(g.Grid), Dim3(g.Block), &a)
		check(t, name+" against the k-ordered fmaf loop (values differing)", float64(differing(want, bytesF32(download(t, by, 4*M*N)))), 0)
	}
}

// differing counts the positions where a and b differ in their bits.
func differing(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}
