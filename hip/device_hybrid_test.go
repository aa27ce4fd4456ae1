package hip

// device_hybrid_test.go: the hybrids' device kernels (gdn.cu, gated.cu,
// moe.cu, and rope.cu's IMROPE tables) against their CPU twins on fresh
// random inputs of odd sizes, with the tolerance each source states, on
// whichever devices onDevices binds (device_test.go's conventions: one
// CHECK line per comparison, guard bytes after every output).

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

func i32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func bytesI32(b []byte) []int32 {
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// bitsDiffer counts the elements of got and want whose bits differ (NaNs
// of any payload agree).
func bitsDiffer(got, want []float32) int {
	n := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
			n++
		}
	}
	return n
}

// worstRel is the largest relative error of got against want.
func worstRel(got, want []float32) float64 {
	w := 0.0
	for i := range want {
		w = max(w, relErr(got[i], want[i]))
	}
	return w
}

// grid1D is the 256-thread launch over n elements.
func grid1D(n int) (Dim3, Dim3) { return Dim3{X: (n + 255) / 256}, Dim3{X: 256} }

func TestDeviceGDNGates(t *testing.T) { onDevices(t, checkGDNGates) }

func checkGDNGates(t *testing.T) {
	f := fn(t, "gdn.cu", "gdn_gates")
	r := rand.New(rand.NewPCG(31, 32))
	const tokens, hv = 7, 13
	b, a := randF32(r, tokens*hv, 4), randF32(r, tokens*hv, 6)
	dt, A := randF32(r, hv, 2), randF32(r, hv, 3)
	for j := range A {
		A[j] = -float32(math.Exp(float64(A[j]))) // ssm_a = −exp(A_log)
	}
	a[3], a[4], b[5] = 30, -90, -200 // softplus's x > 20 branch, a decay of 1, a β of 0
	wantB, wantA := append([]float32(nil), b...), append([]float32(nil), a...)
	for tk := range tokens {
		kernels.GDNGates(wantB[tk*hv:(tk+1)*hv], wantA[tk*hv:(tk+1)*hv], dt, A)
	}
	bb, ba := upload(t, f32Bytes(b)), upload(t, f32Bytes(a))
	var args Args
	args.Ptr(bb, 0).Ptr(ba, 0).Ptr(upload(t, f32Bytes(dt)), 0).Ptr(upload(t, f32Bytes(A)), 0).I32(hv).U64(tokens * hv)
	g, bl := grid1D(tokens * hv)
	launch(t, f, g, bl, &args)
	worst := max(worstRel(bytesF32(download(t, bb, 4*len(b))), wantB), worstRel(bytesF32(download(t, ba, 4*len(a))), wantA))
	check(t, "gdn_gates β, exp(g) (rel)", worst, 1e-6)
}

func TestDeviceGDNSplitBA(t *testing.T) { onDevices(t, checkGDNSplitBA) }

// checkGDNSplitBA: qwen3next's ssm_ba rows split as gdn.go does (§5.4).
func checkGDNSplitBA(t *testing.T) {
	f := fn(t, "gdn.cu", "gdn_split_ba")
	r := rand.New(rand.NewPCG(33, 34))
	const tokens, hk, rr = 5, 3, 4
	hv := hk * rr
	ba := randF32(r, tokens*2*hv, 1)
	wantB, wantA := make([]float32, tokens*hv), make([]float32, tokens*hv)
	for tk := range tokens {
		for j := range hv {
			kg, i := j/rr, j%rr
			wantB[tk*hv+j] = ba[tk*2*hv+kg*2*rr+i]
			wantA[tk*hv+j] = ba[tk*2*hv+kg*2*rr+rr+i]
		}
	}
	bb, ba2 := output(t, 4*tokens*hv), output(t, 4*tokens*hv)
	var args Args
	args.Ptr(upload(t, f32Bytes(ba)), 0).Ptr(bb, 0).Ptr(ba2, 0).I32(int32(hv)).I32(rr).U64(uint64(tokens * hv))
	g, bl := grid1D(tokens * hv)
	launch(t, f, g, bl, &args)
	bad := bitsDiffer(bytesF32(download(t, bb, 4*tokens*hv)), wantB) + bitsDiffer(bytesF32(download(t, ba2, 4*tokens*hv)), wantA)
	check(t, "gdn_split_ba (values differing)", float64(bad), 0)
}

