package hip

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"plexbench/kernels/gpu"
)

// compileTargets are the AMD targets Debian 12's hiprtc (ROCm 5.2) knows,
// one of each wave size (../shared/spec/gpu-runtime.md §7).
var compileTargets = []struct {
	arch string
	warp int
}{{"gfx1030", 32}, {"gfx90a", 64}}

const childEnv = "PLEXBENCH_COMPILE_CHILD" // "file|arch|warp[|out[|option]]" for the child process (out: where the code object goes)

// TestCompileKernelsHIPRTC compiles every device source with hiprtc for
// gfx1030 (wave32) and gfx90a (wave64), no GPU needed, each compile in a
// child process (a vendor compiler that aborts must not take the test
// binary with it), and checks that each code object is an ELF defining
// the manifest's entry points. Without hiprtc it skips, except under CI
// when .ci/run installed it (PLEXBENCH_EXPECT_HIPRTC=1).
func TestCompileKernelsHIPRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: the hiprtc compile check takes ~1 minute")
	}
	c, err := OpenCompiler(HIP, Env{})
	if err != nil {
		if os.Getenv("CI") != "" && os.Getenv("PLEXBENCH_EXPECT_HIPRTC") == "1" {
			t.Fatalf("hiprtc not loadable, but .ci/run installed it (libamdhip64-5 libhiprtc-builtins5): %v", err)
		}
		t.Skipf("hiprtc not found (apt-get install libamdhip64-5 libhiprtc-builtins5 to run this check): %v", err)
	}
	t.Logf("compiler: %s at %s", c.Version, c.Path)
	c.Close()
	for _, tg := range compileTargets {
		for _, k := range gpu.Manifest() {
			t.Run(k.File+"/"+tg.arch, func(t *testing.T) {
				t.Parallel() // each compile is a child process of its own
				start := time.Now()
				out, err := runChild(t, fmt.Sprintf("%s|%s|%d", k.File, tg.arch, tg.warp))
				if err != nil {
					t.Fatalf("%s for %s: child failed (%v): %s", k.File, tg.arch, err, out)
				}
				t.Logf("%s for %s: %s (%.1fs)", k.File, tg.arch, strings.TrimSpace(out), time.Since(start).Seconds())
			})
		}
	}
	// A source with an error is ErrCompile with the log's first lines.
	out, err := runChild(t, "bad.cu|gfx1030|32")
	if err == nil || !strings.Contains(out, "kernel compile failed") || !strings.Contains(out, "undeclared") {
		t.Errorf("broken source: err %v, output %q", err, out)
	}
	// The ROCm 5 compiler cannot target RDNA3/4: refused before compiling.
	for _, arch := range []string{"gfx1100", "gfx1201"} {
		if err := CheckArch(HIP, arch, "hiprtc 9.0 (HIP runtime 50221153)"); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("%s: %v", arch, err)
		}
	}
}

func runChild(t *testing.T, spec string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompileChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return childResult(buf.String()), err
}

// childResult is the child's RESULT line, or all it wrote.
func childResult(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if r, ok := strings.CutPrefix(l, "RESULT "); ok {
			return r
		}
	}
	return s
}

// TestCompileChild is the child's side: compile one file for one target.
func TestCompileChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("runs as TestCompileKernelsHIPRTC's child process")
	}
	parts := strings.Split(spec, "|")
	file, arch, warp := parts[0], parts[1], parts[2]
	c, err := OpenCompiler(HIP, Env{})
	if err != nil {
		fmt.Println("RESULT", err)
		t.Fatal(err)
	}
	defer c.Close()
	var src string
	var entries []string
	if file == "bad.cu" {
		src = gpu.Dialect() + "PB_KERNEL void bad(float* y) { y[0] = undeclared_thing; }\n"
	} else {
		if src, err = gpu.Source(file); err != nil {
			t.Fatal(err)
		}
		for _, k := range gpu.Manifest() {
			if k.File == file {
				entries = k.Entries
			}
		}
	}
	opts := []string{"-DWARP=" + warp}
	if len(parts) > 4 {
		opts = append(opts, parts[4])
	}
	code, log, err := c.Compile(Program{Name: file, Source: src, Options: opts}, arch)
	if err != nil {
		fmt.Println("RESULT", err)
		t.Fatal(err)
	}
	if missing := missingSymbols(code, entries); missing != "" {
		fmt.Println("RESULT", missing)
		t.Fatal(missing)
	}
	if len(parts) > 3 {
		if err := os.WriteFile(parts[3], code, 0o644); err != nil {
			fmt.Println("RESULT", err)
			t.Fatal(err)
		}
	}
	warn := ""
	if log != "" {
		warn = "; log: " + firstLines(log, 2)
	}
	fmt.Printf("RESULT ok, %d-byte code object, entries %s%s\n", len(code), strings.Join(entries, " "), warn)
}

// missingSymbols checks that code is an ELF with a symbol per entry.
func missingSymbols(code []byte, entries []string) string {
	f, err := elf.NewFile(bytes.NewReader(code))
	if err != nil {
		return "code object is not an ELF: " + err.Error()
	}
	syms, err := f.Symbols()
	if err != nil {
		syms, _ = f.DynamicSymbols()
	}
	have := map[string]bool{}
	for _, s := range syms {
		have[s.Name] = true
	}
	var miss []string
	for _, e := range entries {
		if !have[e] {
			miss = append(miss, e)
		}
	}
	if len(miss) > 0 {
		return "entries missing from the code object: " + strings.Join(miss, " ")
	}
	return ""
}
