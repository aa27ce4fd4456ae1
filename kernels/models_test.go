package kernels_test

// Real-data checks: the stories260K models in ../shared/data/models, read
// with engine/gguf (an external test package, since gguf imports kernels).

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"plexbench/engine/gguf"
	"plexbench/internal/shareddata"
	"plexbench/kernels"
)

func modelFiles(t *testing.T) []string {
	t.Helper()
	dir := shareddata.Path(t, "models")
	files, _ := filepath.Glob(filepath.Join(dir, "stories260K-*.gguf"))
	if len(files) == 0 {
		t.Fatalf("no models in %s", dir)
	}
	return files
}

func openModel(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func dequantTensor(t *testing.T, f *gguf.File, ti *gguf.TensorInfo) []float32 {
	t.Helper()
	y := make([]float32, ti.Elements())
	if err := kernels.Dequantize(ti.Type, f.TensorData(ti), y); err != nil {
		t.Fatalf("%s: %v", ti.Name, err)
	}
	return y
}

// maxRelRMS is a sanity ceiling on rms(dequantized − f32)/rms(f32) per
// tensor; a wrong layout gives errors of order 1.
var maxRelRMS = map[kernels.Type]float64{
	kernels.F32: 0, kernels.F16: 1e-3, kernels.BF16: 8e-3, kernels.Q8_0: 0.01,
	kernels.Q5_0: 0.06, kernels.Q5_1: 0.06, kernels.Q4_0: 0.12, kernels.Q4_1: 0.12,
	kernels.Q6_K: 0.03, kernels.Q5_K: 0.06, kernels.Q4_K: 0.12, kernels.Q3_K: 0.25, kernels.Q2_K: 0.4,
}

// TestRealModelsDequantize dequantizes every tensor of every stories260K
// model, requires finite values, and compares each with the same tensor of
// the F32 model within the format's typical error.
func TestRealModelsDequantize(t *testing.T) {
	files := modelFiles(t)
	var refPath string
	for _, p := range files {
		if filepath.Base(p) == "stories260K-f32.gguf" {
			refPath = p
		}
	}
	if refPath == "" {
		t.Fatal("stories260K-f32.gguf missing beside the other models")
	}
	ref := openModel(t, refPath)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := openModel(t, path)
			worst := map[kernels.Type]float64{}
			defer func() { t.Logf("worst relative RMS error per type: %v", worst) }()
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if !kernels.CanDequantize(ti.Type) {
					t.Errorf("%s: type %v cannot be dequantized", ti.Name, ti.Type)
					continue
				}
				y := dequantTensor(t, f, ti)
				for j, v := range y {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s (%v): element %d is %v", ti.Name, ti.Type, j, v)
					}
				}
				rt, ok := ref.Tensor(ti.Name)
				if !ok {
					t.Errorf("%s: not in the F32 model", ti.Name)
					continue
				}
				x := dequantTensor(t, ref, rt)
				if len(x) != len(y) {
					t.Fatalf("%s: %d elements, F32 model has %d", ti.Name, len(y), len(x))
				}
				var num, den float64
				for j := range x {
					d := float64(y[j]) - float64(x[j])
					num += d * d
					den += float64(x[j]) * float64(x[j])
				}
				lim, ok := maxRelRMS[ti.Type]
				if !ok {
					lim = 0.5
				}
				rel := math.Sqrt(num / den)
				worst[ti.Type] = max(worst[ti.Type], rel)
				if rel > lim {
					t.Errorf("%s (%v): relative RMS error vs F32 %.4g > %.4g", ti.Name, ti.Type, rel, lim)
				}
			}
		})
	}
}

// actBound bounds |Σ w·(x − a)| for the activation conversion to vt.
func actBound(vt kernels.Type, w, x []float32) float64 {
	var b float64
	switch vt {
	case kernels.F16:
		for i := range w {
			b += math.Abs(float64(w[i])) * (math.Abs(float64(x[i]))*0x1p-11 + 0x1p-25)
		}
	case kernels.BF16:
		for i := range w {
			b += math.Abs(float64(w[i])*float64(x[i])) * 0x1p-8
		}
	case kernels.Q8_0, kernels.Q8_1, kernels.Q8_K:
		bs := vt.BlockSize()
		for i := 0; i < len(x); i += bs {
			var amax, sw float64
			for j := i; j < i+bs; j++ {
				amax = max(amax, math.Abs(float64(x[j])))
				sw += math.Abs(float64(w[j]))
			}
			b += sw * amax / 127 * 0.57
		}
	}
	return b
}

// TestRealModelsMatMul runs MatMul on every 2-D weight of every model and
// compares it with MatMulRef within the activation conversion error.
func TestRealModelsMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	p := kernels.NewPool(2)
	defer p.Close()
	var s kernels.MatScratch
	for _, path := range modelFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := openModel(t, path)
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if len(ti.Dims) != 2 || !kernels.CanMatMul(ti.Type) {
					continue
				}
				w := &kernels.Matrix{Type: ti.Type, Cols: int(ti.Dims[0]), Rows: int(ti.Dims[1]), Data: f.TensorData(ti)}
				if err := w.Validate(); err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				const nTok = 5
				x := make([]float32, nTok*w.Cols)
				for j := range x {
					x[j] = float32(rng.NormFloat64())
				}
				got, want := make([]float32, nTok*w.Rows), make([]float32, nTok*w.Rows)
				kernels.MatMul(p, got, w, x, nTok, &s)
				kernels.MatMulRef(want, w, x, nTok)
				row := make([]float32, w.Cols)
				for r := range w.Rows {
					kernels.DequantizeRow(w, r, row)
					for tk := range nTok {
						xt := x[tk*w.Cols : (tk+1)*w.Cols]
						var mag float64
						for j := range row {
							mag += math.Abs(float64(row[j]) * float64(xt[j]))
						}
						tol := actBound(kernels.VecDotType(w.Type), row, xt) + 1e-5*mag + 1e-6
						if d := math.Abs(float64(got[tk*w.Rows+r] - want[tk*w.Rows+r])); d > tol {
							t.Fatalf("%s (%v) row %d token %d: MatMul %v, reference %v (tol %g)", ti.Name, w.Type, r, tk, got[tk*w.Rows+r], want[tk*w.Rows+r], tol)
						}
					}
				}
			}
		})
	}
}
