//go:build !gpu

package hip

// emu_test.go: the device tests' helpers on the CPU emulation of
// testdata/emu.h: each kernel file is built with g++ into a shared object
// (skipped without g++), its kernels are called through wrappers that
// unpack the same parameter array cuLaunchKernel takes, and buffers are C
// memory. It checks the kernels' logic against their CPU twins without a
// GPU; it says nothing about nvrtc's or hiprtc's code.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"plexbench/kernels/gpu"
)

// emuWarp is the emulated warp: 32, or 64 (AMD CDNA's wave64) with
// PLEXBENCH_EMU_WARP=64.
var emuWarp = map[bool]int{false: 32, true: 64}[os.Getenv("PLEXBENCH_EMU_WARP") == "64"]

// emuFn is a wrapper and its own library's launcher: each library has its
// own emulator state (blockDim, barriers), which its kernels read.
type emuFn struct {
	sym    uintptr
	name   string
	launch func(k uintptr, gx, gy, gz, bx, by, bz uint32, warp int32, params unsafe.Pointer)
}

type kernelFn = *emuFn

var emu struct {
	mu    sync.Mutex
	libs  map[string]*library
	alloc func(n uintptr) *byte
	mem   map[uintptr]*byte // C allocations by address, so none goes through uintptr → pointer
	dir   string
}

var kernelSig = regexp.MustCompile(`PB_KERNEL\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)`)

// emuWrappers writes, for every kernel of src, an extern "C" function that
// calls it with its arguments read from a parameter array.
func emuWrappers(src string) string {
	var b strings.Builder
	for _, m := range kernelSig.FindAllStringSubmatch(src, -1) {
		var args []string
		for i, p := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.ReplaceAll(p, "__restrict__", ""))
			typ := strings.Join(f[:len(f)-1], " ")
			args = append(args, fmt.Sprintf("*(%s*)p[%d]", typ, i))
		}
		fmt.Fprintf(&b, "extern \"C\" void emu_%s(void** p) { %s(%s); }\n", m[1], m[1], strings.Join(args, ", "))
	}
	return b.String()
}

func fn(t *testing.T, file, entry string) kernelFn {
	t.Helper()
	if testing.Short() {
		t.Skip("short mode: the CPU emulation of the device kernels takes ~2 minutes")
	}
	emu.mu.Lock()
	defer emu.mu.Unlock()
	if emu.libs == nil {
		emu.libs = map[string]*library{}
	}
	lib := emu.libs[file]
	if lib == nil {
		cxx, err := exec.LookPath("g++")
		if err != nil {
			t.Skip("no g++: the CPU emulation of the device kernels cannot be built")
		}
		if emu.dir == "" {
			if emu.dir, err = os.MkdirTemp("", "plexbench-emu-"); err != nil {
				t.Fatal(err)
			}
		}
		head, err := os.ReadFile("testdata/emu.h")
		if err != nil {
			t.Fatal(err)
		}
		src, err := gpu.Source(file)
		if err != nil {
			t.Fatal(err)
		}
		full := fmt.Sprintf("#define WARP %d\n%s\n%s\n%s", emuWarp, head, src, emuWrappers(src))
		base := filepath.Join(emu.dir, strings.TrimSuffix(file, ".cu"))
		if err := os.WriteFile(base+".cpp", []byte(full), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(cxx, "-std=c++20", "-O1", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-pthread",
			"-w", "-o", base+".so", base+".cpp").CombinedOutput()
		if err != nil {
			t.Fatalf("emulating %s: g++: %v\n%s", file, err, out)
		}
		h, err := purego.Dlopen(base+".so", purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			t.Fatal(err)
		}
		lib = &library{path: base + ".so", handle: h}
		emu.libs[file] = lib
	}
	p, err := lib.sym("emu_" + entry)
	if err != nil {
		t.Fatalf("%s: no kernel %s: %v", file, entry, err)
	}
	f := &emuFn{sym: p, name: entry}
	lp, _ := lib.sym("emu_launch")
	purego.RegisterFunc(&f.launch, lp)
	return f
}

// emuBytes is the C memory behind b.
func emuBytes(b Buffer) []byte {
	emu.mu.Lock()
	defer emu.mu.Unlock()
	return unsafe.Slice(emu.mem[b.ptr], b.n)
}

// upload copies b into fresh C memory with 256 guard bytes after it.
// Emulated buffers are not freed: a test run allocates a few MB.
func upload(t *testing.T, b []byte) Buffer {
	t.Helper()
	emu.mu.Lock()
	if emu.alloc == nil {
		h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			emu.mu.Unlock()
			t.Skipf("no libc.so.6 for the emulation's memory: %v", err)
		}
		p, _ := purego.Dlsym(h, "malloc")
		purego.RegisterFunc(&emu.alloc, p)
	}
	emu.mu.Unlock()
	p := emu.alloc(uintptr(len(b) + 256))
	buf := Buffer{ptr: uintptr(unsafe.Pointer(p)), n: len(b) + 256}
	emu.mu.Lock()
	if emu.mem == nil {
		emu.mem = map[uintptr]*byte{}
	}
	emu.mem[buf.ptr] = p
	emu.mu.Unlock()
	m := emuBytes(buf)
	copy(m, b)
	for i := len(b); i < len(m); i++ {
		m[i] = guard
	}
	return buf
}

func output(t *testing.T, n int) Buffer { return upload(t, make([]byte, n)) }

func download(t *testing.T, b Buffer, n int) []byte {
	t.Helper()
	m := emuBytes(b)
	for i, c := range m[n:] {
		if c != guard {
			t.Fatalf("write past the output: guard byte %d is %#x", i, c)
		}
	}
	return append([]byte(nil), m[:n]...)
}

func launch(t *testing.T, f kernelFn, grid, block Dim3, a *Args) {
	t.Helper()
	var pin runtime.Pinner
	defer pin.Unpin()
	gx, gy, gz := grid.dims()
	bx, by, bz := block.dims()
	f.launch(f.sym, gx, gy, gz, bx, by, bz, int32(emuWarp), a.params(&pin))
}

func warpSize(*testing.T) int { return emuWarp }

func timePick(*testing.T, kernelFn) {}
