package kernels

// traits are the per-type kernels. Each format file registers its own in
// init; the table is written only during package initialisation.
type traits struct {
	// dequant expands whole blocks of src into dst (len(dst) is a multiple of the block size).
	dequant func(src []byte, dst []float32)
	// quantize packs dst from src (len(src) a multiple of the block size); nil if unsupported.
	quantize func(src []float32, dst []byte)
	// vecDotType is the type activations are converted to before vecDot (ggml's vec_dot_type).
	vecDotType Type
	// vecDot returns Σ w·a over n elements, w in this type, a already in vecDotType.
	vecDot func(n int, w, a []byte) float32
}

var typeTraits = map[Type]*traits{}

func register(t Type, tr traits) { typeTraits[t] = &tr }