func TestDeviceGDNConv(t *testing.T) { onDevices(t, checkGDNConv) }

// checkGDNConv runs the conv and then the state update over passes
// shorter and longer than the window: the conv against kernels.ConvRow and
// silu, the new state against the window's last rows, exactly.
func checkGDNConv(t *testing.T) {
	conv, state := fn(t, "gdn.cu", "gdn_conv"), fn(t, "gdn.cu", "gdn_conv_state")
	r := rand.New(rand.NewPCG(35, 36))
	var ks kernels.KernelSet
	worst, bad := 0.0, 0
	for _, c := range []struct{ tokens, cd, dc int }{{1, 37, 4}, {2, 300, 4}, {9, 261, 4}, {5, 70, 3}} {
		mixed, st, taps := randF32(r, c.tokens*c.cd, 1), randF32(r, (c.dc-1)*c.cd, 1), randF32(r, c.cd*c.dc, 0.5)
		want, ones := make([]float32, c.tokens*c.cd), make([]float32, c.cd)
		for i := range ones {
			ones[i] = 1
		}
		for tk := range c.tokens {
			row := want[tk*c.cd : (tk+1)*c.cd]
			kernels.ConvRow(row, tk, mixed, st, taps, c.cd, c.dc)
			ks.SwiGLU(row, ones)
		}
		wantState := make([]float32, len(st))
		for i := range c.dc - 1 {
			src := c.tokens - (c.dc - 1) + i
			if src >= 0 {
				copy(wantState[i*c.cd:(i+1)*c.cd], mixed[src*c.cd:(src+1)*c.cd])
			} else {
				copy(wantState[i*c.cd:(i+1)*c.cd], st[(src+c.dc-1)*c.cd:(src+c.dc)*c.cd])
			}
		}
		bm, bs, bt, bo := upload(t, f32Bytes(mixed)), upload(t, f32Bytes(st)), upload(t, f32Bytes(taps)), output(t, 4*len(want))
		var a Args
		a.Ptr(bm, 0).Ptr(bs, 0).Ptr(bt, 0).Ptr(bo, 0).I32(int32(c.cd)).I32(int32(c.dc))
		launch(t, conv, Dim3{X: (c.cd + 255) / 256, Y: c.tokens}, Dim3{X: 256}, &a)
		a.Reset()
		a.Ptr(bm, 0).Ptr(bs, 0).I32(int32(c.cd)).I32(int32(c.dc)).I32(int32(c.tokens))
		g, bl := grid1D(c.cd)
		launch(t, state, g, bl, &a)
		worst = max(worst, worstRel(bytesF32(download(t, bo, 4*len(want))), want))
		bad += bitsDiffer(bytesF32(download(t, bs, 4*len(st))), wantState)
	}
	check(t, "gdn_conv conv+silu, 1..9 tokens (rel)", worst, 1e-6)
	check(t, "gdn_conv_state (values differing)", float64(bad), 0)
}

func TestDeviceGDNL2Norm(t *testing.T) { onDevices(t, checkGDNL2Norm) }

func checkGDNL2Norm(t *testing.T) {
	f := fn(t, "gdn.cu", "gdn_l2norm")
	r := rand.New(rand.NewPCG(37, 38))
	worst := 0.0
	for _, c := range []struct{ tokens, hk, dk, vd int }{{3, 2, 16, 64}, {2, 3, 129, 7}, {4, 1, 300, 33}} {
		cd := 2*c.hk*c.dk + c.vd
		act := randF32(r, c.tokens*cd, 2)
		for i := range c.dk {
			act[cd+i] = 0 // a zero head: scale 1/eps
		}
		want := append([]float32(nil), act...)
		for tk := range c.tokens {
			for h := range 2 * c.hk {
				kernels.L2Norm(want[tk*cd+h*c.dk:][:c.dk], 1e-6)
			}
		}
		b := upload(t, f32Bytes(act))
		var a Args
		a.Ptr(b, 0).I32(int32(cd)).I32(int32(c.dk)).F32(1e-6)
		launch(t, f, Dim3{X: c.tokens, Y: 2 * c.hk}, Dim3{X: 128}, &a)
		worst = max(worst, worstRel(bytesF32(download(t, b, 4*len(act))), want))
	}
	check(t, "gdn_l2norm q/k heads, v untouched (rel)", worst, 2.4e-7)
}

func TestDeviceGDNDelta(t *testing.T) { onDevices(t, checkGDNDelta) }

