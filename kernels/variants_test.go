package kernels

// Tests of the variant registry, KernelSet parsing, and the SIMD matmul
// driver against the plain Go path and float64 on odd shapes.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRegistryListsEveryMatMulType(t *testing.T) {
	ops := KernelOps()
	for _, wt := range matMulTypes() {
		op := MatMulOp(wt)
		for _, name := range []string{"ref", "go"} {
			if lookup(op, name) == nil {
				t.Errorf("%s has no %q variant", op, name)
			}
		}
		if !strings.Contains(strings.Join(ops, " "), op) {
			t.Errorf("KernelOps lacks %s", op)
		}
	}
	for _, op := range []string{OpAttention, OpRMSNorm, OpRoPE, OpSwiGLU, OpHead} {
		if lookup(op, "go") == nil {
			t.Errorf("op %s has no go variant", op)
		}
	}
	// Exactly one default per op, and it is supported.
	defaults := map[string]int{}
	for _, v := range KernelVariants() {
		if v.Default {
			defaults[v.Op]++
			if !v.Supported {
				t.Errorf("default %s=%s is not supported", v.Op, v.Name)
			}
		}
	}
	for _, op := range ops {
		if defaults[op] != 1 {
			t.Errorf("op %s has %d defaults", op, defaults[op])
		}
	}
}

func TestParseKernels(t *testing.T) {
	ks, err := ParseKernels("matmul=ref, matmul.q8_0=go ,attention=go")
	if err != nil {
		t.Fatal(err)
	}
	if ks.Variant("matmul.q4_k") != "ref" || ks.Variant("matmul.q8_0") != "go" || ks.Variant(OpAttention) != "go" {
		t.Fatalf("selection not applied: %s", ks)
	}
	// String round-trips.
	again, err := ParseKernels(ks.String())
	if err != nil || again.String() != ks.String() {
		t.Fatalf("round trip: %v %q vs %q", err, again.String(), ks.String())
	}
	// "default" undoes an earlier choice.
	ks, err = ParseKernels("matmul=ref,matmul.f16=default")
	if err != nil {
		t.Fatal(err)
	}
	if ks.Variant("matmul.f16") != (KernelSet{}).Variant("matmul.f16") {
		t.Fatalf("default not restored: %s", ks.Variant("matmul.f16"))
	}
	if CPU().HasAVX2() && haveAsm {
		ks, err = ParseKernels("matmul=avx2")
		if err != nil {
			t.Fatal(err)
		}
		if ks.Variant("matmul.q8_0") != "avx2" || ks.Variant("matmul.q2_k") != "avx2" {
			t.Fatalf("group avx2: %s", ks)
		}
	}
	// A group choice applies only where the variant exists; the ops
	// without it keep their default.
	if v := lookup("matmul.q8_0", "avx512"); v != nil && v.supported(CPU()) {
		ks, err = ParseKernels("matmul=avx512")
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range KernelOps() {
			if !strings.HasPrefix(op, opMatMul+".") {
				continue
			}
			want := "avx512"
			if lookup(op, "avx512") == nil {
				want = (KernelSet{}).Variant(op)
			}
			if got := ks.Variant(op); got != want {
				t.Errorf("group avx512: %s=%s, want %s", op, got, want)
			}
		}
	}
	for _, bad := range []string{"matmul", "nope=go", "matmul.q8_0=fast", "matmul=fast", "=go", "attention="} {
		if _, err := ParseKernels(bad); !errors.Is(err, ErrKernelSpec) {
			t.Errorf("ParseKernels(%q) = %v, want ErrKernelSpec", bad, err)
		}
	}
	// A variant the CPU lacks is an error, not a silent fallback.
	if _, err := parseKernels("matmul.q8_0=avx512", 0); !errors.Is(err, ErrKernelSpec) || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("unsupported variant accepted: %v", err)
	}
	if ks, err := ParseKernels(""); err != nil || ks.t != nil {
		t.Errorf("empty spec: %v %v", ks, err)
	}
}

