package engine

// This file owns what runs where under a GPU backend: the LM head and its
// pick/topk reductions (devicehead.go) and, for every architecture with
// weights of the device table's types (devicetypes.go) and a KV cache type
// of its kernels, the layer stack (devicestack.go) run on the device; what
// does not is listed in the report's cpu_fallback_ops, or, with
// StrictDevice (--strict-device-kernels), refused at Load with the first of
// those ops named.

import (
	"fmt"
	"slices"
	"strings"

	"plexbench/hip"
	"plexbench/kernels"
)

// deviceState is a model's GPU side.
type deviceState struct {
	d      *hip.Device
	strict bool
	head   *deviceHead  // nil: the head runs on the CPU
	stack  *deviceStack // nil: the layers run on the CPU
	blas   *hip.BLAS    // the vendor BLAS the F16/BF16 products take at prefill sizes; nil: none
	devOps []string     // ops that run on the device
	cpuOps []string     // ops that run on the CPU under the GPU backend
}

// newDeviceState sets m up to run on d: the ops with a device path there,
// the others listed as CPU fallbacks (refused when strict, naming the
// first reason before anything is uploaded).
func newDeviceState(m *Model, d *hip.Device, strict bool) (*deviceState, error) {
	s := &deviceState{d: d, strict: strict}
	ws := walkStack(m).mats
	why := canRunStack(m, ws)
	switch {
	case why != "":
		s.cpuOps = m.layerOps()
	case !embedsOnDevice(m):
		s.cpuOps = []string{m.embedOp()}
	}
	headOp := m.headOp()
	if !headRunsOnDevice(m) {
		s.cpuOps = append(s.cpuOps, headOp)
	}
	if strict && len(s.cpuOps) > 0 {
		first := "op " + s.cpuOps[0]
		if why != "" {
			first = why + " (the layers would run on the CPU)"
		}
		return nil, fmt.Errorf("%w: --strict-device-kernels: no device kernel in the engine yet for %s", ErrUnsupported, first)
	}
	where := fmt.Sprintf("device %s:%d (%s)", d.Kind(), d.Ordinal, d.Arch)
	if why != "" {
		ws = nil // the layers' products run on the CPU
	}
	if types := blasTypes(m, ws); len(types) > 0 {
		b, err := d.OpenBLAS()
		if err != nil {
			return nil, fmt.Errorf("%s: vendor BLAS: %w", where, err)
		}
		if s.blas = b; b != nil {
			for _, t := range types {
				s.devOps = append(s.devOps, blasOp(t, b))
			}
		}
	}
	if why == "" {
		st, err := newDeviceStack(m, d, s.blas)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%s: the layers: %w", where, err)
		}
		s.stack, s.devOps = st, slices.Concat(st.ops, s.devOps)
		if embedsOnDevice(m) {
			s.devOps = append(s.devOps, m.embedOp())
		}
	}
	if headRunsOnDevice(m) {
		h, err := newDeviceHead(d, m.output, s.tiedWeights(m), s.blas)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%s: the LM head: %w", where, err)
		}
		s.head = h
		s.devOps = append(s.devOps, headOp, "pick", "topk")
	}
	return s, nil
}

// blasTypes are the F16/BF16 weight types of the products the device runs
// for m (the layers' ws, the head's), which a vendor BLAS may take; none:
// no BLAS is opened.
func blasTypes(m *Model, ws []*kernels.Matrix) []kernels.Type {
	if headRunsOnDevice(m) {
		ws = append(ws, m.output)
	}
	var types []kernels.Type
	for _, w := range ws {
		if blasType(w.Type) && !slices.Contains(types, w.Type) {
			types = append(types, w.Type)
		}
	}
	slices.Sort(types)
	return types
}

// headRunsOnDevice reports whether devicehead.go has m's LM head: a
// product for its type and no output bias.
func headRunsOnDevice(m *Model) bool {
	return m.outBias == nil && onDevice(m.output.Type)
}

// headOp names the LM head's op.
func (m *Model) headOp() string {
	if m.outBias != nil {
		return "head (output bias)"
	}
	return "head (" + kernels.MatMulOp(m.output.Type) + ")"
}

// layerOps are the ops the layer stack runs, by name: the kernel
// registry's (attention, rmsnorm, rope, swiglu, each matmul type, the
// Gated DeltaNet recurrence of the hybrids) and the token embedding.
func (m *Model) layerOps() []string {
	ops := []string{m.embedOp()}
	for op := range m.kernelConfig() {
		if op != kernels.OpHead && (op != kernels.OpGDN || m.rs != nil) {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	return ops
}

// embedOp names the token embedding's op by its table's type.
func (m *Model) embedOp() string { return "embed (" + strings.ToLower(m.tokEmbd.Type.String()) + ")" }

// headFits reports whether HeadReduce of reqs runs on the device: a head
// there, and every request's top-k within the device kernel's.
func (s *deviceState) headFits(reqs []RowRequest) bool {
	if s == nil || s.head == nil {
		return false
	}
	for _, q := range reqs {
		if q.TopK > deviceTopK {
			return false
		}
	}
	return true
}

// tiedWeights is the device copy of token_embd when the head reads the
// same matrix (tied embeddings) and the stack uploaded it; else a zero
// Buffer, and the head uploads its own.
func (s *deviceState) tiedWeights(m *Model) hip.Buffer {
	if s.stack == nil || m.output != m.tokEmbd {
		return hip.Buffer{}
	}
	return s.stack.embd.b
}

// config says in c what runs where.
func (s *deviceState) config(c *Config) {
	if s == nil {
		return
	}
	c.Backend, c.DeviceArch, c.CPUFallbackAllowed = s.d.Kind().String(), s.d.Arch, !s.strict
	c.DeviceOps, c.CPUFallbackOps = s.devOps, s.cpuOps
	if s.blas != nil {
		c.DeviceBLAS = s.blas.String()
	}
	c.DeviceTraffic = s.stack.trafficReport()
}

// close releases the device's buffers and modules.
func (s *deviceState) close() {
	if s == nil {
		return
	}
	if s.head != nil {
		s.head.close()
		s.head = nil
	}
	if s.stack != nil {
		s.stack.close()
		s.stack = nil
	}
	if s.blas != nil {
		s.blas.Close()
		s.blas = nil
	}
}
