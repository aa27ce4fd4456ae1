package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"plexbench/engine"
	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
	"plexbench/workbench"
)

// modelSummary is what `plexbench inspect` reports about a GGUF file.
type modelSummary struct {
	Path            string         `json:"path"`
	FileSize        int64          `json:"file_size"`
	GGUFVersion     uint32         `json:"gguf_version"`
	Architecture    string         `json:"architecture"`
	Name            string         `json:"name,omitempty"`
	Tensors         int            `json:"tensors"`
	Parameters      int64          `json:"parameters"`
	TensorBytes     int64          `json:"tensor_bytes"`
	BitsPerWeight   float64        `json:"bits_per_weight"`
	TypeHistogram   map[string]int `json:"type_histogram"`
	Layout          *engine.Layout `json:"layout,omitempty"`
	LayoutError     string         `json:"layout_error,omitempty"`
	HyperParameters map[string]any `json:"hyper_parameters"`
	Tokenizer       *tokSummary    `json:"tokenizer,omitempty"`
	TokenizerError  string         `json:"tokenizer_error,omitempty"`
}

type tokSummary struct {
	Kind      string `json:"kind"`
	Pre       string `json:"pre"`
	VocabSize int    `json:"vocab_size"`
	BOS       int32  `json:"bos"`
	EOS       int32  `json:"eos"`
	AddBOS    bool   `json:"add_bos"`
	AddEOS    bool   `json:"add_eos"`
}

func (c *cli) inspectCmd() *cobra.Command {
	cmd, fs := c.command("inspect", "MODEL.gguf [--json]", "a GGUF model's architecture, tensors and settings")
	asJSON := fs.Bool("json", false, "print JSON")
	return c.action(cmd, func(pos []string) int {
		var path string
		if len(pos) > 0 {
			path = pos[0]
		}
		if path == "" {
			cmd.Usage()
			return 2
		}
		f, err := gguf.Open(path)
		if err != nil {
			return c.fail(err)
		}
		defer f.Close()
		s := summarize(f)
		if *asJSON {
			data, _ := json.MarshalIndent(s, "", "  ")
			if err := writeJSON(c.stdout, data); err != nil {
				return c.fail(err)
			}
			return 0
		}
		printSummary(c.stdout, s)
		return 0
	})
}

func summarize(f *gguf.File) modelSummary {
	st := f.TensorStats()
	s := modelSummary{
		Path: f.Path, FileSize: f.FileSize, GGUFVersion: f.Version,
		Architecture: f.Architecture(), Tensors: st.Tensors, Parameters: st.Parameters, TensorBytes: st.Bytes,
		BitsPerWeight: st.BitsPerWeight(), TypeHistogram: st.TypeHistogram, HyperParameters: map[string]any{},
	}
	s.Name, _ = f.String("general.name")
	prefix := s.Architecture + "."
	for _, kv := range f.KVs {
		if s.Architecture != "" && strings.HasPrefix(kv.Key, prefix) {
			s.HyperParameters[strings.TrimPrefix(kv.Key, prefix)] = hyperValue(f, kv.Key)
		}
	}
	if lay, err := engine.ReadLayout(f); err != nil {
		s.LayoutError = err.Error()
	} else {
		s.Layout = &lay
	}
	if tok, err := tokenizer.FromGGUF(f); err != nil {
		s.TokenizerError = err.Error()
	} else {
		s.Tokenizer = &tokSummary{Kind: tok.Kind(), Pre: tok.Pre(), VocabSize: tok.VocabSize(),
			BOS: tok.BOS(), EOS: tok.EOS(), AddBOS: tok.AddBOS(), AddEOS: tok.AddEOS()}
	}
	return s
}

// hyperValue renders one metadata value for display: numbers, strings,
// booleans, and short arrays (long arrays are summarised by length).
func hyperValue(f *gguf.File, key string) any {
	if v, ok := f.Ints(key); ok {
		if len(v) == 1 {
			return v[0]
		}
		if len(v) <= 64 {
			return v
		}
		return fmt.Sprintf("[%d integers]", len(v))
	}
	if v, ok := f.Float(key); ok {
		return v
	}
	if v, ok := f.Bool(key); ok {
		return v
	}
	if v, ok := f.String(key); ok {
		return v
	}
	if v, ok := f.Float32s(key); ok {
		if len(v) <= 64 {
			return v
		}
		return fmt.Sprintf("[%d floats]", len(v))
	}
	if v, ok := f.Strings(key); ok {
		return fmt.Sprintf("[%d strings]", len(v))
	}
	return "?"
}

func printSummary(out io.Writer, s modelSummary) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s (%s, GGUF v%d)\n", filepath.Base(s.Path), workbench.HumanBytes(s.FileSize), s.GGUFVersion)
	if s.Name != "" {
		fmt.Fprintf(w, "name\t%s\n", s.Name)
	}
	fmt.Fprintf(w, "architecture\t%s\n", orDash(s.Architecture))
	fmt.Fprintf(w, "parameters\t%s (%d tensors)\n", humanCount(s.Parameters), s.Tensors)
	if s.Parameters > 0 {
		fmt.Fprintf(w, "bits per weight\t%.3f (%s of tensor data)\n", s.BitsPerWeight, workbench.HumanBytes(s.TensorBytes))
	}
	if l := s.Layout; l != nil {
		line := fmt.Sprintf("%d: %s", l.Layers, l.Pattern)
		if l.MTPLayers > 0 {
			line += fmt.Sprintf(" (+%d MTP, not run)", l.MTPLayers)
		}
		fmt.Fprintf(w, "layers\t%s\n", line)
		if l.Experts > 0 {
			shared := ""
			if l.SharedExpert {
				shared = " + a shared expert"
			}
			fmt.Fprintf(w, "experts\t%d, %d used per token%s\n", l.Experts, l.ExpertsUsed, shared)
		}
	} else if s.LayoutError != "" {
		fmt.Fprintf(w, "layers\tunavailable: %s\n", s.LayoutError)
	}
	if len(s.TypeHistogram) > 0 {
		var types []string
		for t, n := range s.TypeHistogram {
			types = append(types, fmt.Sprintf("%s×%d", t, n))
		}
		sort.Strings(types)
		fmt.Fprintf(w, "tensor types\t%s\n", strings.Join(types, " "))
	}
	keys := make([]string, 0, len(s.HyperParameters))
	for k := range s.HyperParameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s\t%v\n", k, s.HyperParameters[k])
	}
	if t := s.Tokenizer; t != nil {
		fmt.Fprintf(w, "tokenizer\t%s, pre %q, %d tokens\n", t.Kind, t.Pre, t.VocabSize)
		fmt.Fprintf(w, "BOS / EOS\t%d (add %v) / %d (add %v)\n", t.BOS, t.AddBOS, t.EOS, t.AddEOS)
	} else {
		fmt.Fprintf(w, "tokenizer\tunavailable: %s\n", s.TokenizerError)
	}
	w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fK", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}
