#!/usr/bin/env bash
# Regenerates llamacpp-avx512.json: the chunked perplexity of every
# stories260K file at ctx 128 and 64, f32 and f16 KV, -fa off, computed by
# llama.cpp's own AVX-512 CPU backend (the prebuilt libggml-cpu-zen4 of the
# npm package below). Needs npm, gcc and a CPU with AVX-512; `make oracle`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
data=${DATA:-$(cd "$here/../../../../.." && pwd)/shared/data}
pkg=@node-llama-cpp/linux-x64@3.22.1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm install --silent --no-save --no-audit --no-fund "$pkg" >/dev/null)
lib=$work/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
gcc -O2 -o "$work/ppl" "$here/ppl.c" "$lib/libllama.v0.5.0.so" "$lib/libggml.v0.5.0.so" "$lib/libggml-base.so" -Wl,-rpath,"$lib" -lm
text=$data/tinystories/tinystories-16k.txt
{
  printf '{\n  "about": "llama-perplexity chunks method (-fa off, 2 threads) on tinystories-16k.txt, computed by llama.cpp 0.5.0 libggml-cpu-zen4.so from npm %s via ppl.c",\n  "ppl": {\n' "$pkg"
  sep=""
  for ctx in 128 64; do
    for m in f32 f16 q8_0 q6_k q5_1 q5_0 q4_k_m q4_1 q4_0; do
      for kv in 0 1; do
        name=$([ $kv = 0 ] && echo f32kv || echo f16kv)
        out=$(CPUV=zen4 LIBDIR=$lib "$work/ppl" "$data/models/stories260K-$m.gguf" "$text" $ctx $kv)
        printf '%s    "stories260K-%s/ctx%d/%s": %s' "$sep" "$m" "$ctx" "$name" "$(echo "$out" | awk '{print $6}')"
        sep=$',\n'
      done
    done
  done
  printf '\n  }\n}\n'
} > "$here/llamacpp-avx512.json.tmp"
mv "$here/llamacpp-avx512.json.tmp" "$here/llamacpp-avx512.json"
echo "wrote $here/llamacpp-avx512.json"
