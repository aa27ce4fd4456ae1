package kernels

// This file owns the registry entries of the ops outside matmul
// (attention, swiglu, rmsnorm, rope, head) and what each binds into a
// KernelSet's table.
// The fast variants of one op give the same bits on every CPU level: the
// avx2 and avx512 kernels and the "generic" Go twins all follow the twins'
// arithmetic (expGo, the lane order of the float64 sums), so a result does
// not depend on which of them a CPU picked. The "go" variants are ggml's
// own AVX-512 arithmetic, bit-exact with llama.cpp and slow; they are never
// the default where a fast variant runs.
//
// Adding a variant is one entry here (op, name, priority, the features it
// needs, the funcs it binds), its kernel, and its twin test.

// AttnMode is how the attention op computes softmax(K·Q)·V.
type AttnMode uint8

const (
	// AttnExact runs ggml's -fa off K·Q and V·P products (AttnScores,
	// AttnValues) and soft_max: bit-exact with llama.cpp's AVX-512 build.
	AttnExact AttnMode = iota + 1
	// AttnDense runs K·Q and V·P through the set's MatMul and the set's
	// softmax over whole score rows.
	AttnDense
	// AttnFlash streams key blocks with a running max and sum (no
	// rows × keys score matrix), through the set's MatMul, ExpSum and
	// ScaleMax.
	AttnFlash
)

