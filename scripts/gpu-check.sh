#!/usr/bin/env bash
# The prepared device check of issue 22 (item 4). Two halves:
#
#   scripts/gpu-check.sh build   here (Go, no GPU): builds the GPU-tagged hip
#                                test binary, plexbench and benchmodel with
#                                CGO_ENABLED=0 into bin/gpu-check/, with the
#                                stories260K models, Qwen3's vocabulary, a
#                                TinyStories excerpt and gpu-torch-bench.py
#                                beside them (~35 MB).
#   scripts/gpu-check.sh run     on the device machine (no Go needed): runs
#                                the checks below from bin/gpu-check/; the
#                                models it times are written there, in a
#                                temporary folder, never carried.
#
# With the device tool: build here, then run `bash scripts/gpu-check.sh run`
# there carrying bin/gpu-check. `make gpu-check` does both halves on a
# machine that has Go and a GPU. On an AMD device set
# PLEXBENCH_GPU_BACKEND=hip GPU_POOL=hip:0 (default: CUDA first, cuda:0).
#
# Checks, one summary line each ("gpu-check: NAME: PASS|FAIL|SKIP|TIME ..."):
#   devices     plexbench devices: the runtimes and libraries found, exit 0
#   kernel:*    every device kernel compiled (nvrtc/hiprtc), loaded, launched
#               and compared with its CPU twin on random inputs, within the
#               tolerance its source states (hip/device_test.go); the kernel
#               cache; pick's bandwidth timed with events
#   score:*     plexbench score on each stories260K file, the CPU backend
#               (matmul=go: ggml's per-block order, which the device
#               kernels follow) against the GPU backend, PPL to 1e-4
#               relative (3e-3 with Q8_0 products on the device: see below)
#   arch:*      tiny random llama, qwen2 and qwen3 (F32 and Q8_0, 2 layers)
#               and the hybrids qwen35, qwen35moe, qwen3next (F32, 6 layers),
#               written by benchmodel with stories260K's vocabulary, scored
#               as score:* with --no-cpu-fallback on the device
#   flashprefill  stories260K-f32 with FlashPrefill V2 at ctx 4096 (blocks
#               of 128) on a TinyStories excerpt: the device keeps exactly
#               the CPU's fraction of blocks (below 1), PPL to 1e-4
#   long:*      stories260K-f32, one window of GPU_CHECK_LONG_CTX (32768)
#               tokens, dense and with FlashPrefill V2 (blocks of 128), on
#               the CPU and the device: PPL to 1e-4 (SKIP on the emulator
#               unless GPU_CHECK_LONG_CTX is set)
#   kld         the F32 file on the GPU against a base the CPU recorded:
#               mean KLD below 1e-6
#   prefill     prefill tok/s of the F32 file, CPU and GPU (timed, not judged)
#   traffic:*   with GPU_EMU=1 only (the emulator counts what kernels load,
#               PLEXBENCH_EMU_TRAFFIC=1): the stories260K F32, Q8_0 and
#               Q4_K_M files scored on the device, one window in ubatches of
#               GPU_CHECK_TRAFFIC_UB (512); R/(W·P) from the report's
#               config.device_traffic, the times a weight byte is loaded
#               per pass (printed, not judged; docs/gpu-numbers.md)
#   torch:*, time:*  prefill at ctx 4096 of the Qwen3-0.6B shape (F16, Q8_0)
#               and the Qwen3-8B shape (Q4_K_M, F16), written by benchmodel,
#               on the device; PyTorch eager bf16 of the same shapes
#               (gpu-torch-bench.py, SKIP without torch); each plexbench
#               figure with its ratio to PyTorch's and its share of the bf16
#               roofline (see roofline below). Timed, not judged: the
#               targets (≥ 1.0× PyTorch for F16, ≥ 50% of the roofline for
#               the 8B shape) are said met or not.
# With GPU_EMU=1 the same checks run on the emulated CUDA runtime of
# hip/emu (build: make gpu-emu; run: the overrides point at it), shorter
# windows, FlashPrefill at ctx 1024 in blocks of 64, and no timings (SKIP;
# GPU_CHECK_TIMINGS=1 runs them there too, with the variables below small).
#
# Bounded: the run half stops starting checks GPU_CHECK_BUDGET seconds
# (default 540; 0: no bound, the emulator's default) after it starts, each
# step under its own timeout cut to what is left; a check that finds too
# little time left says SKIP. Variables: GPU_CHECK_QUICK=1 skips the
# timings; GPU_CHECK_STEPS picks steps (default "kernels scores archs
# flashprefill long kld traffic timings"; devices always runs); GPU_CHECK_CTX (scored windows, 512; emulated 64),
# GPU_CHECK_FP_CTX (4096; emulated 1024), GPU_CHECK_TIME_CTX (4096),
# GPU_CHECK_TIME_SHAPES ("qwen3-0.6b qwen3-8b"), GPU_CHECK_06B_LAYERS (28),
# GPU_CHECK_8B_LAYERS (36: the 8B F16 file is 16.4 GB, ~20 s to write at
# 1 GB/s; fewer layers are timed as they are and said so, with the ratio
# and the roofline share, which hardly depend on depth, and a tok/s scaled
# to 36 layers by FLOPs), GPU_CHECK_TMP (folders where the timed models
# may be written, the first with room taken; default /dev/shm, then the
# system's temporary folder; a file that fits in none is skipped), GPU_CHECK_TORCH_DEVICE (cuda), PEAK_TFLOPS (989).
set -uo pipefail
cd "$(dirname "$0")/.."
out=bin/gpu-check
mode=${1:-}

