package hip

// device_test.go: every device kernel against its CPU twin. With -tags gpu
// they run on a real GPU (device_gpu_test.go; make gpu-check runs that
// binary on the device machine); without it, on the emulated CUDA and HIP
// runtimes of hip/emu (emu_runtime_test.go), one subtest each. Both go
// through this package's loading, compiling and launching path. Each check
// logs one "CHECK" line: the kernel, the shapes, the worst error against
// the tolerance its source states.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"plexbench/kernels"
	"plexbench/kernels/gpu"
)

// guard is the byte pattern written past every output, checked after.
const guard = 0xA5

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func randF32(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * scale
	}
	return v
}

// check logs the one summary line and fails when worst exceeds tol.
func check(t *testing.T, what string, worst, tol float64) {
	t.Helper()
	status := "PASS"
	if !(worst <= tol) {
		status = "FAIL"
		t.Errorf("%s: worst error %.3g over the tolerance %.3g", what, worst, tol)
	}
	t.Logf("CHECK %-40s worst %.3g tol %.3g %s", what, worst, tol, status)
}

func relErr(got, want float32) float64 {
	if got == want || (got != got && want != want) {
		return 0
	}
	return math.Abs(float64(got)-float64(want)) / max(math.Abs(float64(want)), 1e-30)
}

func TestDeviceRMSNorm(t *testing.T) { onDevices(t, checkRMSNorm) }

func checkRMSNorm(t *testing.T) {
	f := fn(t, "rmsnorm.cu", "rms_norm_f32")
	r := rand.New(rand.NewPCG(1, 2))
	var ks kernels.KernelSet
	worst := 0.0
	for _, n := range []int{1, 33, 896, 4096, 5003} {
		rows := 7
		x, w := randF32(r, rows*n, 3), randF32(r, n, 1)
		want := make([]float32, rows*n)
		ks.RMSNorm(want, x, w, 1e-6)
		bx, bw, by := upload(t, f32Bytes(x)), upload(t, f32Bytes(w)), output(t, 4*rows*n)
		var a Args
		a.Ptr(bx, 0).Ptr(bw, 0).Ptr(by, 0).I32(int32(n)).F32(1e-6)
		launch(t, f, Dim3{X: rows}, Dim3{X: 256}, &a)
		got := bytesF32(download(t, by, 4*rows*n))
		for i := range got {
			worst = max(worst, relErr(got[i], want[i]))
		}
	}
	check(t, "rms_norm_f32 n=1..5003 (rel)", worst, 2.4e-7)
}

func TestDeviceRoPE(t *testing.T) { onDevices(t, checkRoPE) }

func checkRoPE(t *testing.T) {
	f := fn(t, "rope.cu", "rope_f32")
	r := rand.New(rand.NewPCG(3, 4))
	var ks kernels.KernelSet
	bad := 0
	for _, c := range []struct{ hd, half int }{{64, 32}, {128, 64}, {128, 32}, {80, 16}} {
		for _, neox := range []bool{false, true} {
			tokens, heads := 5, 3
			v := randF32(r, tokens*heads*c.hd, 1)
			cs, sn := make([]float32, tokens*c.half), make([]float32, tokens*c.half)
			for i := range cs {
				a := r.Float64() * 2 * math.Pi
				cs[i], sn[i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
			want := append([]float32(nil), v...)
			for tk := range tokens {
				ks.RoPE(want[tk*heads*c.hd:(tk+1)*heads*c.hd], c.hd, cs[tk*c.half:(tk+1)*c.half], sn[tk*c.half:(tk+1)*c.half], neox)
			}
			bv, bc, bs := upload(t, f32Bytes(v)), upload(t, f32Bytes(cs)), upload(t, f32Bytes(sn))
			var a Args
			a.Ptr(bv, 0).Ptr(bc, 0).Ptr(bs, 0).I32(int32(heads)).I32(int32(c.hd)).I32(int32(c.half)).I32(map[bool]int32{false: 0, true: 1}[neox])
			launch(t, f, Dim3{X: tokens, Y: heads}, Dim3{X: min(c.half, 256)}, &a)
			got := bytesF32(download(t, bv, 4*len(v)))
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					bad++
				}
			}
		}
	}
	check(t, "rope_f32 norm+neox, partial (bits differing)", float64(bad), 0)
}

