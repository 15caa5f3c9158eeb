#!/usr/bin/env bash
# Fetch into .whl/ the wheels that the lent GPU machine lacks (scripts/device_wheels.txt): cp312
# manylinux x86_64, no dependencies resolved (the list names each one). Run it here, where the
# package registry is reached; then scripts/device_check.sh runs there with `carry=[".whl"]`.
# Checks that each wheel's own requirements are on the machine (scripts/device_packages.txt) or in
# the list at a version they accept, and prints the size that will travel (64 MiB at most).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
LIMIT=$((64 * 1024 * 1024))

mapfile -t pins < <(grep -v '^\s*#' scripts/device_wheels.txt | grep -v '^\s*$')
rm -rf .whl
mkdir .whl
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
"$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" -d .whl "${pins[@]}" 2> >(grep -v "^WARNING: Location" >&2)

"$PY" - "${pins[@]}" <<'PY'
"""One wheel per pin, at the pinned version; each wheel's requirements met by the machine or the list."""
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

pins = {canonicalize_name(r.name): r for r in map(Requirement, sys.argv[1:])}
device = {canonicalize_name(line.strip()) for line in Path("scripts/device_packages.txt").read_text().splitlines()
          if line.strip() and not line.startswith("#")}
wheels = {}
for path in sorted(Path(".whl").glob("*.whl")):
    name, version, _, _ = parse_wheel_filename(path.name)
    if name in wheels:
        sys.exit(f"device_wheels: two wheels of {name} in .whl/")
    wheels[name] = (version, path)
errors = [f"{n}: no wheel fetched" for n in pins if n not in wheels]
errors += [f"{path.name}: not in scripts/device_wheels.txt" for n, (_, path) in wheels.items() if n not in pins]
env = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "platform_system": "Linux",
       "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "extra": ""}
for name, (version, path) in wheels.items():
    if name in pins and version not in pins[name].specifier:
        errors.append(f"{path.name}: version {version} is not the pin {pins[name]}")
    with zipfile.ZipFile(path) as whl:
        meta = next(f for f in whl.namelist() if f.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(whl.read(meta).decode()).get_all("Requires-Dist") or []
    for req in map(Requirement, requires):
        if req.marker and not req.marker.evaluate(env):
            continue
        dep = canonicalize_name(req.name)
        if dep in wheels:
            if wheels[dep][0] not in req.specifier:
                errors.append(f"{path.name} needs {req}, the list has {dep} {wheels[dep][0]}")
        elif dep not in device:
            errors.append(f"{path.name} needs {req}: neither on the machine nor in scripts/device_wheels.txt")
if errors:
    sys.exit("device_wheels:\n  " + "\n  ".join(errors))
PY

wheels=$(du -cb .whl/*.whl | tail -1 | cut -f1)
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | awk '/\ttotal$/ {s += $1} END {print s}')
ls -l .whl
awk -v w="$wheels" -v t="$tree" 'BEGIN { m = 1048576
  printf "wheels %.1f MiB + working tree %.1f MiB = %.1f MiB of the 64 MiB a device call may carry\n", w / m, t / m, (w + t) / m }'
if [ $((wheels + tree)) -ge $LIMIT ]; then
  echo "device_wheels: over the 64 MiB limit" >&2
  exit 1
fi