build() {
  set -e
  GO=${GO:-go}
  mkdir -p "$out/models" "$out/data"
  CGO_ENABLED=0 "$GO" test -tags gpu -c -o "$out/hip.test" ./hip/
  CGO_ENABLED=0 "$GO" build -o "$out/plexbench" ./cmd/plexbench
  CGO_ENABLED=0 "$GO" build -o "$out/benchmodel" ./cmd/benchmodel
  cp scripts/gpu-torch-bench.py "$out/"
  for m in ../shared/data/models/stories260K-*.gguf; do
    if [ -e "$m" ]; then cp "$m" "$out/models/"; fi
  done
  local v=../shared/data/vocab/qwen3-vocab.gguf t=../shared/data/tinystories/tinystories_val.txt
  if [ -e "$v" ]; then cp "$v" "$out/data/"; fi
  # ~11,000 stories260K tokens: the FlashPrefill window of 4096 and more.
  if [ -e "$t" ]; then head -c 24576 "$t" >"$out/data/tinystories-24k.txt"; fi
  # The whole validation excerpt (~790 KB): the long step's window of 32,768.
  if [ -e "$t" ]; then cp "$t" "$out/data/tinystories-val.txt"; fi
  if [ "${GPU_EMU:-}" = 1 ]; then
    make gpu-emu >/dev/null
    mkdir -p "$out/emu" && cp -P bin/gpu-emu/* "$out/emu/"
  fi
  # shellcheck disable=SC2012 # our own file names
  echo "gpu-check: built $(ls "$out" | tr '\n' ' ')($(ls "$out/models" | wc -l) models, $(du -sh "$out" | cut -f1))"
}

summary() { printf 'gpu-check: %-28s %s\n' "$1:" "$2"; }
fail() {
  summary "$1" "FAIL $2"
  fails=$((fails + 1))
}

# top KEY FILE: a top-level number of a report; field: the first at any
# depth.
top() { sed -n "s/^  \"$1\": *\([0-9.eE+-]*\),*$/\1/p" "$2" | head -1; }
field() { sed -n "s/^ *\"$1\": *\([0-9.eE+-]*\),*$/\1/p" "$2" | head -1; }

# want STEP: whether GPU_CHECK_STEPS (default all) names STEP.
want() { [[ " ${GPU_CHECK_STEPS:-kernels scores archs flashprefill long kld traffic timings} " == *" $1 "* ]]; }

# limit N: N seconds, or what is left of the budget less a margin if that
# is less; 0 when under 10 s are left.
limit() {
  local n=$1 left
  if [ "$budget" -gt 0 ]; then
    left=$((budget - (SECONDS - started) - 5))
    [ "$left" -lt "$n" ] && n=$left
  fi
  [ "$n" -ge 10 ] && echo "$n" || echo 0
}

# pb_score SIDE SECS ARGS...: plexbench score --quiet ARGS into
# $log/SIDE.json and $log/SIDE.err within SECS (0: out of time, not run),
# killed 20 s later if the window in flight (which a stop lets finish)
# has not.
pb_score() {
  local side=$1 secs=$2
  shift 2
  if [ "$secs" -eq 0 ]; then
    echo "out of time" >"$log/$side.err"
    return 1
  fi
  timeout -k 20 "$secs" "$out/plexbench" score --quiet "$@" >"$log/$side.json" 2>"$log/$side.err"
}

# why SIDE: the first line of its stderr, or its exit's meaning.
why() { head -1 "$log/$1.err" | grep . || echo "no message (timeout or crash)"; }

# score_pair NAME: scores common[] on the CPU (matmul=go) and on the
# device (devx[] added) and compares the PPLs: 1e-4 relative, 3e-3 when
# the CPU ran Q8_0 products (the device's sum in another order: an ulp
# upstream moves an 8-bit activation code, the spread the CPU's own kernel
# variants show on these files, ~2e-3).
score_pair() {
  local name=$1 cpu gpu tol=1e-4
  if [ "$(limit 60)" -eq 0 ]; then
    summary "$name" "SKIP out of time"
    return
  fi
  common+=(--kernels matmul=go)
  cpu_then_gpu "$name" 60 "${devx[@]}" || return
  cpu=$(top perplexity "$log/cpu.json") gpu=$(top perplexity "$log/gpu.json")
  grep -q '"matmul.q8_0"' "$log/cpu.json" && grep -q '"matmul",' "$log/gpu.json" && tol=3e-3
  if near "$cpu" "$gpu" "$tol"; then
    summary "$name" "PASS ppl cpu $cpu gpu $gpu (within $tol)"
  else
    fail "$name" "ppl cpu $cpu gpu $gpu (over $tol relative)"
  fi
}

# cpu_then_gpu NAME SECS [ARG...]: "${common[@]}" scored on the CPU, then
# on the device with ARGs added, each within SECS or what is left; a run
# that fails fails NAME, saying why, and returns 1.
cpu_then_gpu() {
  local name=$1 secs=$2
  shift 2
  if ! pb_score cpu "$(limit "$secs")" "${common[@]}" --backend cpu; then
    fail "$name" "cpu run: $(why cpu)"
    return 1
  fi
  if ! pb_score gpu "$(limit "$secs")" "${common[@]}" --pool "${GPU_POOL:-cuda:0}" "$@"; then
    fail "$name" "cpu ppl $(top perplexity "$log/cpu.json"); gpu run: $(why gpu)"
    return 1
  fi
}

# near A B TOL: B within TOL of A, relative, and A above 1 (a perplexity).
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 1 && d <= t * a) }'; }

run() {
  local log ctx budget started=$SECONDS emu=
  fails=0
  log=$(mktemp -d)
  for b in hip.test plexbench benchmodel; do
    if [ ! -x "$out/$b" ]; then
      echo "gpu-check: $out/$b missing: run 'scripts/gpu-check.sh build' first" >&2
      exit 2
    fi
  done
  # ctx: the windows scored (GPU_CHECK_CTX); the emulated device runs on
  # host threads, hundreds of times slower than a GPU: short windows.
  ctx=${GPU_CHECK_CTX:-512}
  budget=${GPU_CHECK_BUDGET:-540}
  if [ "${GPU_EMU:-}" = 1 ]; then
    emu=1 ctx=${GPU_CHECK_CTX:-64} budget=${GPU_CHECK_BUDGET:-0}
    export PLEXBENCH_CUDA_LIB=$PWD/$out/emu/libcuda.so.1 PLEXBENCH_NVRTC_LIB=$PWD/$out/emu/libnvrtc.so
    echo "gpu-check: on the emulated CUDA runtime ($out/emu)"
  fi
  # NVRTC may come only from PyTorch's wheels: name python's prefix.
  if [ -z "${PLEXBENCH_CUDA_PREFIX:-}" ] && command -v python3 >/dev/null 2>&1; then
    PLEXBENCH_CUDA_PREFIX=$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null) && export PLEXBENCH_CUDA_PREFIX
  fi
  # Where the libraries are, for the record.
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1|libnvrtc\.so|libamdhip64|libhiprtc' | sed 's/^/  lib: /'
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/  gpu: /'

  if timeout 60 "$out/plexbench" devices >"$log/devices" 2>&1; then
    summary devices "PASS $(head -1 "$log/devices")"
  else
    fail devices "$(tr '\n' ' ' <"$log/devices")"
  fi
  sed 's/^/  /' "$log/devices"

  export PLEXBENCH_KERNEL_CACHE="$log/kcache"
  want kernels && kernels "$log"
  local models=("$out"/models/stories260K-*.gguf) m name
  [ -e "${models[0]}" ] || models=("")
  want scores || models=()
  for m in "${models[@]}"; do
    name=${m##*/}
    [ -n "$name" ] || name="embedded demo"
    common=(--perplexity-chunks 4 --perplexity-ctx "$ctx" --kv-cache-dtype f32)
    [ -n "$m" ] && common+=(--model "$m")
    devx=()
    score_pair "score:$name"
  done
  want archs && tiny_archs
  want flashprefill && flashprefill
  want long && long_context
  want kld && kld_and_prefill
  want traffic && traffic
  want timings && timings
  summary total "$([ "$fails" -eq 0 ] && echo PASS || echo "FAIL ($fails failed)") in $((SECONDS - started)) s"
  rm -rf "$log"
  [ "$fails" -eq 0 ]
}

