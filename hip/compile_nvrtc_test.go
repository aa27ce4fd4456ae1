package hip

import (
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"plexbench/kernels/gpu"
)

// cubinTargets are the CUDA targets every kernel is compiled for: A100
// (sm_80) and H100/H200 (sm_90).
var cubinTargets = []string{"sm_80", "sm_90"}

// spillBudget is the most bytes of spill stores, spill loads or stack
// frame a kernel may have on any target: NVRTC 11.8 gives attn_fp_f16 and
// gdn_delta small spills on sm_80 and moe_route a 128-byte local array.
const spillBudget = 256

// ptxasFunc is what ptxas -v says of one entry function.
type ptxasFunc struct {
	regs, smem, stack, spillStores, spillLoads int
}

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([A-Za-z0-9_]+)' for '(sm_[0-9a]+)'`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers(?:, (\d+) bytes smem)?`)
)

// parsePtxas reads ptxas's verbose log: per entry function, its
// registers, static shared memory, stack frame and spills.
func parsePtxas(log string) map[string]ptxasFunc {
	out := map[string]ptxasFunc{}
	cur := ""
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	for _, l := range strings.Split(log, "\n") {
		if m := ptxasEntry.FindStringSubmatch(l); m != nil {
			cur = m[1]
			out[cur] = ptxasFunc{}
			continue
		}
		if cur == "" {
			continue
		}
		f := out[cur]
		if m := ptxasFrame.FindStringSubmatch(l); m != nil {
			f.stack, f.spillStores, f.spillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		}
		if m := ptxasUsed.FindStringSubmatch(l); m != nil {
			f.regs, f.smem = atoi(m[1]), atoi(m[2])
		}
		out[cur] = f
	}
	return out
}

// TestParsePtxas: the verbose log NVRTC 11.8 gives, read per function.
func TestParsePtxas(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'rms_norm_f32' for 'sm_80'
ptxas info    : Function properties for rms_norm_f32
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, 64 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'attn_fp_f16' for 'sm_80'
ptxas info    : Function properties for attn_fp_f16
ptxas         .     24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 87 registers, 1024 bytes smem, 412 bytes cmem[0]`
	got := parsePtxas(log)
	want := map[string]ptxasFunc{"rms_norm_f32": {32, 64, 0, 0, 0}, "attn_fp_f16": {87, 1024, 24, 20, 16}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestCompileKernelsNVRTC compiles every device source with NVIDIA's NVRTC
// (no GPU needed) to a cubin for sm_80 and sm_90 with ptxas's verbose
// report, and logs per kernel and target its registers, shared memory,
// stack and spills and the cubin's size. It fails on a compile error, an
// entry missing from the cubin or the report, spills or stack beyond
// spillBudget, or registers × the kernel's __launch_bounds__ (as the
// emulated runtime reads it, when one is built) beyond the 65,536 of a
// block. Without NVRTC it skips, except under CI when .ci/run installed
// it (PLEXBENCH_EXPECT_NVRTC=1: Debian 12 non-free's libnvrtc11.2).
func TestCompileKernelsNVRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: the NVRTC compile check takes ~2 minutes")
	}
	if os.Getenv("PLEXBENCH_NVRTC_CHECKED") == "1" {
		t.Skip("passed in this CI run's nvrtc stage (.ci/run)")
	}
	c, err := OpenCompiler(CUDA, Env{})
	if err != nil {
		if os.Getenv("CI") != "" && os.Getenv("PLEXBENCH_EXPECT_NVRTC") == "1" {
			t.Fatalf("NVRTC not loadable, but .ci/run installed it (libnvrtc11.2 libnvrtc-builtins11.8): %v", err)
		}
		t.Skipf("NVRTC not found (Debian 12: apt-get install libnvrtc11.2 libnvrtc-builtins11.8 from non-free): %v", err)
	}
	defer c.Close()
	if strings.Contains(c.ident, "pbemu") {
		t.Skipf("%s is the emulated NVRTC", c.Path)
	}
	t.Logf("compiler: %s at %s", c.Version, c.Path)
	bounds := launchBounds(t)
	for _, arch := range cubinTargets {
		if err := CheckArch(CUDA, arch, c.Version); err != nil {
			t.Errorf("%s: %v", arch, err)
			continue
		}
		for _, k := range gpu.Manifest() {
			t.Run(k.File+"/"+arch, func(t *testing.T) {
				src, err := gpu.Source(k.File)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				code, log, err := c.Compile(Program{Name: k.File, Source: src, Options: []string{"-DWARP=32", "--ptxas-options=-v"}}, arch)
				if err != nil {
					t.Fatalf("%s for %s: %v", k.File, arch, err)
				}
				if missing := missingSymbols(cubinAsELF(code), k.Entries); missing != "" {
					t.Fatal(missing)
				}
				fns := parsePtxas(log)
				t.Logf("CUBIN %s %s: %d bytes, %.1fs", arch, k.File, len(code), time.Since(start).Seconds())
				for _, e := range k.Entries {
					f, ok := fns[e]
					if !ok {
						t.Errorf("%s: no ptxas report for %s in %q", k.File, e, firstLines(log, 3))
						continue
					}
					bound := bounds[e]
					t.Logf("CUBIN %s %-16s regs %3d  smem %5d  stack %4d  spill st %4d ld %4d  launch bound %d",
						arch, e, f.regs, f.smem, f.stack, f.spillStores, f.spillLoads, bound)
					if f.stack > spillBudget || f.spillStores > spillBudget || f.spillLoads > spillBudget {
						t.Errorf("%s on %s: stack %d, spills %d/%d bytes: over the %d-byte budget", e, arch, f.stack, f.spillStores,
							f.spillLoads, spillBudget)
					}
					if bound > 0 && f.regs*bound > 65536 {
						t.Errorf("%s on %s: %d registers × __launch_bounds__(%d) > 65536", e, arch, f.regs, bound)
					}
				}
			})
		}
	}
}

// launchBounds is every kernel's __launch_bounds__ as the runtime of
// boundsDevice reads them (MAX_THREADS_PER_BLOCK below 1024; absent for a
// kernel without one), or none when that device cannot be opened.
func launchBounds(t *testing.T) map[string]int {
	out := map[string]int{}
	var td *testDevice
	ok := t.Run("launch-bounds", func(t *testing.T) { td = boundsDevice(t) })
	if !ok || td == nil {
		return out
	}
	for _, k := range gpu.Manifest() {
		src, err := gpu.Source(k.File)
		if err != nil {
			t.Fatal(err)
		}
		m, err := td.d.Compile(Program{Name: k.File, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range k.Entries {
			f, err := m.Function(e)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok, _ := f.Attribute(funcMaxThreads); ok && v < 1024 {
				out[e] = v
			}
		}
		m.Unload()
	}
	return out
}

// cubinAsELF is a copy of a cubin that debug/elf reads: NVIDIA keeps the
// CUDA version in e_version, where ELF says 1.
func cubinAsELF(code []byte) []byte {
	c := slices.Clone(code)
	if len(c) >= 24 {
		binary.LittleEndian.PutUint32(c[20:], 1)
	}
	return c
}
