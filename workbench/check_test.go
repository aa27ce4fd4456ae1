package workbench

import (
	"testing"

	"plexbench/profiles"
)

// TestCheckServed: a profile that names a server has no model file to
// check, so Check neither reads the demo model in its place nor warns of
// the demo model's trained context (128) at ctx 512; what it can check
// here, its stopping rule, it still refuses.
func TestCheckServed(t *testing.T) {
	p := profiles.Default()
	p.Server, p.Ctx, p.Chunks = "http://127.0.0.1:1", 512, 1
	c, err := Check(Job{Profile: p})
	if err != nil || len(c.Warnings) != 0 {
		t.Fatalf("served profile at ctx 512: %+v, %v; want no refusal and no warning", c, err)
	}
	p.StopWhenDecided = "mean_kld<<0.001"
	if _, err := Check(Job{Profile: p}); err == nil {
		t.Fatal("a malformed stopping rule on a served profile passed the check")
	}
}