# kernels: hip.test's device tests, a line per test.
kernels() {
  local log=$1 secs rc n=0 line st name why
  secs=$(limit 300)
  [ "$secs" -gt 0 ] || secs=1
  timeout "$secs" "$out/hip.test" -test.run '^TestDevice' -test.v -test.count=1 >"$log/kernels" 2>&1
  rc=$?
  grep -E '^DEVICE|CHECK|TIME|compiled and loaded|compile cold' "$log/kernels" | sed 's/^ */  /'
  while read -r line; do
    n=$((n + 1))
    st=$(echo "$line" | awk '{print $2}' | tr -d ':')
    name=$(echo "$line" | awk '{print $3}')
    why=""
    if [ "$st" != PASS ]; then
      # The test's first message that is not a CHECK line says why.
      why=$(awk -v t="$name" '$0 ~ "^=== RUN   "t"$" { on = 1; next } on && /^(=== RUN|--- )/ { exit }
        on && /_test\.go:[0-9]+:/ && !/CHECK/ { sub(/^ +/, ""); print; exit }' "$log/kernels")
    fi
    summary "kernel:${name#TestDevice}" "$st${why:+ $why}"
    [ "$st" = PASS ] || fails=$((fails + 1))
  done < <(grep -E '^--- (PASS|FAIL|SKIP): TestDevice' "$log/kernels")
  if [ "$n" -eq 0 ]; then
    fail kernels "no test ran (exit $rc): $(tail -3 "$log/kernels" | tr '\n' ' ')"
  elif [ "$rc" -ne 0 ] && ! grep -q '^--- FAIL' "$log/kernels"; then
    fail kernels "exit $rc (timeout or crash): $(tail -3 "$log/kernels" | tr '\n' ' ')"
  fi
}

# tiny_archs: each architecture's pass on tiny random models written here.
tiny_archs() {
  local voc=$out/models/stories260K-f32.gguf dir=$log/tiny spec a typ m
  if [ ! -e "$voc" ]; then
    summary arch "SKIP no stories260K-f32.gguf (the tiny models' vocabulary)"
    return
  fi
  mkdir -p "$dir"
  # The hybrids stay F32 at their 6 layers: deeper random stacks amplify
  # an ulp's f16 rounding or 8-bit code past 1e-4 (cmd/plexbench's
  # TestDeviceHybrid takes 2 layers for F16 and Q8_0).
  for spec in llama-tiny:f32 llama-tiny:q8_0 qwen2-tiny:f32 qwen2-tiny:q8_0 qwen3-tiny:f32 qwen3-tiny:q8_0 \
    qwen35-tiny:f32 qwen35moe-tiny:f32 qwen3next-tiny:f32; do
    a=${spec%:*} typ=${spec#*:} m=$dir/${spec/:/-}.gguf
    if ! timeout 60 "$out/benchmodel" -arch "$a" -type "$typ" -vocab "$voc" -o "$m" 2>"$log/bm.err"; then
      fail "arch:${a%-tiny}/$typ" "benchmodel: $(head -1 "$log/bm.err")"
      continue
    fi
    common=(--model "$m" --perplexity-chunks 4 --perplexity-ctx "$ctx" --kv-cache-dtype f32)
    devx=(--no-cpu-fallback)
    score_pair "arch:${a%-tiny}/$typ"
    rm -f "$m"
  done
}

# traffic: R/(W·P) of the device's products, on the emulated device only.
traffic() {
  local ub=${GPU_CHECK_TRAFFIC_UB:-512} typ m secs w r p
  if [ -z "$emu" ]; then
    summary traffic "SKIP counted only on the emulated device (GPU_EMU=1)"
    return
  fi
  for typ in f32 q8_0 q4_k_m; do
    m=$out/models/stories260K-$typ.gguf
    if [ ! -e "$m" ]; then
      summary "traffic:$typ" "SKIP no ${m##*/}"
      continue
    fi
    secs=$(limit 300)
    if ! PLEXBENCH_EMU_TRAFFIC=1 pb_score traffic "$secs" --model "$m" --perplexity-chunks 1 --perplexity-ctx "$ub" \
      --batch-size "$ub" --ubatch-size "$ub" --kv-cache-dtype f32 --backend cuda --no-cpu-fallback; then
      fail "traffic:$typ" "$(why traffic)"
      continue
    fi
    w=$(field weight_bytes "$log/traffic.json") r=$(field weight_read_bytes "$log/traffic.json") p=$(field passes "$log/traffic.json")
    if [ -z "$w" ] || [ -z "$r" ] || [ -z "$p" ]; then
      fail "traffic:$typ" "no config.device_traffic in the report"
      continue
    fi
    summary "traffic:$typ" "R/(W·P) $(awk -v w="$w" -v r="$r" -v p="$p" 'BEGIN { printf "%.2f", r / (w * p) }') (W $w bytes, R $r, P $p passes of ubatch $ub)"
  done
}

# flashprefill: FlashPrefill V2 keeps the CPU's blocks on the device.
flashprefill() {
  local f32=$out/models/stories260K-f32.gguf text=$out/data/tinystories-24k.txt fctx=${GPU_CHECK_FP_CTX:-4096} blk=128
  local ck gk cpu gpu name=flashprefill
  if [ -n "$emu" ]; then
    fctx=${GPU_CHECK_FP_CTX:-1024} blk=64
  fi
  if [ ! -e "$f32" ] || [ ! -e "$text" ]; then
    summary "$name" "SKIP no stories260K-f32.gguf or TinyStories excerpt"
    return
  fi
  if [ "$(limit 180)" -eq 0 ]; then
    summary "$name" "SKIP out of time"
    return
  fi
  common=(--model "$f32" --perplexity "$text" --perplexity-ctx "$fctx" --perplexity-chunks 1 --kv-cache-dtype f32
    --kernels matmul=go --FlashPrefillV2=on --flashprefill-block-size "$blk")
  cpu_then_gpu "$name" 180 --no-cpu-fallback || return
  ck=$(top prefill_attention_kept "$log/cpu.json") gk=$(top prefill_attention_kept "$log/gpu.json")
  cpu=$(top perplexity "$log/cpu.json") gpu=$(top perplexity "$log/gpu.json")
  local what="kept cpu $ck gpu $gk, ppl cpu $cpu gpu $gpu (ctx $fctx, blocks of $blk)"
  if [ -n "$ck" ] && [ "$ck" = "$gk" ] && awk -v k="$ck" 'BEGIN { exit !(k < 1) }' && near "$cpu" "$gpu" 1e-4; then
    summary "$name" "PASS $what"
  else
    fail "$name" "$what: want equal kept below 1, ppl within 1e-4"
  fi
}

# long_context: one window of GPU_CHECK_LONG_CTX (32,768) tokens of
# stories260K-f32, dense and with FlashPrefill V2, on the CPU and the device:
# the device's PPL within 1e-4 of the CPU's (issue 36: attention tiled to
# any context, no shared memory growing with the position). On the
# emulator it is SKIP unless GPU_CHECK_LONG_CTX is set (a window of 16,384
# takes it 6-12 minutes a mode).
long_context() {
  local f32=$out/models/stories260K-f32.gguf text=$out/data/tinystories-val.txt lctx=${GPU_CHECK_LONG_CTX:-32768}
  local mode cpu gpu name what
  if [ -n "$emu" ] && [ -z "${GPU_CHECK_LONG_CTX:-}" ]; then
    summary long "SKIP on the emulator (GPU_CHECK_LONG_CTX=N runs it)"
    return
  fi
  if [ ! -e "$f32" ] || [ ! -e "$text" ]; then
    summary long "SKIP no stories260K-f32.gguf or TinyStories excerpt"
    return
  fi
  for mode in dense flashprefill; do
    name="long:$mode"
    common=(--model "$f32" --perplexity "$text" --perplexity-ctx "$lctx" --perplexity-chunks 1 --kv-cache-dtype f32 --kernels matmul=go)
    [ "$mode" = flashprefill ] && common+=(--FlashPrefillV2=on --flashprefill-block-size 128)
    cpu_then_gpu "$name" 240 --no-cpu-fallback || continue
    cpu=$(top perplexity "$log/cpu.json") gpu=$(top perplexity "$log/gpu.json")
    what="ppl cpu $cpu gpu $gpu (ctx $lctx)"
    if near "$cpu" "$gpu" 1e-4; then
      summary "$name" "PASS $what"
    else
      fail "$name" "$what: want ppl within 1e-4"
    fi
  done
}

# kld_and_prefill: the F32 file on the GPU against a base the CPU recorded,
# and both backends' prefill rate.
kld_and_prefill() {
  local f32=$out/models/stories260K-f32.gguf kld secs
  if [ ! -e "$f32" ]; then
    summary kld "SKIP no stories260K-f32.gguf"
    return
  fi
  secs=$(limit 60)
  if [ "$secs" -eq 0 ]; then
    summary kld "SKIP out of time"
    return
  fi
  if ! pb_score cpu "$secs" --model "$f32" --perplexity-chunks 4 --perplexity-ctx "$ctx" --kv-cache-dtype f32 \
    --backend cpu --perplexity-kld-base-out "$log/f32.kld"; then
    fail kld "cpu run: $(why cpu)"
    return
  fi
  if ! pb_score gpu "$secs" --model "$f32" --kv-cache-dtype f32 --pool "${GPU_POOL:-cuda:0}" --perplexity-kld "$log/f32.kld"; then
    fail kld "gpu run: $(why gpu)"
    return
  fi
  kld=$(field mean_kld "$log/gpu.json")
  summary prefill "cpu $(top prefill_tokens_per_second "$log/cpu.json") tok/s, gpu $(top prefill_tokens_per_second "$log/gpu.json") tok/s (stories260K-f32, ctx $ctx)"
  if awk -v k="$kld" 'BEGIN { exit !(k != "" && k < 1e-6) }'; then
    summary kld "PASS mean KLD $kld against the CPU's base"
  else
    fail kld "mean KLD $kld against the CPU's base (want < 1e-6)"
  fi
}

# The roofline: a window's FLOPs (multiply-adds × 2) over the H200's dense
# bf16 peak, PEAK_TFLOPS (989, SXM, no sparsity). Per layer, for T tokens,
# width E, Hq query and Hkv KV heads of D, FFN F: 2·T·E·(Hq·D + 2·Hkv·D)
# for q/k/v, 2·T·Hq·D·E for o, 6·T·E·F for gate, up and down, and
# 2·Hq·D·T·(T+1) for QKᵀ and PV over the causal half; plus 2·R·E·V for the
# LM head on the R = T/2 rows a perplexity window scores (vocabulary V).
# gpu-torch-bench.py counts the same.
flops() { # E HQ HKV D F LAYERS T V
  awk -v e="$1" -v hq="$2" -v hkv="$3" -v d="$4" -v f="$5" -v l="$6" -v t="$7" -v v="$8" 'BEGIN {
    r = int(t / 2)
    printf "%.0f\n", l * (2 * t * e * (hq * d + 2 * hkv * d) + 2 * t * hq * d * e + 6 * t * e * f + 2 * hq * d * t * (t + 1)) + 2 * r * e * v }'
}

# timings: prefill at GPU_CHECK_TIME_CTX of the Qwen3 shapes, plexbench on
# the device against PyTorch eager bf16.
timings() {
  local vocab=$out/data/qwen3-vocab.gguf tctx=${GPU_CHECK_TIME_CTX:-4096} tdir tok shape
  if [ -n "$emu" ] && [ "${GPU_CHECK_TIMINGS:-}" != 1 ]; then
    summary time "SKIP on the emulated device (GPU_CHECK_TIMINGS=1 runs them)"
    return
  fi
  if [ "${GPU_CHECK_QUICK:-}" = 1 ]; then
    summary time "SKIP GPU_CHECK_QUICK=1"
    return
  fi
  if [ ! -e "$vocab" ]; then
    summary time "SKIP no qwen3-vocab.gguf"
    return
  fi
  tdir=$(mktemp -d)
  # Three windows of token ids spread over the vocabulary: the median
  # window is timed (the first may hold one-time work).
  tok=$tdir/tokens.json
  awk -v n=$((3 * tctx + 1)) 'BEGIN { printf "["; for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), (i * 7919 + 13) % 151936; print "]" }' >"$tok"
  for shape in ${GPU_CHECK_TIME_SHAPES:-qwen3-0.6b qwen3-8b}; do
    time_shape "$shape" "$tdir" "$tok" "$tctx" "$vocab"
  done
  rm -rf "$tdir"
}

# time_shape SHAPE DIR TOKENS CTX VOCAB: PyTorch's figure, then each type's.
time_shape() {
  local shape=$1 tdir=$2 tok=$3 tctx=$4 vocab=$5 dims full layers types torch="" secs line typ
  case $shape in
  qwen3-0.6b) dims="1024 16 8 128 3072" full=28 layers=${GPU_CHECK_06B_LAYERS:-28} types="f16 q8_0" ;;
  qwen3-8b) dims="4096 32 8 128 12288" full=36 layers=${GPU_CHECK_8B_LAYERS:-36} types="q4_k_m f16" ;;
  *)
    fail "time:$shape" "unknown shape (qwen3-0.6b or qwen3-8b)"
    return
    ;;
  esac
  secs=$(limit 180)
  if ! python3 -c 'import torch' >/dev/null 2>&1; then
    summary "torch:$shape" "SKIP python3 has no torch"
  elif [ "$secs" -eq 0 ]; then
    summary "torch:$shape" "SKIP out of time"
  elif line=$(timeout "$secs" python3 "$out/gpu-torch-bench.py" --shape "$shape" --layers "$layers" --ctx "$tctx" \
    --device "${GPU_CHECK_TORCH_DEVICE:-cuda}" 2>"$log/torch.err") &&
    torch=$(echo "$line" | sed -n 's/.* \([0-9.]*\) tok\/s.*/\1/p') && [ -n "$torch" ]; then
    summary "torch:$shape" "TIME ${line#torch-bench: }"
  else
    summary "torch:$shape" "SKIP ${line:-}$(tail -1 "$log/torch.err")"
    torch=""
  fi
  for typ in $types; do
    # shellcheck disable=SC2086 # dims is five numbers
    time_one "$shape" "$typ" "$layers" "$full" "$tdir" "$tok" "$tctx" "$vocab" "$torch" $dims
  done
}

