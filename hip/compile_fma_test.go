package hip

import (
	"fmt"
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
// they must have no fused multiply-add.
var noFMAKernels = map[string][]string{
	"quant.cu":        {"quantize_q8_0", "quantize_q8_1", "quantize_q8_k"},
	"kvstore.cu":      {"kv_store_q8_0"},
	"gdn.cu":          {"gdn_conv", "gdn_delta"},
	"moe.cu":          {"moe_combine", "moe_shared"},
	"flashprefill.cu": {"fp_pool_f32", "fp_select"},
}

// amdFMA matches AMD's fused multiply-add instructions (v_fma_f32,
// v_fmac_f32, v_fma_mix…, v_pk_fma_f32, the f16 and f64 forms).
var amdFMA = regexp.MustCompile(`\bv_(pk_)?fmac?(_mix\w*)?_f(16|32|64)\b`)

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
			obj := filepath.Join(dir, file+".o")
			if out, err := runChild(t, fmt.Sprintf("%s|gfx90a|64|%s", file, obj)); err != nil {
				t.Fatalf("compile: %v: %s", err, out)
			}
			dis, err := exec.Command(objdump, "-d", "--mcpu=gfx90a", obj).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v: %s", objdump, err, firstLines(string(dis), 3))
			}
			bodies := disassembledFunctions(string(dis))
			for _, k := range kernels {
				body, ok := bodies[k]
				if !ok {
					t.Errorf("%s: no %s in the disassembly", file, k)
					continue
				}
				fmas := amdFMA.FindAllString(body, -1)
				t.Logf("%s: %d instructions, %d fused multiply-adds", k, strings.Count(body, "\n"), len(fmas))
				if len(fmas) > 0 {
					t.Errorf("%s: fused multiply-adds %v though compiled with -ffp-contract=off", k, fmas)
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

