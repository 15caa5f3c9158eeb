"""A real plugin distribution with an `evr1.rewards` entry point is found by name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EVR1 = str(Path(sys.executable).parent / "evr1")

PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "acme-rewards"
version = "0.0.1"

[project.entry-points."evr1.rewards"]
"acme/st_iou" = "acme_rewards:st_iou"
"acme/broken" = "acme_rewards:does_not_exist"
"multiple_choice" = "acme_rewards:st_iou"

[tool.setuptools]
py-modules = ["acme_rewards"]
"""

PLUGIN_MODULE = '''
def st_iou(response, answer):
    """Spatio-temporal IoU, the acme way."""
    return 1.0 if response == answer else 0.0
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install` the throwaway distribution into its own folder (a real dist-info)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "src").mkdir()
    (root / "src" / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (root / "src" / "acme_rewards.py").write_text(PLUGIN_MODULE)
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(root / "src")],
        check=True,
        capture_output=True,
    )
    assert list(site.glob("acme_rewards-0.0.1.dist-info"))
    return site


def _run(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_plugin_is_found_by_name(plugin_site: Path) -> None:
    code = textwrap.dedent(
        """
        from evr1.registry import REWARDS
        assert "acme/st_iou" in REWARDS.names()
        fn = REWARDS.get("acme/st_iou")
        print(fn("x", "x"), fn("x", "y"))
        d = REWARDS.describe("acme/st_iou")
        print(d.module, "|", d.summary, "|", d.origin)
        """
    )
    out = _run(plugin_site, sys.executable, "-c", code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "1.0 0.0"
    assert lines[1] == "acme_rewards | Spatio-temporal IoU, the acme way. | entry point (acme-rewards)"


def test_broken_plugin_names_itself(plugin_site: Path) -> None:
    code = "from evr1.registry import REWARDS\nREWARDS.get('acme/broken')"
    out = _run(plugin_site, sys.executable, "-c", code)
    assert out.returncode != 0
    assert "rewards plugin 'acme/broken' (acme_rewards:does_not_exist, from acme-rewards) failed to load" in out.stderr


def test_cli_lists_the_plugin(plugin_site: Path) -> None:
    out = _run(plugin_site, EVR1, "list", "rewards")
    assert out.returncode == 0, out.stderr
    assert "acme/st_iou" in out.stdout
    assert "Spatio-temporal IoU, the acme way." in out.stdout
    assert "acme/broken" in out.stdout and "broken: rewards plugin 'acme/broken'" in out.stdout


def test_plugin_named_like_a_builtin_is_an_error_naming_both(plugin_site: Path) -> None:
    code = textwrap.dedent(
        """
        from evr1.registry import REWARDS, RegistrationError
        print(REWARDS.get("numerical").__module__)  # the other names keep working
        try:
            REWARDS.get("multiple_choice")
        except RegistrationError as exc:
            print(exc)
        """
    )
    out = _run(plugin_site, sys.executable, "-c", code)
    assert out.returncode == 0, out.stderr
    numerical, error = out.stdout.strip().splitlines()
    assert numerical.startswith("evr1.")
    assert error.startswith(
        "rewards plugin 'multiple_choice' (acme_rewards:st_iou, from acme-rewards) collides with the builtin rewards name"
        " 'multiple_choice' from evr1."
    )
    assert "must be namespaced and unique, e.g. 'yourpkg/multiple_choice'" in error and "uninstall acme-rewards" in error
    listed = _run(plugin_site, EVR1, "list", "rewards")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"multiple_choice +broken: rewards plugin 'multiple_choice' \(acme_rewards:st_iou", listed.stdout)