func TestDeviceSwiGLU(t *testing.T) { onDevices(t, checkSwiGLU) }

func checkSwiGLU(t *testing.T) {
	f := fn(t, "swiglu.cu", "swiglu_f32")
	r := rand.New(rand.NewPCG(5, 6))
	var ks kernels.KernelSet
	n := 10007
	g, u := randF32(r, n, 4), randF32(r, n, 1)
	want := append([]float32(nil), g...)
	ks.SwiGLU(want, u)
	bg, bu := upload(t, f32Bytes(g)), upload(t, f32Bytes(u))
	var a Args
	a.Ptr(bg, 0).Ptr(bu, 0).U64(uint64(n))
	launch(t, f, Dim3{X: (n + 255) / 256}, Dim3{X: 256}, &a)
	got := bytesF32(download(t, bg, 4*n))
	worst := 0.0
	for i := range got {
		worst = max(worst, relErr(got[i], want[i]))
	}
	check(t, "swiglu_f32 n=10007 (rel)", worst, 1e-6)
}

// TestDeviceKVStore stores a pass into a cache in the engine's layout
// ((nkv, cap, hd), token t at pos0 + t) for each cache type and compares
// the whole cache, bytes untouched included, with the CPU's conversion.
func TestDeviceKVStore(t *testing.T) { onDevices(t, checkKVStore) }

func checkKVStore(t *testing.T) {
	fn(t, "kvstore.cu", "kv_store_f32") // builds (or skips) before any upload
	r := rand.New(rand.NewPCG(7, 8))
	tokens, nkv, hd, capacity, pos0 := 9, 3, 128, 64, 21
	src := randF32(r, tokens*nkv*hd, 100)
	// Specials: NaNs, infinities, f16 subnormals and overflow, ties.
	sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		6e-8, 3e-5, 65504, 65520, 70000, 1 + 1.0/2048, 1 + 3.0/2048, 1e-45, -2.98e-8, 1 + 1.0/256, 3.4e38}
	copy(src[5:], sp)
	for i := 64; i < 96; i++ {
		src[i] = 0 // an all-zero Q8_0 block
	}
	// A NaN or inf in a Q8_0 block is not specified: the CPU's result
	// follows x86's NaN rules for max and convert (every other value
	// quantizes to 127), the device's gives d = NaN and q = 0; either way
	// the block reads back as NaN. The Q8_0 cache gets the finite values.
	finite := append([]float32(nil), src...)
	for i, v := range finite {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || math.Abs(float64(v)) > 1e30 {
			finite[i] = 1
		}
	}
	bs, bfin := upload(t, f32Bytes(src)), upload(t, f32Bytes(finite))
	var a Args
	bad := 0
	for _, c := range []struct {
		typ   kernels.Type
		entry string
	}{{kernels.F32, "kv_store_f32"}, {kernels.F16, "kv_store_f16"}, {kernels.BF16, "kv_store_bf16"}, {kernels.Q8_0, "kv_store_q8_0"}} {
		f := fn(t, "kvstore.cu", c.entry)
		rb := c.typ.RowBytes(hd)
		want := make([]byte, nkv*capacity*rb)
		var ks kernels.KernelSet
		in, bin := src, bs
		if c.typ == kernels.Q8_0 {
			in, bin = finite, bfin
		}
		for tk := range tokens {
			for g := range nkv {
				s := (tk*nkv + g) * hd
				d := (g*capacity + pos0 + tk) * rb
				ks.QuantizeActivation(c.typ, in[s:s+hd], want[d:d+rb])
			}
		}
		dst := output(t, len(want))
		a.Reset()
		a.Ptr(bin, 0).Ptr(dst, 0).I32(int32(nkv)).I32(int32(hd)).I32(int32(capacity)).I32(int32(pos0))
		grid, block := Dim3{X: (hd + 255) / 256, Y: nkv, Z: tokens}, Dim3{X: 256}
		if c.typ == kernels.Q8_0 {
			grid, block = Dim3{X: (hd/32 + 63) / 64, Y: nkv, Z: tokens}, Dim3{X: 64}
		}
		launch(t, f, grid, block, &a)
		got := download(t, dst, len(want))
		n, first := 0, -1
		for i := range got {
			if got[i] != want[i] {
				if n++; first < 0 {
					first = i
				}
			}
		}
		if n > 0 {
			lo := first / rb * rb
			t.Logf("%s: %d bytes differ, the first at byte %d: got % x, want % x", c.entry, n, first, got[lo:lo+rb], want[lo:lo+rb])
		}
		bad += n
	}
	check(t, "kv_store f32/f16/bf16/q8_0, specials (bytes differing)", float64(bad), 0)
}

