#!/usr/bin/env bash
# Runs what depends on the CPU kernels again under each CPU level below this
# machine's own (PLEXBENCH_CPU masks the features the kernel registry sees):
# avx2 and generic on an AVX-512 machine, generic on an AVX2 one.
#
#   test-levels.sh [go test flags]         make test's rerun: the kernels and
#     engine packages in short mode, and one end-to-end smoke per level: the
#     F32, Q4_0 and Q4_K_M stories260K files and the tiny F32 qwen35moe
#     hybrid against llama.cpp's numbers at ctx 128
#   test-levels.sh --long [go test flags]  make test-long's: every
#     stories260K file and tiny hybrid against llama.cpp's numbers at ctx 128
#     (the golden files × every level)
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
long=false
if [ "${1:-}" = --long ]; then
  long=true
  shift
fi
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $flags " == *" $1 "* ]]; }
levels=()
if has avx512f && has avx512bw && has avx512vl && has avx512dq; then
  levels+=(avx2)
fi
if has avx2 && has fma && has f16c; then
  levels+=(generic)
fi
if [ ${#levels[@]} -eq 0 ]; then
  echo "test-levels: this CPU has no level above generic; nothing to mask"
  exit 0
fi
golden='^(TestGoldenPerplexity|TestHybridMatchesLlamaCpp)$'
smoke="$golden/^(stories260K-(f32|q4_0|q4_k_m)|qwen35moe-f32)$/"
for lvl in "${levels[@]}"; do
  echo "== PLEXBENCH_CPU=$lvl"
  if $long; then
    PLEXBENCH_CPU=$lvl "$GO" test -short "$@" -run "$golden" ./cmd/plexbench
  else
    PLEXBENCH_CPU=$lvl "$GO" test -short "$@" ./kernels/... ./engine/...
    PLEXBENCH_CPU=$lvl "$GO" test -short "$@" -run "$smoke" ./cmd/plexbench
  fi
done
