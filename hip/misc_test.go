package hip

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestArgsPacking: each parameter's pointer reads back its value at its
// C size; slots are 8-byte aligned; a reset Args packs anew.
func TestArgsPacking(t *testing.T) {
	var a Args
	buf := Buffer{ptr: 0x7f0000001000, n: 64}
	tm := make([]byte, 128)
	for i := range tm {
		tm[i] = byte(i)
	}
	for round := range 2 {
		a.Reset()
		a.Ptr(buf, 16).I32(-7).F32(1.5).U32(0xdeadbeef).U64(1 << 40).Bytes(tm).I32(int32(round))
		if a.Len() != 7 {
			t.Fatalf("len %d", a.Len())
		}
		var pin runtime.Pinner
		p := a.params(&pin)
		ptrs := unsafe.Slice((*unsafe.Pointer)(p), a.Len())
		for i, q := range ptrs {
			if uintptr(q)%8 != 0 {
				t.Errorf("param %d at %p: not 8-byte aligned", i, q)
			}
		}
		if got := *(*uint64)(ptrs[0]); got != 0x7f0000001010 {
			t.Errorf("ptr: %#x", got)
		}
		if got := *(*int32)(ptrs[1]); got != -7 {
			t.Errorf("i32: %d", got)
		}
		if got := *(*float32)(ptrs[2]); got != 1.5 {
			t.Errorf("f32: %g", got)
		}
		if got := *(*uint32)(ptrs[3]); got != 0xdeadbeef {
			t.Errorf("u32: %#x", got)
		}
		if got := *(*uint64)(ptrs[4]); got != 1<<40 {
			t.Errorf("u64: %#x", got)
		}
		if got := unsafe.Slice((*byte)(ptrs[5]), 128); string(got) != string(tm) {
			t.Errorf("bytes: %v", got[:8])
		}
		if got := *(*int32)(ptrs[6]); got != int32(round) {
			t.Errorf("last: %d", got)
		}
		// A 4-byte value's upper half is zero, so a pointer read as 8 bytes
		// never sees stale bits.
		if got := *(*uint64)(ptrs[1]); got != uint64(uint32(0xfffffff9)) {
			t.Errorf("i32 slot %#x", got)
		}
		pin.Unpin()
	}
	var empty Args
	var pin runtime.Pinner
	if empty.params(&pin) != nil {
		t.Error("no params: want nil")
	}
	if math.Float32frombits(uint32(a.slab[2])) != 1.5 {
		t.Error("slab")
	}
}

func TestCacheKey(t *testing.T) {
	base := CacheKey{Source: "k", Options: []string{"-DWARP=32"}, Target: "gfx1030", Compiler: "hiprtc 9.0 (HIP runtime 50221153) /lib 1 2"}
	h := base.Hash()
	if len(h) != 64 || h != base.Hash() {
		t.Fatalf("hash %q not stable", h)
	}
	variants := map[string]CacheKey{}
	k := base
	k.Source = "k "
	variants["source"] = k
	k = base
	k.Options = []string{"-DWARP=64"}
	variants["option value"] = k
	k = base
	k.Options = []string{"-DWARP=32", ""}
	variants["option count"] = k
	k = base
	k.Target = "gfx1030:xnack-"
	variants["target features"] = k
	k = base
	k.Compiler = "hiprtc 9.0 (HIP runtime 50221153) /lib 1 3"
	variants["compiler mtime"] = k
	// Fields that run together must not collide.
	k = base
	k.Source, k.Options = "k-DWARP=32", nil
	variants["run-together"] = k
	for name, v := range variants {
		if v.Hash() == h {
			t.Errorf("%s: same hash", name)
		}
	}
}

func TestCacheStore(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "kernels")}
	k := CacheKey{Source: "s", Target: "sm_90", Compiler: "nvrtc 13.0"}
	if _, ok, err := c.Get(k); ok || err != nil {
		t.Fatalf("empty cache: ok %v err %v", ok, err)
	}
	if err := c.Put(k, []byte("\x7fELF code")); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(k)
	if !ok || err != nil || string(got) != "\x7fELF code" {
		t.Fatalf("get: %q %v %v", got, ok, err)
	}
	ents, _ := os.ReadDir(c.Dir)
	if len(ents) != 1 || strings.HasPrefix(ents[0].Name(), ".tmp") {
		t.Errorf("cache dir holds %v: want one entry, no temporaries", ents)
	}
	c.Remove(k)
	if _, ok, _ := c.Get(k); ok {
		t.Error("removed entry still there")
	}
	var none Cache
	if err := none.Put(k, []byte("x")); err != nil {
		t.Error(err)
	}
	if _, ok, _ := none.Get(k); ok {
		t.Error("the zero Cache stored something")
	}
}