// logitRows makes rows of a vocabulary-sized logit matrix with ties (a
// repeated max), NaNs and infinities in some rows.
func logitRows(r *rand.Rand, rows, V int) []float32 {
	x := randF32(r, rows*V, 4)
	if rows > 1 {
		x[V+10], x[V+20] = 30, 30 // a tie for the max: the first index wins
	}
	if rows > 2 {
		x[2*V+3] = float32(math.NaN())
		x[2*V+V-1] = float32(math.Inf(-1))
	}
	if rows > 3 {
		x[3*V] = float32(math.NaN()) // row[0] NaN: the max stays NaN
	}
	return x
}

func TestDevicePick(t *testing.T) { onDevices(t, checkPick) }

func checkPick(t *testing.T) {
	f := fn(t, "pick.cu", "pick_f32")
	r := rand.New(rand.NewPCG(9, 10))
	rows, V, nids := 5, 151936, 33
	x := logitRows(r, rows, V)
	ids := make([]int32, rows*nids)
	for i := range ids {
		ids[i] = int32(r.IntN(V))
	}
	idb := make([]byte, 4*len(ids))
	for i, v := range ids {
		binary.LittleEndian.PutUint32(idb[4*i:], uint32(v))
	}
	bx, bi := upload(t, f32Bytes(x)), upload(t, idb)
	bm, ba, bsum, bp := output(t, 4*rows), output(t, 4*rows), output(t, 8*rows), output(t, 4*rows*nids)
	var a Args
	a.Ptr(bx, 0).I32(int32(V)).Ptr(bi, 0).I32(int32(nids)).Ptr(bm, 0).Ptr(ba, 0).Ptr(bsum, 0).Ptr(bp, 0)
	launch(t, f, Dim3{X: rows}, Dim3{X: 256}, &a)
	gm, ga := bytesF32(download(t, bm, 4*rows)), download(t, ba, 4*rows)
	gs, gp := download(t, bsum, 8*rows), bytesF32(download(t, bp, 4*rows*nids))
	exact, worst := 0, 0.0
	picked := make([]float32, nids)
	for row := range rows {
		m, arg, sum := kernels.Pick(x[row*V:(row+1)*V], ids[row*nids:(row+1)*nids], picked)
		if math.Float32bits(gm[row]) != math.Float32bits(m) || int32(binary.LittleEndian.Uint32(ga[4*row:])) != arg {
			exact++
			t.Logf("row %d: max %g arg %d, want %g %d", row, gm[row], int32(binary.LittleEndian.Uint32(ga[4*row:])), m, arg)
		}
		for i := range nids {
			if math.Float32bits(gp[row*nids+i]) != math.Float32bits(picked[i]) {
				exact++
			}
		}
		g := math.Float64frombits(binary.LittleEndian.Uint64(gs[8*row:]))
		if sum == sum && g != sum {
			worst = max(worst, math.Abs(g-sum)/sum)
		} else if (sum != sum) != (g != g) {
			worst = math.Inf(1)
		}
	}
	check(t, "pick_f32 max/argmax/picked (bad)", float64(exact), 0)
	check(t, "pick_f32 Σexp V=151936 (rel)", worst, 3e-7)
	timePick(t, f) // a no-op without a device
}

