#!/usr/bin/env bash
# Cross-compiles the kernels and engine tests for arm64 (no assembly: the
# Go kernels and the registry's generic defaults) and runs them in short
# mode under qemu-user. Needs qemu-aarch64-static (Debian: qemu-user-static)
# and arm64's loader for the dynamically linked engine (libc6-arm64-cross).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
  echo "test-arm64: qemu-aarch64-static not found (apt-get install qemu-user-static)" >&2
  exit 1
fi
# The engine reaches the GPU runtimes through purego, which makes its test
# binary dynamically linked: qemu needs arm64's loader and libc
# (Debian: libc6-arm64-cross).
if [ -z "${QEMU_LD_PREFIX:-}" ] && [ -d /usr/aarch64-linux-gnu ]; then
  export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pkgs=(kernels engine)
for pkg in "${pkgs[@]}"; do
  GOARCH=arm64 "$GO" test -c -o "$out/$pkg.test" "./$pkg"
done
# The two run side by side: under qemu the kernels tests keep about one
# core busy and the engine's about 1.4 of two, so together they take
# little longer than the engine's alone. Each one's output follows when
# both are done.
pids=()
for pkg in "${pkgs[@]}"; do
  (cd "$pkg" && exec "$qemu" "$out/$pkg.test" -test.short -test.timeout 30m "$@") >"$out/$pkg.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pkgs[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  echo "== arm64 ${pkgs[$i]} (qemu, -short)"
  cat "$out/${pkgs[$i]}.log"
  if [ "$status" -ne 0 ]; then
    echo "test-arm64: ${pkgs[$i]} failed (exit $status)" >&2
    rc=1
  fi
done
exit "$rc"
