package engine

// This file owns what runs where under a GPU backend: the LM head and its
// pick/topk reductions (devicehead.go) and, for the dense architectures
// with F32/F16/Q8_0 weights and an f32/f16 KV cache, the layer stack
// (devicestack.go) run on the device; what does not is listed in the
// report's cpu_fallback_ops, or, with StrictDevice (--no-cpu-fallback),
// refused at Load with the first of those ops named.

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
	devOps []string     // ops that run on the device
	cpuOps []string     // ops that run on the CPU under the GPU backend
}

// newDeviceState sets m up to run on d: the ops with a device path there,
// the others listed as CPU fallbacks (refused when strict).
func newDeviceState(m *Model, d *hip.Device, strict bool) (*deviceState, error) {
	s := &deviceState{d: d, strict: strict}
	why := canRunStack(m)
	if why == "" {
		s.cpuOps = []string{"embed (" + strings.ToLower(m.tokEmbd.Type.String()) + ")", "rmsnorm (output norm)"}
	} else {
		s.cpuOps = m.layerOps()
	}
	if strict && len(s.cpuOps) > 0 {
		reason := ""
		if why != "" {
			reason = ", as every layer op with " + why
		}
		return nil, fmt.Errorf("%w: --no-cpu-fallback: op %s has no device kernel in the engine yet%s", ErrUnsupported, s.cpuOps[0], reason)
	}
	if why == "" {
		st, err := newDeviceStack(m, d)
		if err != nil {
			return nil, fmt.Errorf("device %s:%d (%s): the layers: %w", d.Kind(), d.Ordinal, d.Arch, err)
		}
		s.stack, s.devOps = st, deviceStackOps
	}
	switch {
	case m.outBias != nil:
		s.cpuOps = append(s.cpuOps, "head (output bias)")
	case !slices.Contains(deviceHeadTypes, m.output.Type):
		s.cpuOps = append(s.cpuOps, "head ("+kernels.MatMulOp(m.output.Type)+")")
	default:
		h, err := newDeviceHead(d, m.output)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("device %s:%d (%s): the LM head: %w", d.Kind(), d.Ordinal, d.Arch, err)
		}
		s.head = h
		s.devOps = append(s.devOps, "head ("+kernels.MatMulOp(m.output.Type)+")", "pick", "topk")
	}
	return s, nil
}

// layerOps are the ops the layer stack runs, by name: the kernel
// registry's (attention, rmsnorm, rope, swiglu, each matmul type, the
// Gated DeltaNet recurrence of the hybrids) and the token embedding.
func (m *Model) layerOps() []string {
	ops := []string{"embed (" + strings.ToLower(m.tokEmbd.Type.String()) + ")"}
	for op := range m.kernelConfig() {
		if op != kernels.OpHead && (op != kernels.OpGDN || m.rs != nil) {
			ops = append(ops, op)
		}
	}
	slices.Sort(ops)
	return ops
}

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

// config says in c what runs where.
func (s *deviceState) config(c *Config) {
	if s == nil {
		return
	}
	c.Backend, c.DeviceArch, c.CPUFallbackAllowed = s.d.Kind().String(), s.d.Arch, !s.strict
	c.DeviceOps, c.CPUFallbackOps = s.devOps, s.cpuOps
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
}