func TestDeviceTopK(t *testing.T) { onDevices(t, checkTopK) }

func checkTopK(t *testing.T) {
	f := fn(t, "topk.cu", "topk_f32")
	r := rand.New(rand.NewPCG(11, 12))
	rows, V := 4, 151936
	x := logitRows(r, rows, V)
	// Many equal values: ties decided by index.
	for i := range 100 {
		x[i*7] = 12
	}
	bx := upload(t, f32Bytes(x))
	bad := 0
	for _, k := range []int{1, 5, 32} {
		bad += topKMismatches(t, f, 128, bx, x, V, rows, k)
	}
	check(t, "topk_f32 k=1,5,32 V=151936 (bad)", float64(bad), 0)
}

// topKMismatches launches top-k kernel f (threads per row) over the rows
// of V logits x (uploaded as bx) and counts the ids and values that differ
// from kernels.TopK's, bit for bit.
func topKMismatches(t *testing.T, f *Function, threads int, bx Buffer, x []float32, V, rows, k int) int {
	bi, bv := output(t, 4*rows*k), output(t, 4*rows*k)
	var a Args
	a.Ptr(bx, 0).I32(int32(V)).I32(int32(k)).Ptr(bi, 0).Ptr(bv, 0)
	launch(t, f, Dim3{X: rows}, Dim3{X: threads}, &a)
	gi, gv := download(t, bi, 4*rows*k), bytesF32(download(t, bv, 4*rows*k))
	ids, vals := make([]int32, k), make([]float32, k)
	bad := 0
	for row := range rows {
		kernels.TopK(x[row*V:(row+1)*V], k, ids, vals)
		for i := range k {
			j := row*k + i
			if int32(binary.LittleEndian.Uint32(gi[4*j:])) != ids[i] || math.Float32bits(gv[j]) != math.Float32bits(vals[i]) {
				bad++
			}
		}
	}
	return bad
}

func TestDeviceTopKRadix(t *testing.T) { onDevices(t, checkTopKRadix) }

// topKRows are rows of V logits made for ties and edges: a normal row
// with a block of equal values across the top-k boundary (every 13th is 3,
// about the 68th best), a row rounded to quarters (ties everywhere), one
// with NaNs, ±0 and −inf, and one with fewer numbers than k (the rest NaN).
func topKRows(r *rand.Rand, V int) []float32 {
	x := make([]float32, 4*V)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for j := 0; j < V; j += 13 {
		x[j] = 3
	}
	for j := range V {
		x[V+j] = float32(math.Round(float64(x[V+j])*4) / 4)
		switch j % 5 {
		case 0:
			x[2*V+j] = float32(math.NaN())
		case 1:
			x[2*V+j] = float32(math.Copysign(0, float64(j%2*2-1)))
		case 2:
			x[2*V+j] = float32(math.Inf(-1))
		}
		if j%3 != 0 {
			x[3*V+j] = float32(math.NaN())
		}
	}
	return x
}

func checkTopKRadix(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		entry   string
		threads int
		ks      []int
	}{{"topk_radix_f32", 256, []int{1, 32, 33, 256, 1024}}, {"topk_f32", 128, []int{1, 32}}} {
		f := fn(t, "topk.cu", c.entry)
		for _, V := range []int{50021, 1031} {
			const rows = 4
			x := topKRows(r, V)
			bx := upload(t, f32Bytes(x))
			bad := 0
			for _, k := range c.ks {
				if k > V {
					continue
				}
				bad += topKMismatches(t, f, c.threads, bx, x, V, rows, k)
			}
			check(t, fmt.Sprintf("%s k=%v V=%d, ties, NaN, ±0, −inf (bad)", c.entry, c.ks, V), float64(bad), 0)
		}
	}
}