// checkGDNDelta runs the delta rule from a non-zero state over a pass,
// tiled (j mod H_k) and grouped (j / r), against kernels.DeltaRule per
// value head: the outputs and the new states bit for bit.
func checkGDNDelta(t *testing.T) {
	f := fn(t, "gdn.cu", "gdn_delta")
	r := rand.New(rand.NewPCG(39, 40))
	var ks kernels.KernelSet
	bad := 0
	for _, c := range []struct {
		tokens, hk, hv, dk, dv int
		grouped                bool
	}{{5, 2, 4, 16, 16, false}, {3, 2, 4, 16, 16, true}, {4, 1, 3, 37, 37, false}, {2, 2, 2, 24, 130, true}} {
		kd, vd := c.hk*c.dk, c.hv*c.dv
		cd := 2*kd + vd
		act := randF32(r, c.tokens*cd, 0.3)
		decay, beta := make([]float32, c.tokens*c.hv), make([]float32, c.tokens*c.hv)
		for i := range decay {
			decay[i], beta[i] = float32(r.Float64()), float32(r.Float64())
		}
		S := randF32(r, c.hv*c.dk*c.dv, 0.5)
		scale := 1 / float32(math.Sqrt(float64(c.dv)))
		wantS, wantO := append([]float32(nil), S...), make([]float32, c.tokens*vd)
		for j := range c.hv {
			kh := j % c.hk
			if c.grouped {
				kh = j / (c.hv / c.hk)
			}
			hd, hb := make([]float32, c.tokens), make([]float32, c.tokens)
			for tk := range c.tokens {
				hd[tk], hb[tk] = decay[tk*c.hv+j], beta[tk*c.hv+j]
			}
			ks.DeltaRule(&kernels.DeltaHead{S: wantS[j*c.dk*c.dv:][:c.dk*c.dv], Dk: c.dk, Dv: c.dv, N: c.tokens,
				Q: act[kh*c.dk:], K: act[kd+kh*c.dk:], QKStride: cd, V: act[2*kd+j*c.dv:], VStride: cd,
				Out: wantO[j*c.dv:], OutStride: vd, Decay: hd, Beta: hb, Scale: scale, U: make([]float32, c.dv)})
		}
		bS, bo := upload(t, f32Bytes(S)), output(t, 4*len(wantO))
		var a Args
		a.Ptr(bS, 0).Ptr(upload(t, f32Bytes(act)), 0).Ptr(upload(t, f32Bytes(decay)), 0).Ptr(upload(t, f32Bytes(beta)), 0).Ptr(bo, 0).
			I32(int32(c.tokens)).I32(int32(c.hk)).I32(int32(c.hv)).I32(int32(c.dk)).I32(int32(c.dv)).I32(map[bool]int32{false: 0, true: 1}[c.grouped]).F32(scale)
		g := gpu.GDNDelta(c.hv, c.dv)
		launch(t, f, Dim3(g.Grid), Dim3(g.Block), &a)
		bad += bitsDiffer(bytesF32(download(t, bo, 4*len(wantO))), wantO) + bitsDiffer(bytesF32(download(t, bS, 4*len(S))), wantS)
	}
	check(t, "gdn_delta tiled+grouped, dv 16..130 (values differing)", float64(bad), 0)
}

func TestDeviceGated(t *testing.T) { onDevices(t, checkGated) }

// checkGated: Wq's [query | gate] rows split per head, then the attention
// output times sigmoid(gate) as the engine's gateRange.
func checkGated(t *testing.T) {
	split, mul := fn(t, "gated.cu", "gated_split"), fn(t, "gated.cu", "gated_mul")
	r := rand.New(rand.NewPCG(41, 42))
	const tokens, heads, hd = 5, 3, 40
	n := tokens * heads * hd
	qg, att := randF32(r, 2*n, 1), randF32(r, n, 1)
	wantQ, wantG, wantAtt := make([]float32, n), make([]float32, n), make([]float32, n)
	for row := range tokens * heads {
		copy(wantQ[row*hd:(row+1)*hd], qg[row*2*hd:])
		copy(wantG[row*hd:(row+1)*hd], qg[row*2*hd+hd:])
	}
	for i := range att {
		wantAtt[i] = att[i] * kernels.Sigmoid(wantG[i])
	}
	bq, bg, ba := output(t, 4*n), output(t, 4*n), upload(t, f32Bytes(att))
	var a Args
	a.Ptr(upload(t, f32Bytes(qg)), 0).Ptr(bq, 0).Ptr(bg, 0).I32(hd).U64(uint64(n))
	g, bl := grid1D(n)
	launch(t, split, g, bl, &a)
	a.Reset()
	a.Ptr(ba, 0).Ptr(bg, 0).U64(uint64(n))
	launch(t, mul, g, bl, &a)
	bad := bitsDiffer(bytesF32(download(t, bq, 4*n)), wantQ) + bitsDiffer(bytesF32(download(t, bg, 4*n)), wantG)
	check(t, "gated_split (values differing)", float64(bad), 0)
	check(t, "gated_mul ·sigmoid(gate) (rel)", worstRel(bytesF32(download(t, ba, 4*n)), wantAtt), 1e-6)
}