func TestKernelSetConfigCoversAllOps(t *testing.T) {
	c := (KernelSet{}).Config()
	for _, op := range KernelOps() {
		if c[op] == "" {
			t.Errorf("Config lacks %s", op)
		}
	}
}

// TestMatMulSIMDDriver runs every SIMD variant through the threaded driver
// on odd shapes and compares each output with the plain Go path and with
// float64 on the same converted activations; guards around out must stay.
func TestMatMulSIMDDriver(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	type shape struct{ rows, cols, tok int }
	for _, wt := range append(append(append([]Type{}, simdQ8Types...), simdKTypes...), simdFloatTypes...) {
		shapes := []shape{{37, 2 * wt.BlockSize() * max(1, 64/wt.BlockSize()), 13}, {16, 512, 1}, {3, 256, 9}}
		if wt.BlockSize() == 1 {
			shapes = append(shapes, shape{21, 40, 7}, shape{5, 7, 3}, // element tails
				shape{45, 70, 29}, shape{64, 256, 24}, shape{33, 33, 37}) // the outer-product panel path
		}
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			for _, sh := range shapes {
				for _, threads := range []int{1, 2} {
					t.Run(fmt.Sprintf("%v/%s/%dx%d/tok%d/thr%d", wt, isa, sh.rows, sh.cols, sh.tok, threads), func(t *testing.T) {
						checkDriver(t, rng, k, wt, sh.rows, sh.cols, sh.tok, threads)
					})
				}
			}
		}
	}
}

func checkDriver(t *testing.T, rng *rand.Rand, k *matKernel, wt Type, rows, cols, nTok, threads int) {
	w := simdMatrix(t, rng, wt, rows, cols)
	x := simdFloats(rng, nTok*cols, 1)
	p := NewPool(threads)
	defer p.Close()
	g := newGuarded(1, nTok*rows)
	var s simdScratch
	for range 2 { // the second call reuses the scratch
		matMulSIMD(k, p, g.at(0), w, x, nTok, &s)
	}
	g.check(t, "out")
	want := make([]float32, nTok*rows)
	MatMul(p, want, w, x, nTok, nil)
	// float64 on the same converted activations.
	vt := VecDotType(wt)
	conv := make([]byte, vt.RowBytes(cols))
	af, wf := make([]float32, cols), make([]float32, cols)
	for tok := range nTok {
		QuantizeActivation(wt, x[tok*cols:(tok+1)*cols], conv)
		if err := Dequantize(vt, conv, af); err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			DequantizeRow(w, r, wf)
			exact, abs := simdRefDot(wf, af)
			got := float64(g.at(0)[tok*rows+r])
			tol := simdTol(cols, abs)
			if d := math.Abs(got - exact); d > tol {
				t.Fatalf("tok %d row %d: %v, float64 %v (|Δ|=%g > %g)", tok, r, got, exact, d, tol)
			}
			if d := math.Abs(got - float64(want[tok*rows+r])); d > 2*tol {
				t.Fatalf("tok %d row %d: %v, go path %v", tok, r, got, want[tok*rows+r])
			}
		}
	}
}

