#!/usr/bin/env bash
# Cross-compiles the kernels and engine tests for arm64 (no assembly: the
# Go kernels and the registry's generic defaults) and runs them in short
# mode under qemu-user. Needs qemu-aarch64-static (Debian: qemu-user-static).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
if [ -z "$qemu" ]; then
  echo "test-arm64: qemu-aarch64-static not found (apt-get install qemu-user-static)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for pkg in kernels engine; do
  echo "== arm64 $pkg (qemu, -short)"
  GOARCH=arm64 "$GO" test -c -o "$out/$pkg.test" "./$pkg"
  (cd "$pkg" && "$qemu" "$out/$pkg.test" -test.short -test.timeout 30m "$@")
done
