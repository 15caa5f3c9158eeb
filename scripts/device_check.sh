#!/usr/bin/env bash
# The one command a session lent a GPU machine runs there (docs/gpu.md):
#   run(command="bash scripts/device_check.sh", carry=[".whl"], timeout_s=570)
# after scripts/device_wheels.sh has filled .whl/ here. Installs the wheels into $SITE, prints the
# versions and the GPU, then runs every part, each under its own time limit, whatever the others
# did: the GPU check (scripts/gpu_check.sh, figures in $OUT/gpu_check.json) and the two GPU test
# files that can run there (vLLM cannot). Exits 1 if any part failed. Files in $OUT: device_check.log
# (all output), gpu_check.json, junit_hf_engine.xml, junit_learner.xml.
# TINY=1 runs the same plumbing without a GPU: gpu_check --tiny on CPU, the GPU tests skip.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
SITE=${SITE:-/tmp/site}
OUT=${OUT:-/tmp/device_check}
TINY=${TINY:-0}
mkdir -p "$OUT"

failed=()
part() {  # part NAME SECONDS COMMAND...: run one part under `timeout`, note it if it fails
  local name=$1 limit=$2 rc
  shift 2
  echo "=== $name (limit ${limit}s)"
  timeout "$limit" "$@"
  rc=$?
  [ "$rc" -eq 124 ] && echo "=== $name: timed out after ${limit}s"
  echo "=== $name: exit $rc"
  [ "$rc" -eq 0 ] || failed+=("$name")
}

main() {
  if ! compgen -G ".whl/*.whl" >/dev/null; then
    echo "device_check: no wheels in .whl/: run scripts/device_wheels.sh first and carry .whl" >&2
    return 2
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    || { echo "device_check: installing .whl/ into $SITE failed" >&2; return 2; }
  export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHON="$PY" PYTHONUNBUFFERED=1 OUT TINY
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # no network there: fail at once instead of waiting

  part versions 45 "$PY" - <<'PY'
import importlib.metadata as md, os, sys, torch
print("python", sys.version.split()[0], sys.executable)
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA GPU"
print("torch", torch.__version__, "cuda", torch.version.cuda, gpu)
for name in ("transformers", "tokenizers", "huggingface-hub", "safetensors", "accelerate", "torchvision", "numpy",
             "pydantic", "lmdb", "av", "pytest"):
    print(f"{name} {md.version(name)} ({md.distribution(name).locate_file('')})")
if os.environ["TINY"] != "1" and not torch.cuda.is_available():
    sys.exit("device_check: torch sees no CUDA GPU (TINY=1 runs the CPU smoke test)")
PY
  if command -v nvidia-smi >/dev/null; then nvidia-smi; fi

  local tiny=()
  [ "$TINY" = 1 ] && tiny=(--tiny --steps 2)
  if [ "${QWEN35:-0}" = 1 ]; then  # the hybrid Qwen3.5 check in place of the Qwen2.5-VL one (docs/gpu.md)
    part gpu_check_qwen35 "${GPU_CHECK_S:-240}" bash scripts/gpu_check.sh "${tiny[@]}" --family qwen3.5 \
      --json "$OUT/gpu_check_qwen35.json"
  else
    part gpu_check "${GPU_CHECK_S:-240}" bash scripts/gpu_check.sh "${tiny[@]}"
  fi
  local pytest=("$PY" -m pytest -p no:cacheprovider -rs -q)
  part hf_engine_tests "${HF_TESTS_S:-110}" "${pytest[@]}" --junitxml="$OUT/junit_hf_engine.xml" tests/engines/test_hf_engine_gpu.py
  part learner_tests "${LEARNER_TESTS_S:-100}" "${pytest[@]}" --junitxml="$OUT/junit_learner.xml" tests/runner/learner/test_learner_gpu.py

  if [ ${#failed[@]} -gt 0 ]; then
    echo "device_check: FAILED: ${failed[*]}"
    return 1
  fi
  echo "device_check: all parts passed"
}

main 2>&1 | tee "$OUT/device_check.log"
exit "${PIPESTATUS[0]}"
