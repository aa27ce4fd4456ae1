package gguf

// TensorStats sums a file's tensors: what `inspect` shows and a record
// keeps of a model's size in bits.
type TensorStats struct {
	Tensors       int
	Parameters    int64          // elements over every tensor
	Bytes         int64          // their stored bytes
	TypeHistogram map[string]int // tensors per type name
}

// BitsPerWeight is the stored bits over the elements (0 for none).
func (s TensorStats) BitsPerWeight() float64 {
	if s.Parameters == 0 {
		return 0
	}
	return float64(s.Bytes) * 8 / float64(s.Parameters)
}

// TensorStats sums f's tensors.
func (f *File) TensorStats() TensorStats {
	s := TensorStats{Tensors: len(f.Tensors), TypeHistogram: map[string]int{}}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.Parameters += t.Elements()
		s.Bytes += t.Size
		s.TypeHistogram[t.Type.String()]++
	}
	return s
}
