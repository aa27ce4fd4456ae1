#!/usr/bin/env bash
# Runs the kernels tests of the AVX-512 kernels that need only F/BW/VL/DQ
# (the Q2_K, Q3_K, IQ4_XS, Q4_1 and Q5_1 panels, the Q8_K quantizer; each
# bit for bit against its Go twin) inside a Bochs-emulated AVX-512 machine
# (scripts/avx512-emu), so that a machine without AVX-512 checks them too.
# On a CPU with AVX-512 BW the native suite runs them and this exits 0.
# RUN overrides the test selection; AVX512_EMU_TIMEOUT the time limit;
# AVX512_EMU_FORCE=1 runs them under emulation on an AVX-512 machine too
# (to time this stage, or check the harness, where the CPU has AVX-512).
# Exit status: 0 passed (or not needed); the tests' status when they
# failed; 0 with a warning when the emulator itself could not run them
# (timeout, boot failure), which leaves those kernels unchecked here.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
if [ -z "${AVX512_EMU_FORCE:-}" ] && grep -qw avx512bw /proc/cpuinfo 2>/dev/null; then
  echo "test-avx512-emu: this CPU has AVX-512 BW; the native suite runs these kernels"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "test-avx512-emu: not an x86-64 machine, skipped"
  exit 0
fi
run=${RUN:-'TestKPanelKernels|TestKQuantSIMDVariants|TestQ8MinPanelKernels|TestMatMulSIMDMin|TestPanelIntegerExact|TestQuantQ8KConvertersMatchReference'}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 $GO test -c -o "$tmp/kernels.test" ./kernels
t0=$(date +%s)
set +e
(cd kernels && AVX512_EMU_TIMEOUT=${AVX512_EMU_TIMEOUT:-1500} ../scripts/avx512-emu "$tmp/kernels.test" \
  -test.run "$run" -test.short -test.v) >"$tmp/log" 2>&1
rc=$?
set -e
secs=$(($(date +%s) - t0))
case $rc in
0)
  n=$(grep -c -- '--- PASS: .*/avx512' "$tmp/log" || true)
  grep -q -- '--- PASS' "$tmp/log" || { cat "$tmp/log"; echo "test-avx512-emu: no test ran" >&2; exit 1; }
  echo "test-avx512-emu: ok in ${secs}s, $n avx512 subtests passed under emulated AVX-512 ($(grep -m1 'guest booted' "$tmp/log" | sed 's/^avx512-emu: //'))"
  ;;
124 | 125)
  tail -20 "$tmp/log"
  echo "test-avx512-emu: WARNING: the emulator did not finish (status $rc after ${secs}s); the AVX-512 kernels were not checked on this machine" >&2
  ;;
*)
  grep -v '^=== ' "$tmp/log" | grep -v -- '--- PASS' | tail -80
  echo "test-avx512-emu: FAILED (status $rc) under emulated AVX-512" >&2
  exit "$rc"
  ;;
esac
