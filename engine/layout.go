package engine

// This file describes a model's block structure for `plexbench inspect`
// and the report: which mixer each trunk layer runs, compressed to its
// repeating pattern, and the experts of the MoE archs.

import (
	"fmt"
	"slices"
	"strings"

	"plexbench/engine/gguf"
)

// Layout is a model's block structure.
type Layout struct {
	Architecture string `json:"architecture"`
	Layers       int    `json:"layers"`                  // trunk blocks that run
	MTPLayers    int    `json:"mtp_layers,omitempty"`    // NextN blocks loaded over, never run
	Pattern      string `json:"layer_pattern"`           // e.g. "3×GDN + 1×attention, repeated 6×"
	Experts      int    `json:"experts,omitempty"`       // expert_count
	ExpertsUsed  int    `json:"experts_used,omitempty"`  // expert_used_count
	SharedExpert bool   `json:"shared_expert,omitempty"` // a shared expert beside the routed ones
}

// ReadLayout reads f's block structure from its metadata (the same checks
// as Load's, so a file Load refuses fails here with the same line).
func ReadLayout(f *gguf.File) (Layout, error) {
	hp, err := readHParams(f)
	if err != nil {
		return Layout{}, fmt.Errorf("engine: %s: %w", f.Path, err)
	}
	return hp.layout(f), nil
}

func (hp *hparams) layout(f *gguf.File) Layout {
	kinds := make([]string, hp.nLayer)
	for l := range kinds {
		kinds[l] = "attention"
		if !hp.attnLayer(l) {
			kinds[l] = "GDN"
		}
	}
	lay := Layout{Architecture: hp.arch, Layers: hp.nLayer, MTPLayers: hp.nLayerAll - hp.nLayer,
		Pattern: layerPattern(kinds), Experts: hp.moe.nExpert, ExpertsUsed: hp.moe.nUsed}
	if hp.moe.nExpert > 0 {
		_, lay.SharedExpert = f.Tensor("blk.0.ffn_up_shexp.weight")
	}
	return lay
}

// layerPattern compresses a sequence of layer kinds to its shortest
// period, run-length coded: "3×GDN + 1×attention, repeated 6×".
func layerPattern(kinds []string) string {
	n := len(kinds)
	period := n
	for p := 1; p < n; p++ {
		if n%p == 0 && slices.Equal(kinds[p:], kinds[:n-p]) {
			period = p
			break
		}
	}
	var runs []string
	for i := 0; i < period; {
		j := i
		for j < period && kinds[j] == kinds[i] {
			j++
		}
		runs = append(runs, fmt.Sprintf("%d×%s", j-i, kinds[i]))
		i = j
	}
	s := strings.Join(runs, " + ")
	if rep := n / period; rep > 1 {
		s += fmt.Sprintf(", repeated %d×", rep)
	}
	return s
}