// refMatMul is y[m][n] = Σ_k W[n][k]·x[m][k] in float64, and the bound
// Σ|W·x| for the tolerance.
func refMatMul(W, x []float32, N, K, M int) (y, mag []float64) {
	y, mag = make([]float64, M*N), make([]float64, M*N)
	for m := range M {
		for n := range N {
			var s, a float64
			for k := range K {
				p := float64(W[n*K+k]) * float64(x[m*K+k])
				s += p
				a += math.Abs(p)
			}
			y[m*N+n], mag[m*N+n] = s, a
		}
	}
	return y, mag
}

func TestDeviceMatMulFloat(t *testing.T) { onDevices(t, checkMatMulFloat) }

func checkMatMulFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, typ := range []kernels.Type{kernels.F32, kernels.F16, kernels.BF16} {
		name := "matmul_" + strings.ToLower(typ.String())
		f := fn(t, "matmul.cu", name)
		worst := 0.0
		for _, c := range []struct{ N, K, M int }{{67, 129, 1}, {256, 896, 17}, {1000, 64, 40}, {37, 75, 131}} {
			W, x := randF32(r, c.N*c.K, 1), randF32(r, c.M*c.K, 1)
			wb := make([]byte, typ.RowBytes(len(W)))
			xr := make([]float32, len(x))
			if err := kernels.Quantize(typ, W, wb); err != nil {
				t.Fatal(err)
			}
			if err := kernels.Dequantize(typ, wb, W); err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				xr[i] = v // the CPU's vec_dot_type:
				if typ == kernels.F16 {
					xr[i] = kernels.RoundF16(v)
				} else if typ == kernels.BF16 {
					xr[i] = kernels.RoundBF16(v)
				}
			}
			want, mag := refMatMul(W, xr, c.N, c.K, c.M)
			bw, bx, by := upload(t, wb), upload(t, f32Bytes(x)), output(t, 4*c.M*c.N)
			var a Args
			a.Ptr(bw, 0).Ptr(bx, 0).Ptr(by, 0).I32(int32(c.N)).I32(int32(c.K)).I32(int32(c.M))
			g := gpu.MatMul(c.N, c.M)
			launch(t, f, Dim3(g.Grid), Dim3(g.Block), &a)
			got := bytesF32(download(t, by, 4*c.M*c.N))
			for i := range got {
				worst = max(worst, math.Abs(float64(got[i])-want[i])/(mag[i]+1e-30))
			}
		}
		check(t, name+" (err/Σ|w·x|)", worst, 1e-5)
	}
}

func TestDeviceAdd(t *testing.T) { onDevices(t, checkAdd) }

func checkAdd(t *testing.T) {
	add, rows := fn(t, "add.cu", "add_f32"), fn(t, "add.cu", "add_rows_f32")
	r := rand.New(rand.NewPCG(11, 12))
	const nr, n = 5, 1001
	x, y, b := randF32(r, nr*n, 10), randF32(r, nr*n, 10), randF32(r, n, 1)
	bx, by, bb := upload(t, f32Bytes(x)), upload(t, f32Bytes(y)), upload(t, f32Bytes(b))
	var a Args
	a.Ptr(bx, 0).Ptr(by, 0).U64(nr * n)
	launch(t, add, Dim3{X: (nr*n + 255) / 256}, Dim3{X: 256}, &a)
	a.Reset()
	a.Ptr(bx, 0).Ptr(bb, 0).I32(n)
	launch(t, rows, Dim3{X: (n + 255) / 256, Y: nr}, Dim3{X: 256}, &a)
	got, bad := bytesF32(download(t, bx, 4*nr*n)), 0
	for i := range got {
		if want := (x[i] + y[i]) + b[i%n]; math.Float32bits(got[i]) != math.Float32bits(want) {
			bad++
		}
	}
	check(t, "add_f32 + add_rows_f32 (bits differing)", float64(bad), 0)
}

func TestDeviceEmbed(t *testing.T) { onDevices(t, checkEmbed) }

