package kernels

// This file owns the kernel-variant registry: every op's implementations
// by name ("ref", "go", "avx2", "avx512", …) with what each needs from the
// CPU, the KernelSet a run selects from a spec string such as
// "matmul=ref,attention=avx512", and the listing `plexbench kernels`
// prints. The table is built once at start-up and never changes; a
// KernelSet is a plain value the engine carries in its options, so two
// runs in one process may use different variants.

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Op names of the operations outside matmul. Their implementations live
// with the engine's passes; the registry records which one a run asked for.
const (
	OpAttention = "attention"
	OpRMSNorm   = "rmsnorm"
	OpRoPE      = "rope"
	OpSwiGLU    = "swiglu"
	OpHead      = "head"
)

// opMatMul prefixes the per-weight-type matmul ops ("matmul.q4_k"); the
// bare prefix in a spec selects a variant for all of them.
const opMatMul = "matmul"

// MatMulOp is the op name of the matmul with weights of type t.
func MatMulOp(t Type) string { return opMatMul + "." + strings.ToLower(t.String()) }

// ErrKernelSpec is wrapped by ParseKernels errors.
var ErrKernelSpec = errors.New("kernel selection")

// KernelVariant describes one registered implementation of an op.
type KernelVariant struct {
	Op        string // "matmul.q8_0", "attention", …
	Name      string // "ref", "go", "avx2", "avx512", …
	Desc      string // one line: what it is and what it needs
	Supported bool   // this CPU (and this build) can run it
	Default   bool   // the variant an empty selection picks for Op
}

type matImplKind uint8

const (
	implRef  matImplKind = iota + 1 // MatMulRef: dequantize, float64 dot, no activation quantization
	implGo                          // the plain Go trait path (ggml semantics)
	implSIMD                        // panel / float-tile kernels
)

type matImpl struct {
	kind matImplKind
	k    *matKernel
}

// variant is a registry entry.
type variant struct {
	op, name, desc string
	prio           int                             // higher wins for the default among supported variants
	needs          CPUFeatures                     // what it runs on (0: any CPU)
	mm             *matImpl                        // matmul ops only
	bind           func(*kernelTable, CPUFeatures) // other ops: set the table's funcs for this op
}

func (v *variant) supported(f CPUFeatures) bool { return f.Has(v.needs) }

// registry lists every variant, sorted by op then descending priority,
// built on first use from the type descriptors (typedesc.go) and the
// other ops' entries.
var registry = sync.OnceValue(buildRegistry)

