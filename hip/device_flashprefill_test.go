package hip

// device_flashprefill_test.go: FlashPrefill V2 on the device
// (flashprefill.cu, attention.cu's attn_fp_) against the CPU twins, for
// every KV cache type: the pooled keys, the block scores A and the
// selection bit for bit (kernels.FlashPrefill.Pool, .BlockScores,
// .SelectRow), then the sparse attention over that selection within the
// dense attention's tolerances.

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"plexbench/kernels"
)

func TestDeviceFlashPrefill(t *testing.T) { onDevices(t, checkFlashPrefill) }

// fpCase is one pass of a window: tokens queries from position pos0.
type fpCase struct {
	name              string
	window, pos0, cap int
}

func checkFlashPrefill(t *testing.T) {
	const nh, nkv = 4, 2
	// Blocks of 16 over 150 tokens: ten blocks, the last partial; a pass
	// from block 4 (a later pass of the window) and the whole window.
	f := kernels.FlashPrefill{BlockSize: 16, Alpha: 0.6, SinkBlocks: 1, Window: 2, LastNFull: 1, MinBudget: 2}
	cases := []fpCase{{"the window's last pass (pos0 64)", 150, 64, 160}, {"one pass over the window", 150, 0, 150}}
	for _, c := range []struct {
		typ kernels.Type
		hd  int
		tol float64
	}{{kernels.F32, 44, 1e-5}, {kernels.F16, 44, 2e-3}, {kernels.BF16, 44, 1.6e-2}, {kernels.Q8_0, 64, 1e-5}} {
		for _, pc := range cases {
			checkFlashPrefillPass(t, f, pc, c.typ, nh, nkv, c.hd, c.tol)
		}
	}
}

// fpQK are random queries and keys sharing a direction, each key block
// (of each KV head) along it by its own random amount (uneven block
// scores), key block 3 a copy of block 1 (equal pooled keys: exact ties
// in A).
func fpQK(r *rand.Rand, b, n, tokens, nh, nkv, hd, capacity int) (q, k []float32) {
	q, k = randF32(r, tokens*nh*hd, 1), randF32(r, nkv*capacity*hd, 1)
	for i := range q {
		q[i] += 0.5
	}
	for g := range nkv {
		for kb := range (n + b - 1) / b {
			c := float32(0.5 * (4*r.Float64() - 2))
			for j := kb * b; j < min(kb*b+b, n); j++ {
				for i := range hd {
					k[(g*capacity+j)*hd+i] += c
				}
			}
		}
		copy(k[(g*capacity+3*b)*hd:(g*capacity+4*b)*hd], k[(g*capacity+b)*hd:(g*capacity+2*b)*hd])
	}
	return q, k
}