// checkEmbed looks rows up in tables of each stored type, ids repeating
// and out of order, against kernels.DequantizeRow bit for bit.
func checkEmbed(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const rows, n = 37, 768
	ids := []int32{5, 0, 36, 5, 17, 2, 36}
	idb := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(idb[4*i:], uint32(id))
	}
	types := []kernels.Type{kernels.F32, kernels.F16, kernels.BF16}
	for _, q := range quantLayouts() {
		types = append(types, q.typ)
	}
	bad := map[bool]int{}
	for _, typ := range types {
		var data []byte
		if typ.BlockSize() == 1 {
			table := randF32(r, rows*n, 1)
			table[3] = float32(math.Inf(-1)) // guard values pass through
			data = make([]byte, rows*typ.RowBytes(n))
			if err := kernels.Quantize(typ, table, data); err != nil {
				t.Fatal(err)
			}
		} else {
			data = quantWeights(r, typ, rows, n)
		}
		w := &kernels.Matrix{Type: typ, Rows: rows, Cols: n, Data: data}
		f := fn(t, "embed.cu", "get_rows_"+strings.ToLower(typ.String()))
		bt, bi, bo := upload(t, data), upload(t, idb), output(t, 4*len(ids)*n)
		var a Args
		a.Ptr(bt, 0).Ptr(bi, 0).Ptr(bo, 0).I32(n)
		launch(t, f, Dim3{X: (n + 255) / 256, Y: len(ids)}, Dim3{X: 256}, &a)
		got, want, nbad := bytesF32(download(t, bo, 4*len(ids)*n)), make([]float32, n), 0
		for i, id := range ids {
			kernels.DequantizeRow(w, int(id), want)
			for j := range n {
				if math.Float32bits(got[i*n+j]) != math.Float32bits(want[j]) {
					nbad++
				}
			}
		}
		if nbad > 0 {
			t.Logf("get_rows_%s: %d values differ", strings.ToLower(typ.String()), nbad)
		}
		bad[typ.BlockSize() > 1] += nbad
	}
	check(t, "get_rows_f32/f16/bf16 (values differing)", float64(bad[false]), 0)
	check(t, "get_rows of 13 quantized types (values differing)", float64(bad[true]), 0)
}

func TestDeviceAttention(t *testing.T) { onDevices(t, checkAttention) }

// refAttention is attention.cu's procedure on the host: scores s(t, h,
// g, j) (K·Q, unscaled) over the keys keep(t, h, j) allows (nil: all),
// f64 sums, p rounded by rnd, v the cached values expanded to f32; out
// and Σ p·|v|.
func refAttention(score func(t, h, g, j int) float32, keep func(t, h, j int) bool, v []float32, rnd func(float32) float32, tokens, nh, nkv, hd, capacity, pos0 int, scale float32) (out, mag []float64) {
	out, mag = make([]float64, tokens*nh*hd), make([]float64, tokens*nh*hd)
	for t := range tokens {
		for h := range nh {
			g, nk := h/(nh/nkv), pos0+t+1
			s, mx := make([]float32, nk), float32(math.Inf(-1))
			for j := range nk {
				if keep == nil || keep(t, h, j) {
					s[j] = score(t, h, g, j) * scale
					mx = max(mx, s[j])
				}
			}
			var sum float64
			for j := range s {
				if keep != nil && !keep(t, h, j) {
					s[j] = 0
					continue
				}
				s[j] = float32(math.Exp(float64(s[j] - mx)))
				sum += float64(s[j])
			}
			inv := float32(1 / sum)
			for d := range hd {
				for j := range s {
					p, vv := float64(rnd(s[j]*inv)), float64(v[(g*capacity+j)*hd+d])
					out[(t*nh+h)*hd+d] += p * vv
					mag[(t*nh+h)*hd+d] += p * math.Abs(vv)
				}
			}
		}
	}
	return out, mag
}

// cacheRows stores x as rows of hd in the cache type typ (the CPU's KV
// store) and returns the bytes and their values expanded to f32.
func cacheRows(t *testing.T, typ kernels.Type, x []float32, hd int) ([]byte, []float32) {
	rb := typ.RowBytes(hd)
	b, f := make([]byte, len(x)/hd*rb), make([]float32, len(x))
	for i := range len(x) / hd {
		kernels.QuantizeActivation(typ, x[i*hd:(i+1)*hd], b[i*rb:(i+1)*rb])
	}
	if err := kernels.Dequantize(typ, b, f); err != nil {
		t.Fatal(err)
	}
	return b, f
}

func checkAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const tokens, nh, nkv, hd, capacity, pos0 = 6, 4, 2, 64, 64, 9
	scale := float32(1 / math.Sqrt(hd))
	for _, c := range []struct {
		typ kernels.Type
		tol float64
	}{{kernels.F32, 1e-5}, {kernels.F16, 2e-3}, {kernels.BF16, 1.6e-2}, {kernels.Q8_0, 1e-5}} {
		entry := "attn_" + strings.ToLower(c.typ.String())
		f := fn(t, "attention.cu", entry)
		q := randF32(r, tokens*nh*hd, 2)
		kb, k := cacheRows(t, c.typ, randF32(r, nkv*capacity*hd, 2), hd)
		vb, v := cacheRows(t, c.typ, randF32(r, nkv*capacity*hd, 2), hd)
		qb, score, rnd := f32Bytes(q), floatScores(q, k, c.typ, nh, hd, capacity), func(x float32) float32 { return roundTo(c.typ, x) }
		if c.typ == kernels.Q8_0 {
			qb, _ = cacheRows(t, c.typ, q, hd)
			score = q8Scores(qb, kb, nh, hd, capacity)
		}
		want, mag := refAttention(score, nil, v, rnd, tokens, nh, nkv, hd, capacity, pos0, scale)
		bq, bk, bv, bo := upload(t, qb), upload(t, kb), upload(t, vb), output(t, 4*len(want))
		var a Args
		a.Ptr(bq, 0).Ptr(bk, 0).Ptr(bv, 0).Ptr(bo, 0).I32(tokens).I32(nh).I32(nkv).I32(hd).I32(capacity).I32(pos0).F32(scale)
		launchAttention(t, f, &a, c.typ, tokens, nh, hd)
		got, worst := bytesF32(download(t, bo, 4*len(want))), 0.0
		for i := range got {
			worst = max(worst, math.Abs(float64(got[i])-want[i])/max(mag[i], 1e-30))
		}
		check(t, entry+" causal, GQA 4/2 heads, pos0 9 (relative to Σp|v|)", worst, c.tol)
	}
}

// roundTo rounds x to a float cache type's precision (f32 and q8_0: x).
func roundTo(typ kernels.Type, x float32) float32 {
	switch typ {
	case kernels.F16:
		return kernels.RoundF16(x)
	case kernels.BF16:
		return kernels.RoundBF16(x)
	}
	return x
}

// floatScores is a float cache's K·Q: f32 fused products in d order of q
// rounded to the cache type and the cached keys k.
func floatScores(q, k []float32, typ kernels.Type, nh, hd, capacity int) func(t, h, g, j int) float32 {
	return func(t, h, g, j int) float32 {
		var acc float32
		for d, x := range q[(t*nh+h)*hd:][:hd] {
			acc = float32(math.FMA(float64(roundTo(typ, x)), float64(k[(g*capacity+j)*hd+d]), float64(acc)))
		}
		return acc
	}
}

// q8Scores is a q8_0 cache's K·Q over Q8_0 queries qb: the f64 sum of the
// exact block terms f32(d_k·d_q)·Σ k·q, rounded to f32.
func q8Scores(qb, kb []byte, nh, hd, capacity int) func(t, h, g, j int) float32 {
	rb := kernels.Q8_0.RowBytes(hd)
	f16 := func(b []byte) float32 { return kernels.F16ToF32(binary.LittleEndian.Uint16(b)) }
	return func(t, h, g, j int) float32 {
		qr, kr := qb[(t*nh+h)*rb:], kb[(g*capacity+j)*rb:]
		var s float64
		for b := range hd / 32 {
			qq, kk := qr[34*b:], kr[34*b:]
			isum := 0
			for i := range 32 {
				isum += int(int8(qq[2+i])) * int(int8(kk[2+i]))
			}
			s += float64(f16(kk)*f16(qq)) * float64(isum)
		}
		return float32(s)
	}
}
