#!/usr/bin/env bash
# pre-commit itself (from PyPI) runs this repository's hooks (.pre-commit-hooks.yaml) in a
# scratch git repository that has a bug, as a user's repository would:
#   1. the `torchvet` hook fails on the finding and names it; a clean file passes;
#   2. `git commit` is refused by the installed hook;
#   3. the `torchvet-fix` hook applies the safe fix (and fails, as pre-commit does when a hook
#      changes files); the next run passes and the commit goes through.
# pre-commit installs the hook by building this repository (committed HEAD) with pip and
# maturin: the first run compiles torchvet (minutes); PRE_COMMIT_HOME keeps the result.
# CARGO_TARGET_DIR may point at a dedicated directory to reuse compiled dependencies between
# runs, but never at this checkout's own target/: cargo would take the clone's binary for
# this checkout's (same workspace-relative paths; freshness judged by source mtimes).
# Usage: python/tests/pre_commit_test.sh [pre-commit executable]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PRE_COMMIT=${1:-pre-commit}
REV=$(git -C "$REPO" rev-parse HEAD)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PRE_COMMIT_HOME=${PRE_COMMIT_HOME:-$WORK/cache}
fail() { echo "pre-commit test FAILED: $*"; exit 1; }

git init -q "$WORK/scratch"
cd "$WORK/scratch"
git config user.email test@example.invalid
git config user.name test
cat > .pre-commit-config.yaml <<EOF
repos:
  - repo: $REPO
    rev: $REV
    hooks:
      - id: torchvet
EOF
# A project on torch 2.4, where a bare `torch.load` still unpickles; it writes the checkpoint
# itself with tensors only, so adding `weights_only=True` is a safe fix.
cat > requirements.txt <<'EOF'
torch==2.4.1
EOF
cat > train.py <<'EOF'
import torch

torch.save({"w": torch.zeros(2)}, "model.pt")
state = torch.load("model.pt")
EOF
cat > util.py <<'EOF'
def add(a, b):
    return a + b
EOF
git add .

start=$(date +%s)
set +e
"$PRE_COMMIT" run --files train.py util.py > run1.log 2>&1
status=$?
set -e
echo "first run (installs the hook environment: builds torchvet): $(( $(date +%s) - start ))s"
[ "$status" -eq 1 ] || { cat run1.log; fail "expected the hook to fail on train.py (status $status)"; }
grep -q "TV007" run1.log || { cat run1.log; fail "the finding is not in the hook output"; }
grep -q "torchvet.*Failed" run1.log || { cat run1.log; fail "pre-commit did not report the hook as failed"; }
"$PRE_COMMIT" run --files util.py > run2.log 2>&1 || { cat run2.log; fail "a clean file must pass"; }
grep -q "torchvet.*Passed" run2.log || { cat run2.log; fail "no Passed line"; }

"$PRE_COMMIT" install >/dev/null
if git commit -qm "add a bug" > commit.log 2>&1; then
  fail "git commit went through despite the finding"
fi
grep -q "TV007" commit.log || { cat commit.log; fail "the commit hook did not show the finding"; }

cat > .pre-commit-config.yaml <<EOF
repos:
  - repo: $REPO
    rev: $REV
    hooks:
      - id: torchvet-fix
      - id: torchvet
EOF
git add .pre-commit-config.yaml
set +e
"$PRE_COMMIT" run --files train.py > run3.log 2>&1
status=$?
set -e
[ "$status" -eq 1 ] || { cat run3.log; fail "torchvet-fix must report that it changed a file"; }
grep -q "files were modified by this hook" run3.log || { cat run3.log; fail "pre-commit did not see the fix"; }
grep -q 'torch.load("model.pt", weights_only=True)' train.py || { cat train.py; fail "the fix was not applied"; }
git add train.py
"$PRE_COMMIT" run --files train.py util.py > run4.log 2>&1 || { cat run4.log; fail "after the fix the hooks must pass"; }
git commit -qm "load weights only" || fail "the commit of the fixed file was refused"
echo "pre-commit test passed: hook failed on the bug and blocked the commit; torchvet-fix fixed it; the commit went through"