# time_one SHAPE TYPE LAYERS FULL DIR TOKENS CTX VOCAB TORCH E HQ HKV D F:
# writes the model, scores three windows on the device, and says the
# median window's tok/s against PyTorch's and the roofline.
time_one() {
  local shape=$1 typ=$2 layers=$3 full=$4 tdir=$5 tok=$6 tctx=$7 vocab=$8 torch=$9
  shift 9
  local e=$1 hq=$2 hkv=$3 d=$4 f=$5 name="time:$shape/$typ" m secs t0 wsecs med fl flfull bpw need avail rc wins stopped=""
  # The file's size: weights × bytes per weight (Q4_K_M ~4.9 bits), the
  # 8B with its own output matrix.
  case $typ in f16) bpw=2 ;; q8_0) bpw=1.0625 ;; *) bpw=0.61 ;; esac
  need=$(awk -v e="$e" -v hq="$hq" -v hkv="$hkv" -v d="$d" -v f="$f" -v l="$layers" -v b="$bpw" -v o="$([ "$shape" = qwen3-8b ] && echo 2 || echo 1)" \
    'BEGIN { printf "%d\n", b * (l * (e * (2 * hq * d + 2 * hkv * d) + 3 * e * f) + o * 151936 * e) / 1048576 }')
  # The first folder with room: /dev/shm is memory, where the file costs
  # no disk write (benchmodel syncs it) and the load reads no disk.
  for m in ${GPU_CHECK_TMP:-/dev/shm $tdir}; do
    avail=$(df -Pm "$m" 2>/dev/null | awk 'NR == 2 { print $4 }')
    [ -w "$m" ] && [ "${avail:-0}" -ge $((need + 2048)) ] && break
    avail=""
  done
  if [ -z "$avail" ]; then
    summary "$name" "SKIP the file needs $need MiB + 2 GiB, not free in ${GPU_CHECK_TMP:-/dev/shm or $tdir} (GPU_CHECK_TMP, or fewer layers)"
    return
  fi
  m=$m/gpu-check-$$-$shape-$typ.gguf
  secs=$(limit 240)
  if [ "$secs" -eq 0 ]; then
    summary "$name" "SKIP out of time"
    return
  fi
  t0=$SECONDS
  if ! timeout "$secs" "$out/benchmodel" -arch "$shape" -type "$typ" -layers "$layers" -vocab "$vocab" -o "$m" 2>"$log/bm.err"; then
    fail "$name" "benchmodel ($need MiB, $((SECONDS - t0)) s): $(head -1 "$log/bm.err")"
    rm -f "$m" "${m%/*}/.${m##*/}".tmp* # a killed writer leaves its temporary file
    return
  fi
  wsecs=$((SECONDS - t0))
  secs=$(limit 240)
  t0=$SECONDS
  if [ "$secs" -eq 0 ]; then
    summary "$name" "SKIP out of time (written in $wsecs s)"
    rm -f "$m"
    return
  fi
  # A run stopped by its timeout still writes the windows it finished.
  pb_score time "$secs" --model "$m" --perplexity-tokens "$tok" --perplexity-ctx "$tctx" --perplexity-chunks 3 \
    --kv-cache-dtype f16 --pool "${GPU_POOL:-cuda:0}" --no-cpu-fallback
  rc=$?
  rm -f "$m"
  wins=$(sed -n 's/^      "seconds": *\([0-9.eE+-]*\),*$/\1/p' "$log/time.json" 2>/dev/null | sort -g)
  if [ -z "$wins" ]; then
    fail "$name" "gpu run ($((SECONDS - t0)) s): $(why time)"
  else
    [ "$rc" -eq 0 ] || stopped="; stopped after $(echo "$wins" | wc -l) of 3 windows: $(why time)"
    med=$(echo "$wins" | awk '{ s[NR] = $1 } END { print s[int((NR + 1) / 2)] }')
    fl=$(flops "$e" "$hq" "$hkv" "$d" "$f" "$layers" "$tctx" 151936)
    flfull=$(flops "$e" "$hq" "$hkv" "$d" "$f" "$full" "$tctx" 151936)
    summary "$name" "TIME $(awk -v c="$tctx" -v s="$med" -v t="$torch" -v fl="$fl" -v ff="$flfull" -v peak="${PEAK_TFLOPS:-989}" \
      -v l="$layers" -v full="$full" -v typ="$typ" -v shape="$shape" -v ws="$wsecs" -v wdir="${m%/*}" -v rs=$((SECONDS - t0)) 'BEGIN {
      if (s <= 0) { print "no window timed"; exit }
      pb = c / s; pct = 100 * fl / s / (peak * 1e12)
      line = sprintf("plexbench %s tok/s", num(pb))
      if (t > 0) line = line sprintf(", PyTorch eager bf16 %s tok/s, %.2fx", num(t), pb / t)
      line = line sprintf(", %.3g%% of the bf16 roofline (%.3g TFLOP/s)", pct, fl / s / 1e12)
      if (l != full) line = line sprintf("; %d of %d layers, ~%s tok/s at %d by FLOPs", l, full, num(pb * fl / ff), full)
      line = line sprintf("; ctx %d, written in %d s to %s, scored in %d s", c, ws, wdir, rs)
      if (typ == "f16" && t > 0) line = line sprintf("; target >= 1.0x PyTorch %s", pb >= t ? "met" : "not met")
      if (shape == "qwen3-8b") line = line sprintf("; target >= 50%% of the roofline %s", pct >= 50 ? "met" : "not met")
      print line }
      function num(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.3g", x) }')${stopped}"
  fi
  rm -f "$m"
}

case "$mode" in
build) build ;;
run) run ;;
all) build && run ;;
*)
  echo "usage: scripts/gpu-check.sh build|run|all" >&2
  exit 2
  ;;
esac
