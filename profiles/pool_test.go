package profiles

import (
	"github.com/spf13/pflag"
	"testing"
)

// TestPoolFlag: --pool hip:1 is --backend hip --device 1; a bare backend
// clears the device; the profile's pair comes back as one value.
func TestPoolFlag(t *testing.T) {
	for _, c := range []struct{ arg, backend, device string }{
		{"hip:1", "hip", "1"}, {"CUDA:0", "cuda", "0"}, {"cpu", "cpu", ""},
	} {
		var scratch Profile
		fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
		scratch.BindFlags(fs)
		if err := fs.Parse([]string{"--pool", c.arg}); err != nil {
			t.Fatal(err)
		}
		base := Default()
		base.Device = "3"
		got, err := base.Override(fs)
		if err != nil {
			t.Fatal(err)
		}
		if got.Backend != c.backend || got.Device != c.device {
			t.Errorf("--pool %s: backend %q device %q", c.arg, got.Backend, got.Device)
		}
	}
	p := Default()
	p.Backend, p.Device = "hip", "0"
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
	var scratch Profile
	scratch.BindFlags(fs)
	fs.Parse(nil)
	if err := p.ApplyTo(fs); err != nil {
		t.Fatal(err)
	}
	if v := fs.Lookup("pool").Value.String(); v != "hip:0" {
		t.Errorf("pool after ApplyTo: %q", v)
	}
	for _, bad := range []string{"-1", "x", "0x1"} {
		p.Device = bad
		if p.Validate() == nil {
			t.Errorf("device %q accepted", bad)
		}
	}
}
