#!/usr/bin/env bash
# newcomer.sh: a newcomer's first session, scripted. Clones this repository
# (its committed HEAD) into a temporary folder and there:
#   1. runs `make demo`: at most 30 lines on the terminal, and a JSON report
#      in the file the output names;
#   2. runs every command in README.md's ```sh blocks, in order, as written
#      (backslash continuations joined), each of which must exit 0; where a
#      ```text block follows, the figures it shows that do not depend on
#      timing (PPL ±, KLD ±, acc_norm and its interval, token counts) must
#      appear in what the commands printed;
#   3. checks that every relative link in README.md and docs/*.md names a
#      file that exists.
# `make demo` (run in step 1) and `make test` (CI's own stage) are not run
# again, nor a command that ends in a `# newcomer: skip (why)` comment (a
# server that runs until stopped: its own tests exercise it). `go install` goes to a temporary GOBIN that is put first on PATH, so
# `plexbench` is the clone's. A few minutes at most; the Go build cache is
# shared. NEWCOMER_KEEP=1 keeps the folder (each block's output in
# newcomer-logs/).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
if [ "${NEWCOMER_KEEP:-}" = 1 ]; then
  echo "newcomer: working in $work (kept)"
else
  trap 'rm -rf "$work"' EXIT
fi
fails=0
fail() { echo "newcomer: FAIL: $*" >&2; fails=$((fails + 1)); }
say() { echo "newcomer: $*"; }

git clone -q "$src" "$work/plexbench"
cd "$work/plexbench"
logs=$work/plexbench/newcomer-logs
mkdir -p "$logs"
export GOBIN=$work/gobin PATH=$work/gobin:$PATH
unset PLEXBENCH_RESULTS PLEXBENCH_CPU

# --- 1. make demo ---------------------------------------------------------------
t0=$SECONDS
rc=0
make demo >"$logs/demo.out" 2>&1 || rc=$?
n=$(wc -l <"$logs/demo.out")
say "make demo: exit $rc, $n lines, $((SECONDS - t0))s"
[ "$rc" -eq 0 ] || fail "make demo exited $rc: $(tail -3 "$logs/demo.out")"
[ "$n" -le 30 ] || fail "make demo printed $n lines (at most 30)"
# The report is the .json file the output names (a path that exists here).
report=""
for w in $(grep -o '[^ "'\''`(]*\.json' "$logs/demo.out" | sort -u); do
  if [ -f "$w" ] && head -c 4096 "$w" | grep -q '"perplexity"'; then
    report=$w
    break
  fi
done
if [ -z "$report" ]; then
  fail "make demo named no report file that exists and holds a perplexity"
else
  say "make demo: report in $report ($(wc -c <"$report") bytes)"
  grep -q 'PPL' "$logs/demo.out" || fail "make demo's output does not show the PPL"
fi

# --- 2. the README's commands ----------------------------------------------------
# blocks: one file per ```sh block (commands, continuations joined) and,
# where a ```text block follows it, its expected output.
awk -v dir="$logs" '
  /^```sh[[:space:]]*$/ { n++; inb = 1; cmd = dir "/block" n ".sh"; printf "" > cmd; next }
  /^```text[[:space:]]*$/ { if (n && last == n) { intext = 1; out = dir "/block" n ".expected"; printf "" > out }; next }
  /^```/ { if (inb) last = n; inb = 0; intext = 0; next }
  inb { line = line $0; if (line ~ /\\$/) { sub(/\\$/, "", line); next } print line > cmd; line = ""; next }
  intext { print > out; next }
  /[^[:space:]]/ { last = 0 }
' README.md
figures='PPL = [0-9.]+ \+/- [0-9.]+|acc_norm [0-9.]+% \[[0-9.]+%, [0-9.]+%\]|\([0-9.]+ ± [0-9.]+\)e-[0-9]+|[0-9]+ tokens to score|over [0-9]+ tasks, [0-9]+ right'
ran=0
for cmdfile in $(ls "$logs"/block*.sh 2>/dev/null | sort -V); do
  b=${cmdfile%.sh}
  : >"$b.out"
  while IFS= read -r c; do
    case "$c" in
    '' | '#'*) continue ;;
    'make demo'* | 'make test'*) say "skip: $c (run above / CI's test stage)"; continue ;;
    *'# newcomer: skip'*) say "skip: $c"; continue ;;
    esac
    t0=$SECONDS
    rc=0
    timeout 300 bash -c "$c" >>"$b.out" 2>&1 || rc=$?
    ran=$((ran + 1))
    say "$(basename "$b"): exit $rc, $((SECONDS - t0))s: $c"
    [ "$rc" -eq 0 ] || fail "README command exited $rc: $c: $(tail -2 "$b.out")"
  done <"$cmdfile"
  if [ -f "$b.expected" ]; then
    while IFS= read -r want; do
      grep -qF -- "$want" "$b.out" || fail "$(basename "$b"): the README shows '$want'; the commands printed no such figure"
    done < <(grep -oE "$figures" "$b.expected" | sort -u)
  fi
done
[ "$ran" -ge 4 ] || fail "only $ran commands found in README.md's sh blocks"

# --- 3. links --------------------------------------------------------------------
for md in README.md docs/*.md; do
  d=$(dirname "$md")
  for target in $(grep -oE '\]\([^)#[:space:]]+' "$md" | sed 's/^](//'); do
    case "$target" in http://* | https://* | mailto:*) continue ;; esac
    [ -e "$d/$target" ] || fail "$md links to $target, which does not exist"
  done
done

if [ "$fails" -gt 0 ]; then
  say "$fails failure(s)"
  exit 1
fi
say "ok: make demo and $ran README commands"
