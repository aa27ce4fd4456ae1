package engine

import (
	"errors"
	"strings"
	"testing"

	"plexbench/internal/shareddata"
	"plexbench/kernels"
)

// TestCheckAsLoad: Check reads the trained context and head size from the
// header, and refuses what Load refuses (a q8_0 KV cache on heads of 8, bad
// FlashPrefill parameters or batch size) with Load's own error, before any weight is read.
func TestCheckAsLoad(t *testing.T) {
	t.Parallel()
	path := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	c, err := Check(path, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Architecture != "llama" || c.CtxTrain != 128 || c.HeadDim != 8 {
		t.Fatalf("Check %+v: want llama, n_ctx_train 128, head dim 8 (stories260K)", c)
	}
	for _, bad := range []Options{
		{Threads: 1, KVType: kernels.Q8_0},
		{Threads: 1, FlashPrefill: &kernels.FlashPrefill{BlockSize: 3}},
		{Threads: 1, BatchSize: -1},
	} {
		_, cerr := Check(path, bad)
		m, lerr := Load(path, bad)
		if lerr == nil {
			m.Close()
		}
		if cerr == nil || lerr == nil || cerr.Error() != lerr.Error() {
			t.Fatalf("options %+v: Check says %v, Load %v: want the same refusal", bad, cerr, lerr)
		}
	}
	_, err = Check(path, Options{Threads: 1, KVType: kernels.Q8_0})
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "multiple of 32, have 8") {
		t.Fatalf("q8_0 KV cache on heads of 8: %v", err)
	}
}