func TestDeviceMoERoute(t *testing.T) { onDevices(t, checkMoERoute) }

// checkMoERoute: the router's softmax, top k and weights against
// KernelSet.Softmax and kernels.Route, with tied logits (the lower id
// first), a masked expert (−inf) and expert counts off the 16 lanes.
func checkMoERoute(t *testing.T) {
	f := fn(t, "moe.cu", "moe_route")
	r := rand.New(rand.NewPCG(43, 44))
	var ks kernels.KernelSet
	bad := 0
	for _, c := range []struct{ tokens, E, k int }{{7, 6, 2}, {70, 37, 8}, {3, 131, 1}, {5, 256, 10}} {
		logits := randF32(r, c.tokens*c.E, 2)
		logits[1], logits[3] = 5, 5 // a tie at the top of token 0
		logits[c.E+2] = float32(math.Inf(-1))
		probs := append([]float32(nil), logits...)
		wantSel, wantW := make([]int32, c.tokens*c.k), make([]float32, c.tokens*c.k)
		for tk := range c.tokens {
			row := probs[tk*c.E : (tk+1)*c.E]
			ks.Softmax(row, c.E, 1)
			kernels.Route(row, wantSel[tk*c.k:(tk+1)*c.k], wantW[tk*c.k:(tk+1)*c.k])
		}
		bl, bs, bw := upload(t, f32Bytes(logits)), output(t, 4*len(wantSel)), output(t, 4*len(wantW))
		var a Args
		a.Ptr(bl, 0).Ptr(bs, 0).Ptr(bw, 0).I32(int32(c.E)).I32(int32(c.k)).I32(int32(c.tokens))
		g := gpu.MoERoute(c.tokens)
		launch(t, f, Dim3(g.Grid), Dim3(g.Block), &a)
		bad += bitsDiffer(bytesF32(download(t, bl, 4*len(probs))), probs) + bitsDiffer(bytesF32(download(t, bw, 4*len(wantW))), wantW)
		for i, s := range bytesI32(download(t, bs, 4*len(wantSel))) {
			if s != wantSel[i] {
				bad++
			}
		}
	}
	check(t, "moe_route probs, experts, weights (values differing)", float64(bad), 0)
}

func TestDeviceMoERows(t *testing.T) { onDevices(t, checkMoERows) }

