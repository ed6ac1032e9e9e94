#!/usr/bin/env bash
# Reach tests with real clients, run by .ci/run after `cargo test`:
#   - the wheel: `maturin build --release`, installed into a fresh venv; `torchvet --version`,
#     `python -m torchvet check` on the demo, and the Python API (python/tests/test_api.py);
#   - MCP: the official MCP Python SDK as the client (python/tests/mcp_client.py);
#   - hub scale: Ray Data on a local Ray instance maps torchvet.hub.scan_batch over copies of
#     the committed checkpoint fixtures (python/tests/ray_hub_scan.py);
#   - LSP: headless Neovim (Debian's package) applies a quick fix (editors/nvim/test_quickfix.lua).
# The pre-commit test (python/tests/pre_commit_test.sh) builds torchvet once more inside
# pre-commit's environment; it runs here only with TORCHVET_PRECOMMIT_TEST=1.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
OUT=target/reach
rm -rf "$OUT"
mkdir -p "$OUT"
export PIP_DISABLE_PIP_VERSION_CHECK=1

echo "-- build tools: maturin, pre-commit, mcp (PyPI)"
python3 -m venv "$OUT/tools"
"$OUT/tools/bin/pip" install -q "maturin==1.16.0" "pre-commit==4.7.0"

echo "-- maturin build --release"
start=$(date +%s)
"$OUT/tools/bin/maturin" build --release -o "$OUT/wheels" > "$OUT/maturin.log" 2>&1 \
  || { tail -40 "$OUT/maturin.log"; echo "maturin build failed"; exit 1; }
grep -E "Built wheel|manylinux" "$OUT/maturin.log" | tail -2
wheel=$(ls "$OUT"/wheels/torchvet-*.whl)
echo "built $(basename "$wheel") in $(( $(date +%s) - start ))s ($(du -h "$wheel" | cut -f1))"

echo "-- install into a fresh venv"
python3 -m venv "$OUT/venv"
start=$(date +%s%N)
"$OUT/venv/bin/pip" install -q "$wheel"
echo "installed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
export PATH="$REPO/$OUT/venv/bin:$PATH"
[ "$(command -v torchvet)" = "$REPO/$OUT/venv/bin/torchvet" ] || { echo "torchvet is not the wheel's"; exit 1; }
torchvet --version
set +e
python -m torchvet check examples/demo_project --output-format concise --quiet > "$OUT/demo.txt"
status=$?
set -e
[ "$status" -eq 1 ] || { echo "python -m torchvet check on the demo exited $status (expected 1)"; exit 1; }
grep -q TV007 "$OUT/demo.txt" || { echo "demo findings missing"; cat "$OUT/demo.txt"; exit 1; }
echo "python -m torchvet check examples/demo_project: $(wc -l < "$OUT/demo.txt") findings"

echo "-- Python API"
(cd "$OUT" && python -m unittest discover -s "$REPO/python/tests" -p "test_*.py")

echo "-- MCP (official Python SDK)"
"$OUT/venv/bin/pip" install -q "mcp==2.3.0"
python python/tests/mcp_client.py "$(command -v torchvet)"

echo "-- hub scale: Ray Data on a local instance over torchvet.hub.scan_batch"
"$OUT/venv/bin/pip" install -q "ray[data]==2.60.0"
python python/tests/ray_hub_scan.py 2> "$OUT/ray.log" || { tail -40 "$OUT/ray.log"; echo "Ray Data scan failed"; exit 1; }

echo "-- LSP (headless Neovim)"
if ! command -v nvim >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim) > "$OUT/apt.log" 2>&1 \
    || { cat "$OUT/apt.log"; echo "cannot install neovim"; exit 1; }
fi
mkdir -p "$OUT/nvim"
cp resources/test/editor/train.py resources/test/editor/pyproject.toml "$OUT/nvim/"
TORCHVET="$(command -v torchvet)" TORCHVET_TEST_FILE="$REPO/$OUT/nvim/train.py" \
  XDG_STATE_HOME="$REPO/$OUT/nvim" XDG_CACHE_HOME="$REPO/$OUT/nvim" \
  timeout 120 nvim --headless -u NONE -i NONE -c "luafile editors/nvim/test_quickfix.lua" 2>&1
echo

if [ "${TORCHVET_PRECOMMIT_TEST:-0}" = 1 ]; then
  echo "-- pre-commit"
  # Its own target directory: a second checkout of the same workspace must never share one
  # (cargo matches units by workspace-relative paths and source mtimes, so the other
  # checkout's binary can be taken as up to date for this one).
  CARGO_TARGET_DIR="$REPO/target/pre-commit" python/tests/pre_commit_test.sh "$REPO/$OUT/tools/bin/pre-commit"
fi
echo "reach tests passed"