// matMulTypes are the weight types MatMul accepts; each gets an op.
func matMulTypes() []Type {
	var ts []Type
	for t := range Type(64) {
		if t.Known() && CanMatMul(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

func buildRegistry() []variant {
	var vs []variant
	for _, t := range matMulTypes() {
		op := MatMulOp(t)
		goDesc := cmp.Or(descOf(t).goDesc,
			"plain Go in the arithmetic order of llama.cpp's AVX-512 CPU build (MatMul): the bit-exact reference")
		vs = append(vs,
			variant{op: op, name: "ref", prio: 0, mm: &matImpl{kind: implRef},
				desc: "dequantize each row and dot in float64, no activation conversion (MatMulRef)"},
			variant{op: op, name: "go", prio: 10, mm: &matImpl{kind: implGo}, desc: goDesc})
		if k := simdKernel("avx2", t); k != nil {
			vs = append(vs, variant{op: op, name: "avx2", prio: 20, mm: &matImpl{kind: implSIMD, k: k},
				needs: needAVX2, desc: "assembly, 256-bit (AVX2, FMA, F16C)"})
		}
		if k := simdKernel("avx512", t); k != nil {
			needs, desc := CPUFeatures(needAVX512), "assembly, 512-bit (AVX-512 F/BW/VL/DQ)"
			if k.vnni {
				needs, desc = needAVX512VNNI, "assembly, 512-bit with VNNI (AVX-512 F/BW/VL/DQ + VNNI)"
			}
			vs = append(vs, variant{op: op, name: "avx512", prio: 30, mm: &matImpl{kind: implSIMD, k: k},
				needs: needs, desc: desc})
		}
		if k := simdKernel("gotile", t); k != nil {
			// The kernels' Go twins behind the same driver: the default
			// where no assembly runs (purego, arm64, PLEXBENCH_CPU=generic),
			// above "go", so that every CPU level gives the same bits and
			// no result depends on the pass plan.
			vs = append(vs, variant{op: op, name: "gotile", prio: 15, mm: &matImpl{kind: implSIMD, k: k},
				desc: "Go twins of the SIMD kernels in the same tiles: the same bits as avx2/avx512 (the default without assembly)"})
		}
	}
	vs = append(vs, elementwiseVariants()...)
	vs = append(vs, gdnVariants()...)
	slices.SortStableFunc(vs, func(a, b variant) int {
		return cmp.Or(cmp.Compare(a.op, b.op), cmp.Compare(b.prio, a.prio))
	})
	return vs
}

// lookup returns the entry for (op, name).
func lookup(op, name string) *variant {
	reg := registry()
	for i := range reg {
		if reg[i].op == op && reg[i].name == name {
			return &reg[i]
		}
	}
	return nil
}

// best returns op's supported variant of highest priority.
func best(op string, f CPUFeatures) *variant {
	reg := registry()
	for i := range reg {
		if reg[i].op == op && reg[i].supported(f) {
			return &reg[i]
		}
	}
	return nil
}

// KernelOps lists the registered op names in order.
func KernelOps() []string {
	var ops []string
	for _, v := range registry() {
		if len(ops) == 0 || ops[len(ops)-1] != v.op {
			ops = append(ops, v.op)
		}
	}
	return ops
}

// KernelVariants lists every registered variant with its support on this
// CPU and whether it is the default (for `plexbench kernels`).
func KernelVariants() []KernelVariant { return KernelVariantsFor(CPU()) }

// KernelVariantsFor is KernelVariants for a CPU with features f: what
// another machine would run, from the same registry.
func KernelVariantsFor(f CPUFeatures) []KernelVariant {
	reg := registry()
	tab := resolve(nil, f)
	out := make([]KernelVariant, 0, len(reg))
	for i := range reg {
		v := &reg[i]
		out = append(out, KernelVariant{Op: v.op, Name: v.name, Desc: v.desc,
			Supported: v.supported(f), Default: tab.choice[v.op] == v})
	}
	return out
}

// KernelSet is a run's choice of variant per op. The zero value picks the
// fastest variant this CPU supports for every op.
type KernelSet struct {
	t *kernelTable
}

// kernelTable is a resolved selection: for every op the function (or the
// matmul implementation, or the attention mode) that runs, bound once when
// the set is built. Immutable once built; nothing downstream looks at
// variant names or CPU features again.
type kernelTable struct {
	choice map[string]*variant // every op: what ran, for the report
	mm     [64]*matImpl        // by weight type id

	softmax  func(s []float32, valid int, scale float32)              // attention (dense)
	attn     AttnMode                                                 // attention
	expSum   func(s []float32, mx float32) float64                    // attention (flash) and its tests
	scaleMax func(s []float32, scale float32) float32                 // attention (flash)
	swiglu   func(g, u []float32)                                     // swiglu
	rmsNorm  func(out, in, w []float32, eps float32)                  // rmsnorm
	rope     func(v []float32, hd int, cos, sin []float32, neox bool) // rope
	rowF16   func(x []float32, dst []byte)                            // every op: f16 rows (QuantizeActivation)
	rowBF16  func(x []float32, dst []byte)                            // every op: bf16 rows
	pick     func(row []float32) (float32, int32, float64)            // head: max, argmax, Σ exp; nil = Pick
	topK     func(row []float32, k int, ids []int32, l []float32)     // head
	gdn      func(h *DeltaHead)                                       // gdn
	helpers  []helperChoice                                           // the choices binds made by CPU (choose)
}

// impl is one implementation a bind chooses by the CPU where the choice
// needs no variant name (every option gives the same bits).
type impl[T any] struct {
	name  string
	needs CPUFeatures
	fn    T
}

// helperChoice records one choose: what it chose for and every option's
// needs, best first, so that a test can check the choice for any CPU.
type helperChoice struct {
	what, name string
	needs      CPUFeatures
	options    []CPUFeatures
}

// choose returns the first of impls (best first) whose needs f has, and
// records the choice in t. The last impl must need nothing.
func choose[T any](t *kernelTable, f CPUFeatures, what string, impls ...impl[T]) T {
	c := helperChoice{what: what}
	for _, im := range impls {
		c.options = append(c.options, im.needs)
	}
	for _, im := range impls {
		if f.Has(im.needs) {
			c.name, c.needs = im.name, im.needs
			t.helpers = append(t.helpers, c)
			return im.fn
		}
	}
	panic("kernels: no " + what + " implementation runs on " + f.String())
}

var defaultTable = sync.OnceValue(func() *kernelTable { return resolve(nil, CPU()) })

func (ks KernelSet) table() *kernelTable {
	if ks.t == nil {
		return defaultTable()
	}
	return ks.t
}

// resolve builds the table from explicit choices (op → variant) and the
// defaults for the rest.
func resolve(explicit map[string]*variant, f CPUFeatures) *kernelTable {
	t := &kernelTable{choice: map[string]*variant{}}
	bindRowConv(t, f)
	for _, op := range KernelOps() {
		v := explicit[op]
		if v == nil {
			v = best(op, f)
		}
		t.choice[op] = v
		if v.bind != nil {
			v.bind(t, f)
		}
	}
	for _, typ := range matMulTypes() {
		if v := t.choice[MatMulOp(typ)]; v != nil {
			t.mm[typ] = v.mm
		}
	}
	return t
}

// ParseKernels reads a selection "op=variant,op=variant". op is a full op
// name ("matmul.q8_0", "attention") or "matmul" for every matmul op that
// has the variant (at least one must); later items override earlier ones,
// so "matmul=ref,matmul.q4_k=avx512" works. "default" picks the fastest
// supported variant again. Unknown ops or variants, and variants this CPU
// cannot run, are errors: nothing falls back silently. An empty spec is
// the default set.
func ParseKernels(spec string) (KernelSet, error) {
	return parseKernels(spec, CPU())
}

func parseKernels(spec string, f CPUFeatures) (KernelSet, error) {
	explicit := map[string]*variant{}
	ops := KernelOps()
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		op, name, ok := strings.Cut(item, "=")
		op, name = strings.ToLower(strings.TrimSpace(op)), strings.ToLower(strings.TrimSpace(name))
		if !ok || op == "" || name == "" {
			return KernelSet{}, fmt.Errorf("%w: %q is not op=variant", ErrKernelSpec, item)
		}
		var targets []string
		if op == opMatMul {
			for _, o := range ops {
				if strings.HasPrefix(o, opMatMul+".") {
					targets = append(targets, o)
				}
			}
		} else if slices.Contains(ops, op) {
			targets = []string{op}
		} else {
			return KernelSet{}, fmt.Errorf("%w: unknown op %q (ops: %s)", ErrKernelSpec, op, strings.Join(ops, ", "))
		}
		matched := 0
		for _, o := range targets {
			if name == "default" {
				delete(explicit, o)
				matched++
				continue
			}
			v := lookup(o, name)
			if v == nil {
				continue
			}
			if !v.supported(f) {
				return KernelSet{}, fmt.Errorf("%w: %s=%s is not supported on this CPU (%s)", ErrKernelSpec, o, name, f)
			}
			explicit[o] = v
			matched++
		}
		if matched == 0 {
			return KernelSet{}, fmt.Errorf("%w: op %q has no variant %q (have: %s)", ErrKernelSpec, op, name, strings.Join(variantNames(targets), ", "))
		}
	}
	if len(explicit) == 0 {
		return KernelSet{}, nil
	}
	return KernelSet{t: resolve(explicit, f)}, nil
}

func variantNames(ops []string) []string {
	var names []string
	for _, v := range registry() {
		if slices.Contains(ops, v.op) && !slices.Contains(names, v.name) {
			names = append(names, v.name)
		}
	}
	return names
}

// Variant is the name of the variant the set runs for op ("" for an
// unknown op).
func (ks KernelSet) Variant(op string) string {
	if v := ks.table().choice[op]; v != nil {
		return v.name
	}
	return ""
}

// Config maps every op to the variant the set runs (for the report).
func (ks KernelSet) Config() map[string]string {
	m := map[string]string{}
	for op, v := range ks.table().choice {
		if v != nil {
			m[op] = v.name
		}
	}
	return m
}

// String is the full selection as a spec ParseKernels accepts, ops sorted.
func (ks KernelSet) String() string { return FormatSpec(ks.Config()) }

// FormatSpec writes an op → variant map as the spec ParseKernels reads,
// "op=variant,op=variant", ops sorted.
func FormatSpec(m map[string]string) string {
	ops := slices.Sorted(maps.Keys(m))
	var sb strings.Builder
	for i, op := range ops {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(op + "=" + m[op])
	}
	return sb.String()
}

// MatMul is MatMul (same contract and shapes) run with the set's variant
// for w's type: "ref" is MatMulRef (float64, no activation conversion;
// single-threaded and allocating, for A/B only), "go" the plain MatMul,
// and the SIMD variants the panel and float-tile kernels of
// simd_matmul.go, which keep ggml's activation conversion and exact
// integer block sums but sum the per-block float terms in another order.
func (ks KernelSet) MatMul(p *Pool, out []float32, w *Matrix, x []float32, nTok int, scratch *MatScratch) {
	var impl *matImpl
	if int(w.Type) < len(ks.table().mm) {
		impl = ks.table().mm[w.Type]
	}
	if impl == nil || impl.kind == implGo {
		MatMul(p, out, w, x, nTok, scratch)
		return
	}
	if err := w.Validate(); err != nil {
		panic("kernels: MatMul: " + err.Error())
	}
	if nTok < 0 || len(x) < nTok*w.Cols || len(out) < nTok*w.Rows {
		panic(fmt.Sprintf("kernels: MatMul: %d tokens of %d×%d need x %d and out %d, have %d and %d",
			nTok, w.Rows, w.Cols, nTok*w.Cols, nTok*w.Rows, len(x), len(out)))
	}
	if nTok == 0 || w.Rows == 0 {
		return
	}
	if impl.kind == implRef {
		MatMulRef(out, w, x, nTok)
		return
	}
	if scratch == nil {
		scratch = &MatScratch{}
	}
	matMulSIMD(impl.k, p, out, w, x, nTok, &scratch.simd)
}