// checkMoERows: the gather of each assignment's input row, the weighted
// sum of the experts' rows in slot order and the shared expert's gated
// add, against moe.go's loops.
func checkMoERows(t *testing.T) {
	gather, combine, shared := fn(t, "moe.cu", "moe_gather"), fn(t, "moe.cu", "moe_combine"), fn(t, "moe.cu", "moe_shared")
	r := rand.New(rand.NewPCG(45, 46))
	const tokens, e, k = 6, 300, 3
	xn, Y, w := randF32(r, tokens*e, 1), randF32(r, tokens*k*e, 1), randF32(r, tokens*k, 1)
	ys, gs, out := randF32(r, tokens*e, 1), randF32(r, tokens, 3), randF32(r, tokens*e, 1)
	rows := make([]int32, tokens*k) // a grouping: assignment rows[g] sits at g
	for g, i := range r.Perm(tokens * k) {
		rows[g] = int32(i)
	}
	slot := make([]int32, tokens*k)
	for g, i := range rows {
		slot[i] = int32(g)
	}
	wantX, wantOut := make([]float32, tokens*k*e), make([]float32, tokens*e)
	for g, i := range rows {
		copy(wantX[g*e:(g+1)*e], xn[int(i)/k*e:])
	}
	for tk := range tokens {
		for c := range e {
			acc := Y[int(slot[tk*k])*e+c] * w[tk*k]
			for i := 1; i < k; i++ {
				acc += float32(Y[int(slot[tk*k+i])*e+c] * w[tk*k+i])
			}
			wantOut[tk*e+c] = acc
		}
	}
	wantShared := append([]float32(nil), out...)
	for tk := range tokens {
		g := kernels.Sigmoid(gs[tk])
		for c := range e {
			wantShared[tk*e+c] += float32(ys[tk*e+c] * g)
		}
	}
	bX, bo, bsh := output(t, 4*len(wantX)), output(t, 4*len(wantOut)), upload(t, f32Bytes(out))
	var a Args
	a.Ptr(upload(t, f32Bytes(xn)), 0).Ptr(upload(t, i32Bytes(rows)), 0).Ptr(bX, 0).I32(e).I32(k)
	launch(t, gather, Dim3{X: (e + 255) / 256, Y: tokens * k}, Dim3{X: 256}, &a)
	a.Reset()
	a.Ptr(upload(t, f32Bytes(Y)), 0).Ptr(upload(t, i32Bytes(slot)), 0).Ptr(upload(t, f32Bytes(w)), 0).Ptr(bo, 0).I32(e).I32(k)
	launch(t, combine, Dim3{X: (e + 255) / 256, Y: tokens}, Dim3{X: 256}, &a)
	a.Reset()
	a.Ptr(bsh, 0).Ptr(upload(t, f32Bytes(ys)), 0).Ptr(upload(t, f32Bytes(gs)), 0).I32(e)
	launch(t, shared, Dim3{X: (e + 255) / 256, Y: tokens}, Dim3{X: 256}, &a)
	bad := bitsDiffer(bytesF32(download(t, bX, 4*len(wantX))), wantX) + bitsDiffer(bytesF32(download(t, bo, 4*len(wantOut))), wantOut)
	check(t, "moe_gather + moe_combine (values differing)", float64(bad), 0)
	check(t, "moe_shared out += sigmoid(g)·ys (rel)", worstRel(bytesF32(download(t, bsh, 4*len(out))), wantShared), 1e-6)
}

func TestDeviceIMRoPE(t *testing.T) { onDevices(t, checkIMRoPE) }

// checkIMRoPE: rope_f32 in NEOX mode over an IMROPE table, some of whose
// pairs (those fed position stream e) are still (cos 1, sin 0), against
// KernelSet.RoPE bit for bit: the still pairs come out unchanged.
func checkIMRoPE(t *testing.T) {
	f := fn(t, "rope.cu", "rope_f32")
	r := rand.New(rand.NewPCG(47, 48))
	var ks kernels.KernelSet
	const tokens, heads, hd, half = 4, 3, 32, 6
	v := randF32(r, tokens*heads*hd, 1)
	cs, sn := make([]float32, tokens*half), make([]float32, tokens*half)
	for i := range cs {
		a := r.Float64() * 2 * math.Pi
		cs[i], sn[i] = float32(math.Cos(a)), float32(math.Sin(a))
		if i%half == 3 || i%half == 5 {
			cs[i], sn[i] = 1, 0
		}
	}
	want := append([]float32(nil), v...)
	for tk := range tokens {
		ks.RoPE(want[tk*heads*hd:(tk+1)*heads*hd], hd, cs[tk*half:(tk+1)*half], sn[tk*half:(tk+1)*half], true)
	}
	bv := upload(t, f32Bytes(v))
	var a Args
	a.Ptr(bv, 0).Ptr(upload(t, f32Bytes(cs)), 0).Ptr(upload(t, f32Bytes(sn)), 0).I32(heads).I32(hd).I32(half).I32(1)
	launch(t, f, Dim3{X: tokens, Y: heads}, Dim3{X: half}, &a)
	got := bytesF32(download(t, bv, 4*len(v)))
	still := 0
	for tk := range tokens {
		for h := range heads {
			x := (tk*heads + h) * hd
			for _, i := range []int{3, 5, 3 + half, 5 + half} {
				if math.Float32bits(got[x+i]) != math.Float32bits(v[x+i]) {
					still++
				}
			}
		}
	}
	check(t, "rope_f32 IMROPE table (bits differing)", float64(bitsDiffer(got, want)), 0)
	check(t, "rope_f32 IMROPE still pairs moved", float64(still), 0)
}
