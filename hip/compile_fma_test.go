package hip

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// noFMAKernels are the kernels whose float arithmetic the CPU does with
// separate roundings and hiprtc, contracting by default, fused: the
// activation and KV quantizers, the Gated DeltaNet, the MoE combine and
// FlashPrefill's block scores. Compiled with -ffp-contract=off (rtc.go)
// an exact one has no fused multiply-add but those of its IEEE divisions;
// the others also keep the ones their source asks for (FlashPrefill's
// float64 fma() on exact products, the device library's expf) and have
// no more than with contraction on.
var noFMAKernels = map[string][]struct {
	name  string
	exact bool
}{
	"quant.cu":        {{"quantize_q8_0", true}, {"quantize_q8_1", true}, {"quantize_q8_k", true}},
	"kvstore.cu":      {{"kv_store_q8_0", true}},
	"gdn.cu":          {{"gdn_conv", false}, {"gdn_delta", true}},
	"moe.cu":          {{"moe_combine", true}, {"moe_shared", false}},
	"flashprefill.cu": {{"fp_pool_f32", false}, {"fp_select", false}},
}

// amdFMA matches AMD's fused multiply-add instructions (v_fma_f32,
// v_fmac_f32, v_fma_mix…, v_pk_fma_f32, the f16 and f64 forms).
var amdFMA = regexp.MustCompile(`\bv_(pk_)?fmac?(_mix\w*)?_f(16|32|64)(_e32|_e64|_dpp|_sdwa)?\s`)

// amdDiv matches the last instruction of an IEEE division's expansion,
// which takes 5 fused multiply-adds (Newton–Raphson on v_rcp: 3 v_fma
// and 2 v_fmac for f32, 5 v_fma_f64 for f64): they are the correctly
// rounded quotient the CPU's a/b is, not a contraction.
var amdDiv = regexp.MustCompile(`\bv_div_fixup_f(32|64)\s`)

// TestHIPRTCNoFMA compiles the kernels of noFMAKernels with Debian's
// hiprtc for gfx90a (each in a child process, as TestCompileKernelsHIPRTC),
// disassembles the code objects with LLVM's objdump and checks each
// kernel's body for fused multiply-adds. Skips without hiprtc or
// llvm-objdump (Debian's llvm).
func TestHIPRTCNoFMA(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: hiprtc compiles")
	}
	objdump := ""
	for _, n := range []string{"llvm-objdump", "llvm-objdump-15", "llvm-objdump-14"} {
		if p, err := exec.LookPath(n); err == nil {
			objdump = p
			break
		}
	}
	if objdump == "" {
		if os.Getenv("CI") != "" && os.Getenv("PLEXBENCH_EXPECT_HIPRTC") == "1" {
			t.Fatal("no llvm-objdump, but .ci/run installed llvm beside hiprtc")
		}
		t.Skip("no llvm-objdump (apt-get install llvm)")
	}
	c, err := OpenCompiler(HIP, Env{})
	if err != nil {
		t.Skipf("hiprtc not found: %v", err)
	}
	c.Close()
	dir := t.TempDir()
	for file, kernels := range noFMAKernels {
		t.Run(file, func(t *testing.T) {
			t.Parallel() // each compile is a child process of its own
			// counts disassembles file's code object compiled with option
			// added: per kernel, its fused multiply-adds and divisions.
			counts := func(name, option string) map[string][2]int {
				obj := filepath.Join(dir, file+"."+name+".o")
				if out, err := runChild(t, fmt.Sprintf("%s|gfx90a|64|%s|%s", file, obj, option)); err != nil {
					t.Fatalf("compile (%s): %v: %s", name, err, out)
				}
				dis, err := exec.Command(objdump, "-d", "--mcpu=gfx90a", obj).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v: %s", objdump, err, firstLines(string(dis), 3))
				}
				out := map[string][2]int{}
				for k, body := range disassembledFunctions(string(dis)) {
					out[k] = [2]int{len(amdFMA.FindAllString(body, -1)), len(amdDiv.FindAllString(body, -1))}
				}
				return out
			}
			off, on := counts("off", "-ffp-contract=off"), counts("on", "-ffp-contract=fast")
			for _, k := range kernels {
				o, ok := off[k.name]
				if !ok {
					t.Errorf("%s: no %s in the disassembly", file, k.name)
					continue
				}
				fmas, divs, contracted := o[0], o[1], on[k.name][0]
				t.Logf("%s: %d fused multiply-adds, %d IEEE divisions (5 each); %d with contraction on", k.name, fmas, divs, contracted)
				if (k.exact && fmas != 5*divs) || fmas > contracted {
					t.Errorf("%s: %d fused multiply-adds with -ffp-contract=off (%d divisions; %d with contraction on)", k.name, fmas, divs,
						contracted)
				}
			}
		})
	}
}

// disassembledFunctions splits objdump -d output into function bodies by
// their "<name>:" labels.
func disassembledFunctions(dis string) map[string]string {
	out := map[string]string{}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			out[cur] = b.String()
		}
		b.Reset()
	}
	for _, l := range strings.Split(dis, "\n") {
		if i := strings.Index(l, " <"); i >= 0 && strings.HasSuffix(l, ">:") {
			flush()
			cur = l[i+2 : len(l)-2]
			continue
		}
		b.WriteString(l + "\n")
	}
	flush()
	return out
}
