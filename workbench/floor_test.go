package workbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"plexbench/profiles"
)

// TestFloorRefusesSmallDisk: a disk too small for the full-vocabulary
// base is refused before it is written, naming the size and the way out.
func TestFloorRefusesSmallDisk(t *testing.T) {
	t.Parallel()
	p := profiles.Default()
	p.Ctx, p.Chunks = 64, 4
	dir := t.TempDir()
	_, err := Floor(context.Background(), FloorJob{Profile: p, TopBase: filepath.Join(dir, "top.kld"), FullBase: filepath.Join(dir, "full.kld"),
		diskFree: func(string) int64 { return 4096 }})
	if err == nil || !strings.Contains(err.Error(), "--perplexity-chunks") || !strings.Contains(err.Error(), "4.0 KiB free") {
		t.Fatalf("floor on a 4 KiB disk: %v", err)
	}
}
