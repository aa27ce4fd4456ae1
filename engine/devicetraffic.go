package engine

// This file owns the weight-traffic count of a device stack: the block
// matrices marked as weights on the device (an emulated one counting loads
// under PLEXBENCH_EMU_TRAFFIC=1, hip/emu), the passes counted, and the
// report's device_traffic from both. Elsewhere marking does nothing and the
// report has no such field.

import "sync/atomic"

// DeviceTraffic is how often the device's passes read the weights: R/(W·P)
// is the number of times a weight byte was loaded per pass (1 when every
// product reads its weights once per pass; the ubatch size when a
// product reads a weight row once per token).
type DeviceTraffic struct {
	// WeightBytes is W: the layer stack's matrices on the device (the
	// products' weights; not the token embedding, whose rows are gathered,
	// nor an LM head of its own).
	WeightBytes uint64 `json:"weight_bytes"`
	// WeightReadBytes is R: what every launch so far loaded from them.
	WeightReadBytes uint64 `json:"weight_read_bytes"`
	// Passes is P: the passes (ubatches) the stack ran.
	Passes int64 `json:"passes"`
}

// ReadsPerPass is R/(W·P); 0 before a pass.
func (t DeviceTraffic) ReadsPerPass() float64 {
	if t.WeightBytes == 0 || t.Passes == 0 {
		return 0
	}
	return float64(t.WeightReadBytes) / (float64(t.WeightBytes) * float64(t.Passes))
}

// deviceTraffic is a device stack's side of the count.
type deviceTraffic struct {
	tag    uint64 // the stack's weights' tag on the device
	passes atomic.Int64
}

// markWeights marks m's buffer as one of the stack's weights.
func (st *deviceStack) markWeights(m devMatrix) error {
	if st.traffic.tag == 0 {
		st.traffic.tag = st.d.NewWeightTag()
	}
	return st.d.MarkWeights(m.b, st.traffic.tag)
}

// trafficReport is the stack's DeviceTraffic, nil unless the device counts.
func (st *deviceStack) trafficReport() *DeviceTraffic {
	if st == nil || st.traffic.tag == 0 {
		return nil
	}
	w, r, ok := st.d.WeightTraffic(st.traffic.tag)
	if !ok {
		return nil
	}
	return &DeviceTraffic{WeightBytes: w, WeightReadBytes: r, Passes: st.traffic.passes.Load()}
}