// elementwiseVariants lists the attention, swiglu, rmsnorm, rope and head
// variants.
func elementwiseVariants() []variant {
	const avx2, avx512 = needAVX2, needAVX512
	return []variant{
		{op: OpAttention, name: "go", prio: 10,
			desc: "ggml's -fa off attention in plain Go: K·Q and V·P in its order (AttnScores/AttnValues), softmax with its vector exp and glibc expf (bit-exact, slow)",
			bind: func(t *kernelTable, f CPUFeatures) { t.attn, t.softmax = AttnExact, softmaxGo; bindStream(t, f) }},
		{op: OpAttention, name: "generic", prio: 15,
			desc: "K·Q and V·P through the matmul ops, softmax in plain Go (the vector kernels' twins: the same bits as avx2/avx512)",
			bind: func(t *kernelTable, f CPUFeatures) { t.attn, t.softmax = AttnDense, softmaxTwin; bindStream(t, f) }},
		{op: OpAttention, name: "avx2", prio: 20, needs: avx2,
			desc: "K·Q and V·P through the matmul ops, softmax with an 8-lane vector exp (AVX2, FMA)",
			bind: func(t *kernelTable, f CPUFeatures) { t.attn, t.softmax = AttnDense, softmaxAVX2; bindStream(t, f) }},
		{op: OpAttention, name: "avx512", prio: 30, needs: avx512,
			desc: "K·Q and V·P through the matmul ops, softmax with a 16-lane vector exp (AVX-512)",
			bind: func(t *kernelTable, f CPUFeatures) { t.attn, t.softmax = AttnDense, softmaxAVX512; bindStream(t, f) }},
		// Below the dense variants so that it is never the default: the
		// default keeps the -fa off order of operations.
		{op: OpAttention, name: "flash", prio: 5,
			desc: "tiled streaming softmax (FlashAttention-2 style): key blocks, running max and sum, no ctx×ctx scores; K·Q and V·P through the matmul ops, the fastest vector exp this CPU has",
			bind: func(t *kernelTable, f CPUFeatures) { t.attn, t.softmax = AttnFlash, softmaxTwin; bindStream(t, f) }},

		{op: OpSwiGLU, name: "go", prio: 10,
			desc: "ggml's swiglu in plain Go: its vector silu on 16-element groups, glibc expf on the tail (bit-exact, slow)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.swiglu = swigluGo }},
		{op: OpSwiGLU, name: "generic", prio: 15,
			desc: "silu(g)·u in plain Go (the vector kernels' twin: the same bits as avx2/avx512)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.swiglu = swigluTwin }},
		{op: OpSwiGLU, name: "avx2", prio: 20, needs: avx2,
			desc: "silu(g)·u with an 8-lane vector exp (AVX2, FMA)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.swiglu = swigluAVX2 }},
		{op: OpSwiGLU, name: "avx512", prio: 30, needs: avx512,
			desc: "silu(g)·u with a 16-lane vector exp (AVX-512)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.swiglu = swigluAVX512 }},

		// "go" stays the default: its order is ggml's own rms_norm on every
		// CPU (not an emulation of one build), so the exact set
		// matmul=go,attention=go,swiglu=go keeps llama.cpp's bits; the
		// reordered sums below buy about 0.5% of a prefill and move last
		// bits, which 8-bit activation rounding turns into PPL shifts.
		{op: OpRMSNorm, name: "go", prio: 10,
			desc: "ggml's rms_norm in plain Go: the squares summed in float64 in order (the default: llama.cpp's bits on every CPU)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.rmsNorm = rmsNormGo }},
		{op: OpRMSNorm, name: "generic", prio: 4,
			desc: "squares summed into 16 float64 lanes in plain Go (the vector kernel's twin: the same bits as avx2)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.rmsNorm = rmsNormTwin }},
		{op: OpRMSNorm, name: "avx2", prio: 5, needs: avx2,
			desc: "squares summed into 4×4 float64 lanes, the scale applied in 8-lane multiplies (AVX2)",
			bind: func(t *kernelTable, _ CPUFeatures) { t.rmsNorm = rmsNormAVX2 }},

		// The AVX2 rotation gives the plain Go loop's bits.
		{op: OpRoPE, name: "go", prio: 10,
			desc: "ggml's rotation in plain Go, one fused multiply-add per output",
			bind: func(t *kernelTable, _ CPUFeatures) { t.rope = ropeGo }},
		{op: OpRoPE, name: "avx2", prio: 20, needs: avx2,
			desc: "ggml's rotation, 8 lanes (AVX2, FMA): the same bits as go",
			bind: func(t *kernelTable, _ CPUFeatures) { t.rope = ropeAVX2 }},

		{op: OpHead, name: "go", prio: 10,
			desc: "pick (max, argmax, Σ exp with libm exp) and heap top-k in plain Go, the reference (Pick/TopK); the LM head follows the matmul ops",
			bind: func(t *kernelTable, _ CPUFeatures) { t.pick, t.topK = nil, TopK }},
		{op: OpHead, name: "generic", prio: 15,
			desc: "pick with the vector kernels' Go twin (the same bits as avx2/avx512), thresholded top-k",
			bind: func(t *kernelTable, _ CPUFeatures) { t.pick, t.topK = pickMaxSumTwin, topKThreshold }},
		{op: OpHead, name: "avx2", prio: 20, needs: avx2,
			desc: "pick with vector max/argmax and an 8-lane vector exp summed in float64 lanes (AVX2), thresholded top-k",
			bind: func(t *kernelTable, _ CPUFeatures) { t.pick, t.topK = pickMaxSumAVX2, topKThreshold }},
		{op: OpHead, name: "avx512", prio: 30, needs: avx512,
			desc: "pick with vector max/argmax and a 16-lane vector exp summed in float64 lanes (AVX-512), thresholded top-k",
			bind: func(t *kernelTable, _ CPUFeatures) { t.pick, t.topK = pickMaxSumAVX512, topKThreshold }},
	}
}

// bindStream sets the streaming-softmax helpers (ExpSum, ScaleMax) to the
// fastest this CPU has; every choice gives the same values.
func bindStream(t *kernelTable, f CPUFeatures) {
	type pair struct {
		expSum   func(s []float32, mx float32) float64
		scaleMax func(s []float32, scale float32) float32
	}
	p := choose(t, f, "attention stream (ExpSum, ScaleMax)",
		impl[pair]{"avx512", needAVX512, pair{expSumAVX512, scaleMaxAVX512}},
		impl[pair]{"avx2", needAVX2, pair{expSumAVX2, scaleMaxAVX2}},
		impl[pair]{"generic", 0, pair{expSumTwin, scaleMaxTwin}})
	t.expSum, t.scaleMax = p.expSum, p.scaleMax
}

// Attention is the attention mode the set runs.
func (ks KernelSet) Attention() AttnMode { return ks.table().attn }

// SwiGLU sets g[i] = silu(g[i])·u[i] with silu(x) = x/(1+exp(−x)) in
// float32, for i < len(g); len(u) must be at least len(g). g is one row:
// ggml runs the op row by row, and the "go" variant's 16-element groups
// start at g[0].
func (ks KernelSet) SwiGLU(g, u []float32) {
	ks.table().swiglu(g, u[:len(g)])
}

// Softmax turns the first valid entries of s into probabilities and zeroes
// the rest, as ggml's soft_max with a scale and a causal mask: scores
// multiplied by scale in float32, exp(x − max) in float32, the sum in
// float64, and every value multiplied by float32(1/sum). s is the whole
// padded row (the "go" variant's 16-element groups follow its length);
// valid must be in [1, len(s)].
func (ks KernelSet) Softmax(s []float32, valid int, scale float32) {
	ks.table().softmax(s, valid, scale)
	clear(s[valid:])
}

// ExpSum sets s[i] = exp(s[i] − mx) for every i and returns their sum in
// float64, with the fast variants' vector exp (about 2 ulp) and their lane
// order: the same values on every CPU. mx should be at least every s[i] so
// nothing overflows.
func (ks KernelSet) ExpSum(s []float32, mx float32) float64 {
	if len(s) == 0 {
		return 0
	}
	return ks.table().expSum(s, mx)
}

// ScaleMax multiplies every s[i] by scale in float32 and returns the
// largest result (−Inf for an empty s).
func (ks KernelSet) ScaleMax(s []float32, scale float32) float32 {
	if len(s) == 0 {
		return scaleMaxTwin(s, scale)
	}
	return ks.table().scaleMax(s, scale)
}
