#!/usr/bin/env bash
# The GPU check, one prepared run (a few minutes on one GPU; killed at 9 minutes): the learner and
# the HF engine on a random-init ~0.4B Qwen2.5-VL, bf16 + sdpa, cache vs live media. Needs torch
# (CUDA), transformers and evr1's small dependencies; nothing is downloaded. Writes the figures to
# $OUT/gpu_check.json (default docs/) and prints the table. Extra arguments go to gpu_check.py
# (`--tiny` runs it on CPU with the tiny test model). On the lent GPU machine, run it through
# scripts/device_check.sh, which brings the missing packages (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python

missing=$("$PY" - <<'PY'
import importlib.util
need = {"torch": "torch", "transformers": "transformers", "pydantic": "pydantic", "lmdb": "lmdb", "av": "av",
        "filelock": "filelock", "numpy": "numpy", "PIL": "pillow"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
if [ -n "$missing" ]; then
  echo "gpu_check: missing packages: $missing (on the lent GPU machine use scripts/device_check.sh: docs/gpu.md)" >&2
  exit 2
fi
"$PY" -c "import evr1" 2>/dev/null || export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
OUT=${OUT:-docs}
mkdir -p "$OUT"
exec timeout 540 "$PY" scripts/gpu_check.py --json "$OUT/gpu_check.json" "$@"
