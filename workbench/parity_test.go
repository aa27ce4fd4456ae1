package workbench

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/engine/synth"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/scoring"
)

// TestRunRefusesPartnerTokenizer: the first run of an A/B (as the TUI's
// A/B starts it) is refused before it scores when its partner's tokenizer
// differs, and runs when the partner is its own model or the check is
// waived.
func TestRunRefusesPartnerTokenizer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	other := filepath.Join(dir, "placeholder.gguf")
	if err := synth.Write(other, synth.Config{Layers: 1, Types: synth.AllOf(kernels.Q8_0), Vocab: synth.PlaceholderVocab(64)}); err != nil {
		t.Fatal(err)
	}
	a := profiles.Default() // the embedded demo: stories260K on a TinyStories excerpt
	a.Ctx, a.Chunks = 64, 2
	b := a
	b.Model = other
	events := 0
	_, err := Run(context.Background(), Job{Profile: a, Partner: &b, Progress: func(scoring.Event) { events++ }})
	if !errors.Is(err, scoring.ErrTokenizerMismatch) || !strings.Contains(err.Error(), "tokenizers differ: A (the demo model, tokenizer ") ||
		!strings.Contains(err.Error(), "B (placeholder.gguf, tokenizer ") || events != 0 {
		t.Fatalf("a partner of another tokenizer: %v after %d events", err, events)
	}
	for _, j := range []Job{{Profile: a, Partner: &a}, {Profile: a, Partner: &b, AllowTokenizerMismatch: true}} {
		if out, err := Run(context.Background(), j); err != nil || out.Report.WindowsScored != 2 {
			t.Fatalf("partner %s, allowed %v: %v", j.Partner.Model, j.AllowTokenizerMismatch, err)
		}
	}
}
