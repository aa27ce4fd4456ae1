#!/usr/bin/env bash
# Runs the packages whose results depend on the CPU kernels again under each
# CPU level below this machine's own (PLEXBENCH_CPU masks the features the
# kernel registry sees): avx2 and generic on an AVX-512 machine, generic on
# an AVX2 one. Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
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
for lvl in "${levels[@]}"; do
  echo "== PLEXBENCH_CPU=$lvl"
  PLEXBENCH_CPU=$lvl "$GO" test -count=1 "$@" ./kernels/... ./engine/... ./scoring/... ./cmd/...
done
