#!/usr/bin/env bash
# Regenerates llamacpp-hybrid.json: the chunked perplexity (ctx 128, -fa
# off, 2 threads, f32 and f16 KV) of synth's tiny random qwen35, qwen35moe
# and qwen3next models (F32 and F16 weights, stories260K's vocabulary) on
# tinystories-16k.txt, computed by each llama.cpp CPU build of the npm
# package below that this CPU runs, driven by ppl.c. The models are
# written by cmd/benchmodel exactly as TestHybridMatchesLlamaCpp writes
# them. Needs npm and gcc; `make oracle-hybrid`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
data=${DATA:-$(cd "$root/.." && pwd)/shared/data}
pkg=@node-llama-cpp/linux-x64@3.22.1
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plexbench-bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lib=$cache/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
if [ ! -e "$lib/libllama.v0.5.0.so" ]; then
  mkdir -p "$cache/npm"
  npm install --prefix "$cache/npm" --silent --no-save --no-audit --no-fund "$pkg" >/dev/null
fi
gcc -O2 -o "$work/ppl" "$here/ppl.c" "$lib/libllama.v0.5.0.so" "$lib/libggml.v0.5.0.so" "$lib/libggml-base.so" -Wl,-rpath,"$lib" -lm
(cd "$root" && go build -o "$work/benchmodel" ./cmd/benchmodel)
text=$data/tinystories/tinystories-16k.txt
vocab=$data/models/stories260K-f32.gguf
# The CPU builds this machine runs (ggml's own loader would pick the first).
builds=""
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { case " $flags " in *" $1 "*) return 0;; esac; return 1; }
has avx512f && has avx512vnni && builds="$builds zen4"
has avx2 && has fma && has f16c && builds="$builds haswell"
builds="$builds sse42 x64"
{
  printf '{\n  "about": "llama-perplexity chunks method (ctx 128, -fa off, 2 threads) on tinystories-16k.txt, per llama.cpp 0.5.0 CPU build from npm %s via ppl.c; models from synth.HybridPreset(<arch>-tiny), seed 1, stories260K vocabulary",\n  "ppl": {\n' "$pkg"
  sep=""
  for arch in qwen35 qwen35moe qwen3next; do
    for typ in f32 f16; do
      m=$work/$arch-$typ.gguf
      "$work/benchmodel" -arch "$arch-tiny" -type "$typ" -vocab "$vocab" -o "$m"
      for kv in 0 1; do
        name=$([ $kv = 0 ] && echo f32kv || echo f16kv)
        vals=""
        for b in $builds; do
          v=$(CPUV=$b LIBDIR=$lib "$work/ppl" "$m" "$text" 128 $kv | awk '{print $6}')
          vals="$vals${vals:+, }\"$b\": $v"
        done
        printf '%s    "%s-%s/%s": {%s}' "$sep" "$arch" "$typ" "$name" "$vals"
        sep=$',\n'
      done
    done
  done
  printf '\n  }\n}\n'
} > "$here/llamacpp-hybrid.json.tmp"
mv "$here/llamacpp-hybrid.json.tmp" "$here/llamacpp-hybrid.json"
echo "wrote $here/llamacpp-hybrid.json"