// TestKernelSetMatMul checks that every matmul variant of a set agrees on
// real shapes (the SIMD ones with the plain Go path up to float rounding,
// "ref" exactly with MatMulRef), and that the SIMD path allocates nothing
// per call once its scratch has grown, also with a two-worker pool.
func TestKernelSetMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	p := NewPool(2)
	defer p.Close()
	const rows, cols, nTok = 48, 512, 11
	for _, wt := range []Type{Q8_0, Q4_K, Q6_K, F16, Q2_K, Q3_K, IQ4_XS} {
		w := simdMatrix(t, rng, wt, rows, cols)
		x := simdFloats(rng, nTok*cols, 1)
		ref, plain := make([]float32, nTok*rows), make([]float32, nTok*rows)
		MatMulRef(ref, w, x, nTok)
		MatMul(nil, plain, w, x, nTok, nil)
		// Σ|w|·|x| bounds Σ|w·a| (a the converted activation) up to the
		// conversion's relative error.
		mag := make([]float64, nTok*rows)
		wf := make([]float32, cols)
		for r := range rows {
			DequantizeRow(w, r, wf)
			for tk := range nTok {
				for i, v := range wf {
					mag[tk*rows+r] += 1.01 * math.Abs(float64(v)*float64(x[tk*cols+i]))
				}
			}
		}
		for _, name := range []string{"ref", "go", "avx2", "avx512", "gotile"} {
			v := lookup(MatMulOp(wt), name)
			if v == nil || !v.supported(CPU()) {
				continue
			}
			ks, err := ParseKernels(MatMulOp(wt) + "=" + name)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float32, len(ref))
			var s MatScratch
			ks.MatMul(p, out, w, x, nTok, &s)
			for i := range out {
				want, tol := plain[i], 2*simdTol(cols, mag[i])
				if name == "ref" {
					want, tol = ref[i], 0
				}
				if d := math.Abs(float64(out[i] - want)); d > tol {
					t.Fatalf("%v %s: out[%d] = %v, want %v (tol %g)", wt, name, i, out[i], want, tol)
				}
			}
			if name != "ref" && name != "gotile" { // the twins decode rows into fresh slices
				for _, pool := range []*Pool{nil, p} {
					if n := testing.AllocsPerRun(5, func() { ks.MatMul(pool, out, w, x, nTok, &s) }); n != 0 {
						t.Errorf("%v %s threads=%d: %v allocations per call", wt, name, pool.Threads(), n)
					}
				}
			}
		}
	}
}

// TestSIMDTokenInvariance: a token's outputs must not depend on how many
// tokens share the call or on the thread count (bit for bit), so that
// results do not change with the engine's pass plan.
func TestSIMDTokenInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	p := NewPool(2)
	defer p.Close()
	const rows, nTok = 40, 29
	for _, wt := range append(append(append([]Type{}, simdQ8Types...), simdKTypes...), simdFloatTypes...) {
		cols := max(wt.BlockSize(), 32) * 2
		w := simdMatrix(t, rng, wt, rows, cols)
		x := simdFloats(rng, nTok*cols, 1)
		for _, isa := range simdISAs(t, wt) {
			k := simdKernel(isa, wt)
			var s simdScratch
			batch := make([]float32, nTok*rows)
			matMulSIMD(k, p, batch, w, x, nTok, &s)
			one := make([]float32, rows)
			for _, pool := range []*Pool{nil, p} {
				for tok := range nTok {
					matMulSIMD(k, pool, one, w, x[tok*cols:(tok+1)*cols], 1, &s)
					for r, v := range one {
						if math.Float32bits(v) != math.Float32bits(batch[tok*rows+r]) {
							t.Fatalf("%v %s threads=%d: token %d row %d alone %v, in a batch %v", wt, isa, pool.Threads(), tok, r, v, batch[tok*rows+r])
						}
					}
				}
			}
		}
	}
}

// variantSets returns a KernelSet selecting each variant of op that this
// CPU (as masked by PLEXBENCH_CPU) supports, in registry order, and logs
// the ones it leaves out by name.
func variantSets(t testing.TB, op string) []namedSet {
	t.Helper()
	var sets []namedSet
	for _, v := range KernelVariants() {
		if v.Op != op {
			continue
		}
		if !v.Supported {
			t.Logf("%s=%s: not supported on this CPU (%s), skipped", op, v.Name, CPU())
			continue
		}
		ks, err := ParseKernels(op + "=" + v.Name)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, namedSet{v.Name, ks})
	}
	return sets
}

type namedSet struct {
	name string
	ks   KernelSet
}

// requireAVX2 skips tb, naming what, unless the amd64 assembly is built in
// and this CPU (as PLEXBENCH_CPU masks it) has AVX2+FMA+F16C.
func requireAVX2(tb testing.TB, what string) {
	tb.Helper()
	if !haveAsm || !CPU().HasAVX2() {
		tb.Skipf("%s need the amd64 assembly and AVX2+FMA+F16C (asm %v, CPU %s)", what, haveAsm, CPU())
	}
}
