#!/usr/bin/env bash
# Two commits' fits, alternated in one session (the machine's speed drifts within a session):
#   bash benchmarks/ab_fit_probe.sh OLD NEW DIMS PARTIES [REPS]
# For each commit (a git worktree in $TMPDIR) and each repetition: `python -m benchmarks.fit_probe`
# in a fresh process with the compilation cache off (cold fit: everything compiled; then a warm fit),
# then once to fill a fresh cache directory and once more from it (cold fit with the cache filled).
set -euo pipefail
OLD=$1; NEW=$2; D=$3; J=$4; REPS=${5:-2}
repo=$(git rev-parse --show-toplevel)
py=${PYTHON:-$repo/.venv/bin/python}
tmp=$(mktemp -d)
for c in "$OLD" "$NEW"; do git -C "$repo" worktree add -q --detach "$tmp/$c" "$c"; done
probe() { (cd "$tmp/$1" && BAYES_DPREG_COMPILATION_CACHE=$2 PYTHONPATH="$tmp/$1" "$py" -m benchmarks.fit_probe --dims "$D" --parties "$J" --out "$tmp/probe" 2>/dev/null | grep "fit:" | tr '\n' ' '); }
for rep in $(seq "$REPS"); do
  for c in "$OLD" "$NEW"; do
    echo "rep $rep $c, cache off: $(probe "$c" 0)"
    rm -rf "$tmp/cache"; probe "$c" "$tmp/cache" >/dev/null
    echo "rep $rep $c, cache filled: $(probe "$c" "$tmp/cache")"
  done
done
for c in "$OLD" "$NEW"; do git -C "$repo" worktree remove --force "$tmp/$c"; done