func TestGfxName(t *testing.T) {
	for v, want := range map[int]string{120001: "gfx1201", 90010: "gfx90a", 100300: "gfx1030", 90400: "gfx940", 110000: "gfx1100", 0: ""} {
		if got := gfxName(v); got != want {
			t.Errorf("%d: %q want %q", v, got, want)
		}
	}
	dir := t.TempDir()
	for node, v := range map[string]string{"0": "0", "1": "120001"} {
		os.MkdirAll(filepath.Join(dir, node), 0o755)
		os.WriteFile(filepath.Join(dir, node, "properties"), []byte("cpu_cores_count 0\ngfx_target_version "+v+"\n"), 0o644)
	}
	if got := KFDArchs(dir); len(got) != 1 || got[0] != "gfx1201" {
		t.Errorf("KFDArchs: %v", got)
	}
}

func TestCheckArch(t *testing.T) {
	for _, c := range []struct {
		kind     Kind
		arch, cv string
		ok       bool
	}{
		{CUDA, "sm_90", "nvrtc 13.0", true},
		{CUDA, "sm_90a", "nvrtc 13.0", true},
		{CUDA, "sm_61", "nvrtc 12.4", false},
		{CUDA, "gfx90a", "nvrtc 12.4", false},
		{HIP, "gfx90a", "hiprtc 9.0 (HIP runtime 50221153)", true},
		{HIP, "gfx1030", "hiprtc 9.0 (HIP runtime 50221153)", true},
		{HIP, "gfx1201", "hiprtc 9.0 (HIP runtime 50221153)", false},
		{HIP, "gfx1201", "hiprtc 9.0 (HIP runtime 60443483)", true},
		{HIP, "gfx1201", "hiprtc 9.0 (HIP runtime 60242134)", false},
		{HIP, "gfx1100", "hiprtc 9.0 (HIP runtime 60242134)", true},
		{HIP, "gfx1100", "hiprtc 9.0 (HIP runtime 50422804)", false},
		{HIP, "sm_90", "hiprtc", false},
		// NVRTC by version: 13 dropped sm_70/72; 11.8 knows sm_90 but not sm_90a or Blackwell.
		{CUDA, "sm_70", "nvrtc 12.9", true},
		{CUDA, "sm_70", "nvrtc 13.0", false},
		{CUDA, "sm_72", "nvrtc 13.1", false},
		{CUDA, "sm_75", "nvrtc 13.0", true},
		{CUDA, "sm_80", "nvrtc 11.8", true},
		{CUDA, "sm_90", "nvrtc 11.8", true},
		{CUDA, "sm_90", "nvrtc 11.7", false},
		{CUDA, "sm_90a", "nvrtc 11.8", false},
		{CUDA, "sm_90a", "nvrtc 12.0", true},
		{CUDA, "sm_120", "nvrtc 12.4", false},
		{CUDA, "sm_120", "nvrtc 12.8", true},
		{CUDA, "sm_86", "nvrtc", true}, // no version: not refused
		// hiprtc by version: Debian's 5.2 (HIP runtime 50221153) aborts on MI300/MI350.
		{HIP, "gfx942", "hiprtc 9.0 (HIP runtime 50221153)", false},
		{HIP, "gfx940", "hiprtc 9.0 (HIP runtime 50221153)", false},
		{HIP, "gfx942", "hiprtc 9.0 (HIP runtime 60032830)", true},
		{HIP, "gfx950", "hiprtc 9.0 (HIP runtime 60443483)", false},
		{HIP, "gfx950", "hiprtc 7.0 (HIP runtime 70051831)", true},
		{HIP, "gfx908", "hiprtc 9.0 (HIP runtime 50221153)", true},
		{HIP, "gfx", "hiprtc", false},
	} {
		err := CheckArch(c.kind, c.arch, c.cv)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrUnsupportedArch)) {
			t.Errorf("%s %s (%s): %v", c.kind, c.arch, c.cv, err)
		}
	}
}

func TestErrorLine(t *testing.T) {
	e := &Error{Kind: HIP, Op: "hipInit", Code: 101, Name: "hipErrorInvalidDevice", Err: ErrNoDevice}
	if got, want := e.Error(), "hip: hipInit: hipErrorInvalidDevice (101) [no device]"; got != want {
		t.Errorf("%q want %q", got, want)
	}
	if !errors.Is(e, ErrNoDevice) || errors.Is(e, ErrNoLibrary) {
		t.Error("errors.Is")
	}
}
