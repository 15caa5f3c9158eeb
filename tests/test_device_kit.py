"""The kit for the lent GPU machine (docs/gpu.md): what the GPU check imports is there or travels.

That machine has no network: every distribution that scripts/gpu_check.py and the two GPU test files
import must be preinstalled there (scripts/device_packages.txt) or carried as a wheel
(scripts/device_wheels.txt, fetched by scripts/device_wheels.sh).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
ENTRIES = ("scripts/gpu_check.py", "tests/engines/test_hf_engine_gpu.py", "tests/runner/learner/test_learner_gpu.py")
# Lazy imports inside modules the check loads, on paths it never takes there (rewards are random,
# video is decoded with PyAV): they need not be on the machine.
OFF_THE_PATH = {
    "datasets": "records from saved Hugging Face datasets (evr1.data.tables)",
    "decord": "the optional 'decord' decode backend",
    "jiwer": "the OCR reward",
    "liger_kernel": "the optional fused log-prob kernel (trainer.logprob_kernel='liger'; not in the GPU kit)",
    "math_verify": "the math reward",
    "nltk": "the open-ended reward's stemmer",
    "rouge_score": "the open-ended reward",
    "torchcodec": "the optional 'torchcodec' decode backend",
}
# The machine's interpreter, for environment markers in requirements.
DEVICE_ENV = default_environment() | {"python_version": "3.12", "python_full_version": "3.12.3",
                                      "sys_platform": "linux", "platform_machine": "x86_64"}
PROBE = """
import importlib.util, json, sys
import pytest
spec = importlib.util.spec_from_file_location("gpu_check", "scripts/gpu_check.py")
module = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = module
spec.loader.exec_module(module)
code = pytest.main(["--collect-only", "-qq", "-p", "no:cacheprovider", *sys.argv[2:]])
files = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
open(sys.argv[1], "w").write(json.dumps({"exit": int(code), "files": [f for f in files if f]}))
"""


def _names(path: Path) -> set[str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return {canonicalize_name(Requirement(line).name) for line in lines if line and not line.startswith("#")}


def _pins() -> dict[str, Requirement]:
    lines = (line.strip() for line in (SCRIPTS / "device_wheels.txt").read_text().splitlines())
    reqs = [Requirement(line) for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(r.name): r for r in reqs}


def _version(pin: Requirement) -> str:
    (spec,) = pin.specifier
    assert spec.operator == "==", f"{pin}: pin one version"
    return spec.version


def _requires(dist: str) -> dict[str, Requirement]:
    """What the installed `dist` requires on the machine (no extras), by canonical name."""
    reqs = map(Requirement, md.requires(dist) or [])
    return {canonicalize_name(r.name): r for r in reqs if not r.marker or r.marker.evaluate(DEVICE_ENV | {"extra": ""})}


def _imports(path: Path) -> set[str]:
    """Absolute module names imported anywhere in `path` (function bodies too), `from a import b` as a and a.b."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _own_file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _loaded_files(tmp_path: Path) -> list[Path]:
    """Our files loaded by importing scripts/gpu_check.py and collecting the GPU tests, in a fresh interpreter."""
    out = tmp_path / "probe.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), *ENTRIES[1:]], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=240, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    probe = json.loads(out.read_text())
    assert probe["exit"] == 0, proc.stdout[-2000:]
    files = {Path(f).resolve() for f in probe["files"]}
    return sorted(f for f in files if f.is_relative_to(ROOT) and ".venv" not in f.parts and f.suffix == ".py"
                  and f.is_file())


def _third_party_imports(tmp_path: Path) -> dict[str, set[str]]:
    """Top-level third-party modules imported by the loaded files and every evr1 module they import, -> files."""
    todo, seen, found = _loaded_files(tmp_path), set(), {}
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module in _imports(path):
            top = module.partition(".")[0]
            if top in ("evr1", "tests") or top in sys.stdlib_module_names or (path.parent / f"{top}.py").is_file():
                if own := _own_file(module):
                    todo.append(own.resolve())
            else:
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    assert ROOT / "scripts" / "gpu_check.py" in seen and ROOT / "evr1" / "data" / "cache_build.py" in seen
    return found


def test_every_import_of_the_gpu_check_is_on_the_machine_or_travels(tmp_path: Path) -> None:
    allowed = _names(SCRIPTS / "device_packages.txt") | set(_pins())
    dists = md.packages_distributions()
    found = _third_party_imports(tmp_path)
    assert {"torch", "transformers", "pydantic", "lmdb", "av", "pytest"} <= set(found)
    missing = {}
    for top, files in found.items():
        if top in OFF_THE_PATH:
            continue
        names = {canonicalize_name(d) for d in dists.get(top, [])}
        if not names & allowed:
            missing[top] = (sorted(names) or "not installed here", sorted(files)[:3])
    assert not missing, f"imported, but neither on the GPU machine nor in scripts/device_wheels.txt: {missing}"
    assert set(OFF_THE_PATH) <= set(found), f"stale OFF_THE_PATH entries: {set(OFF_THE_PATH) - set(found)}"


def test_each_wheel_finds_what_it_requires() -> None:
    pins, device = _pins(), _names(SCRIPTS / "device_packages.txt")
    assert not set(pins) & {"torch", "torchvision", "numpy"}, "these come with the machine's CUDA build"
    problems = []
    for name in pins:
        for dep, req in _requires(name).items():
            if dep in pins:
                if _version(pins[dep]) not in req.specifier:
                    problems.append(f"{name} needs {req}, the list pins {pins[dep]}")
            elif dep not in device:
                problems.append(f"{name} needs {req}: not on the machine, not in the list")
    assert not problems, problems


def test_wheel_pins_are_inside_pyproject_and_needed() -> None:
    pins = _pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    for name, pin in pins.items():
        if name in wanted:
            assert _version(pin) in wanted[name].specifier, f"{pin} is outside pyproject's {wanted[name]}"
        else:
            needed_by = [other for other in pins if name in _requires(other)]
            assert needed_by, f"{pin} is neither a dependency of evr1 nor of another listed wheel"


@pytest.mark.parametrize("script", ["device_wheels.sh", "device_check.sh", "gpu_check.sh"])
def test_scripts_parse(script: str) -> None:
    proc = subprocess.run(["bash", "-n", str(SCRIPTS / script)], check=False, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_device_check_without_wheels_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPTS / "device_check.sh", tmp_path / "scripts")
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "device_check.sh")], check=False, capture_output=True,
                          text=True, env=dict(os.environ, OUT=str(out)), timeout=30)
    assert proc.returncode == 2
    assert "run scripts/device_wheels.sh first" in (out / "device_check.log").read_text()
