#!/usr/bin/env bash
# The README's screenshot, from a real run: the TUI's A/B of the embedded
# demo model (f32 against f16 KV cache, ctx 128) in a 100×32 tmux pane, captured with
# its colours when the verdict is on screen and drawn as SVG by Charm's
# freeze (go install github.com/charmbracelet/freeze@v0.2.2). Needs tmux.
#   scripts/screenshot.sh [OUT.svg]   (default docs/tui-ab.svg)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/tui-ab.svg}
freeze=$(command -v freeze || echo "$(go env GOPATH)/bin/freeze")
[ -x "$freeze" ] || { echo "screenshot: freeze not found (go install github.com/charmbracelet/freeze@v0.2.2)" >&2; exit 1; }
command -v tmux >/dev/null || { echo "screenshot: tmux not found" >&2; exit 1; }
go build -o bin/plexbench ./cmd/plexbench
bin=$PWD/bin/plexbench
dir=$(mktemp -d)
session=plexbench-shot-$$
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$dir"' EXIT
cd "$dir"
"$bin" profile new f32kv --perplexity-ctx 128 --kv-cache-dtype f32 -o f32kv.toml
"$bin" profile new f16kv --perplexity-ctx 128 --kv-cache-dtype f16 -o f16kv.toml
tmux new-session -d -s "$session" -x 100 -y 32 \
  "TERM=xterm-256color COLORTERM=truecolor '$bin' tui --profile f32kv.toml --profile f16kv.toml; sleep 60"
for _ in $(seq 120); do
  tmux capture-pane -t "$session" -p | grep -q '^saved:' && break
  sleep 1
done
tmux capture-pane -t "$session" -p -e | sed -e 's/[[:space:]]*$//' >frame.ans
cd - >/dev/null
"$freeze" --language ansi --window --font.family monospace -o "$out" "$dir/frame.ans" >/dev/null
echo "screenshot: $out"