func checkFlashPrefillPass(t *testing.T, f kernels.FlashPrefill, pc fpCase, typ kernels.Type, nh, nkv, hd int, tol float64) {
	kv := strings.ToLower(typ.String())
	what := "FlashPrefill " + kv + " cache, " + pc.name
	r := rand.New(rand.NewPCG(uint64(hd), uint64(pc.pos0)))
	b, m, tokens := f.BlockSize, f.Blocks(pc.window), pc.window-pc.pos0
	qb0, nqb := pc.pos0/b, f.Blocks(pc.window)-pc.pos0/b
	q, kf := fpQK(r, b, pc.window, tokens, nh, nkv, hd, pc.cap)
	kb, k := cacheRows(t, typ, kf, hd)
	vb, v := cacheRows(t, typ, randF32(r, nkv*pc.cap*hd, 2), hd)

	// The pooled keys, bit for bit.
	bk := upload(t, kb)
	bp := output(t, 4*nkv*m*hd)
	var a Args
	a.Ptr(bk, 0).Ptr(bp, 0).I32(int32(hd)).I32(int32(pc.cap)).I32(int32(pc.window)).I32(int32(b)).I32(int32(m))
	launch(t, fn(t, "flashprefill.cu", "fp_pool_"+kv), Dim3{X: m, Y: nkv}, Dim3{X: 64}, &a)
	pooled := bytesF32(download(t, bp, 4*nkv*m*hd))
	rb := typ.RowBytes(hd)
	want := make([]float32, nkv*m*hd)
	row, sum := make([]float32, hd), make([]float64, hd)
	for g := range nkv {
		f.Pool(typ, kb[g*pc.cap*rb:][:pc.window*rb], rb, pc.window, hd, want[g*m*hd:], row, sum)
	}
	bad := 0
	for i := range want {
		if math.Float32bits(pooled[i]) != math.Float32bits(want[i]) {
			bad++
		}
	}
	check(t, what+": pooled keys differing", float64(bad), 0)

	// The block scores and the selection, bit for bit.
	bq, bsel := upload(t, f32Bytes(q)), output(t, nh*nqb*m)
	bA, bkept := output(t, 8*nh*nqb*m), upload(t, make([]byte, 4))
	a.Reset()
	a.Ptr(bq, 0).Ptr(bp, 0).Ptr(bsel, 0).Ptr(bA, 0).Ptr(bkept, 0).I32(int32(nh)).I32(int32(nkv)).I32(int32(hd)).
		I32(int32(pc.pos0)).I32(int32(pc.window)).I32(int32(qb0)).I32(int32(nqb)).I32(int32(m)).I32(int32(b)).
		F64(kernels.FlashPrefillScale(hd)).F64(f.Alpha).I32(int32(f.SinkBlocks)).I32(int32(f.Window)).
		I32(int32(f.LastNFull)).I32(int32(f.MinBudget))
	launch(t, fn(t, "flashprefill.cu", "fp_select"), Dim3{X: nqb, Y: nh}, Dim3{X: 64}, &a)
	gotA := download(t, bA, 8*nh*nqb*m)
	sel := download(t, bsel, nh*nqb*m)
	kept := int(bytesU32(download(t, bkept, 4))[0])
	var sc kernels.FlashPrefillScratch
	qs, as, srow := make([]float32, b*hd), make([]float64, m), make([]bool, m)
	wantKept, badA, badSel, ties := 0, 0, 0, 0
	for h := range nh {
		g := h / (nh / nkv)
		for x := range nqb {
			qb := qb0 + x
			nq := min(b, pc.window-qb*b)
			for i := range nq {
				copy(qs[i*hd:(i+1)*hd], q[((qb*b+i-pc.pos0)*nh+h)*hd:][:hd])
			}
			f.BlockScores(as, qs, want[g*m*hd:], hd, pc.window, qb, &sc)
			wantKept += f.SelectRow(as, qb, m, srow)
			o := (h*nqb + x) * m
			for kb := 0; kb <= qb; kb++ {
				if bytesU64(gotA[8*(o+kb):])[0] != math.Float64bits(as[kb]) {
					badA++
				}
				if (sel[o+kb] == 1) != srow[kb] || sel[o+kb] > 1 {
					badSel++
				}
				if kb != 1 && kb <= qb && as[kb] == as[1] && as[1] > 0 {
					ties++
				}
			}
		}
	}
	check(t, what+": block scores A differing", float64(badA), 0)
	check(t, what+": selections differing", float64(badSel), 0)
	check(t, what+": kept count differing from the CPU's", math.Abs(float64(kept-wantKept)), 0)
	if total := nh * int(kernels.CausalBlocks(qb0, qb0+nqb)); wantKept == total || ties == 0 {
		t.Errorf("%s: kept %d of %d blocks with %d exact ties: the test wants some sparsity and ties", what, wantKept, total, ties)
	}

	// The attention over the kept blocks.
	qin := f32Bytes(q)
	score := floatScores(q, k, typ, nh, hd, pc.cap)
	if typ == kernels.Q8_0 {
		qin, _ = cacheRows(t, typ, q, hd)
		score = q8Scores(qin, kb, nh, hd, pc.cap)
	}
	keep := func(t, h, j int) bool { return sel[(h*nqb+t/b)*m+j/b] == 1 }
	wantO, mag := refAttention(score, keep, v, func(x float32) float32 { return roundTo(typ, x) }, tokens, nh, nkv, hd, pc.cap, pc.pos0, attnScaleOf(hd))
	bqa, bv, bo := upload(t, qin), upload(t, vb), output(t, 4*len(wantO))
	a.Reset()
	a.Ptr(bqa, 0).Ptr(bk, 0).Ptr(bv, 0).Ptr(bo, 0).I32(int32(tokens)).I32(int32(nh)).I32(int32(nkv)).I32(int32(hd)).I32(int32(pc.cap)).
		I32(int32(pc.pos0)).F32(attnScaleOf(hd)).Ptr(bsel, 0).I32(int32(nqb)).I32(int32(m)).I32(4)
	launchAttention(t, fn(t, "attention.cu", "attn_fp_"+kv), &a, typ, tokens, nh, hd)
	got, worst := bytesF32(download(t, bo, 4*len(wantO))), 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i])-wantO[i])/max(mag[i], 1e-30))
	}
	check(t, "attn_fp_"+kv+", "+pc.name+" (relative to Σp|v|)", worst, tol)
	t.Logf("%s: kept %d of %d blocks (%d ties with block 1)", what, kept, nh*int(kernels.CausalBlocks(qb0, qb0+nqb)), ties)
}

func attnScaleOf(hd int) float32 { return 1 / float32(math.Sqrt(float64(hd))) }

func bytesU32(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	return out
}

func bytesU64(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = uint64(bytesU32(b[8*i : 8*i+4])[0]) | uint64(bytesU32(b[8*i+4 : 8*i+8])[0])<<32
	}
	return out
}
