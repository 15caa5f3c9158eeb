"""A misspelt field in an experiment file is one line naming the file, the line and the spec, exit status 2
(`evr1.config_typos`), whether the experiment function, a variant or the file's top level writes it.

Commands run in this process (`cli_inproc`); what they import is undone after each test."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_inproc import evr1

TYPOS = '''
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import AlgoSpec, TrainerSpec


def experiment():
    cfg = fdl.Config(Experiment, trainer=fdl.Config(TrainerSpec))
    cfg.trainer.val_evry = 10
    return cfg


def keyword():
    return fdl.Config(Experiment, trainer=fdl.Config(TrainerSpec, step=10))


def two():
    return fdl.Config(Experiment, algo=fdl.Config(AlgoSpec, clip_hihg=0.3, advantag="grpo"))


def positional():
    return fdl.Config(Experiment, trainer=fdl.Config(TrainerSpec, 10))  # refused by Fiddle, but no field is misspelt
'''

TOP_LEVEL = '''
import fiddle as fdl

from evr1.experiment import Experiment
from evr1.specs import TrainerSpec

BASE = fdl.Config(TrainerSpec, steps=3)
BASE.sed = 1


def experiment():
    return fdl.Config(Experiment, trainer=BASE)
'''


@pytest.fixture
def project(tmp_path: Path, experiment_imports_restored: None) -> Path:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "typos.py").write_text(TYPOS)
    (tmp_path / "experiments" / "top.py").write_text(TOP_LEVEL)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("typos", ("typos.py, line 10 (cfg.trainer.val_evry = 10): TrainerSpec has no field 'val_evry'."
                   " Did you mean 'val_every'? Fields: steps, prompts_per_step,")),
        ("typos:keyword", ("typos.py, line 15 (return fdl.Config(Experiment, trainer=fdl.Config(TrainerSpec, step=10))):"
                           " TrainerSpec has no field 'step'. Did you mean 'steps'?")),
        ("typos:two", "AlgoSpec has no fields 'clip_hihg', 'advantag'. Did you mean 'clip_high', 'advantage'? Fields:"),
        ("top", "top.py, line 8 (BASE.sed = 1): TrainerSpec has no field 'sed'. Did you mean 'seed'?"),
    ],
)
@pytest.mark.parametrize("command", ["show", "run"])
def test_a_misspelt_field_is_one_line_naming_the_file_and_line(project: Path, command: str, name: str,
                                                                message: str) -> None:
    out = evr1(command, name, *(["--dry-run"] if command == "run" else []), cwd=project)
    assert out.returncode == 2, out
    assert out.stderr.startswith(f"error: {project / 'experiments'}/"), out.stderr
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stdout == ""


def test_other_errors_of_the_experiment_code_keep_their_traceback(project: Path) -> None:
    with pytest.raises(TypeError, match="Cannot bind arguments to .*TrainerSpec.*: too many positional arguments"):
        evr1("show", "typos:positional", cwd=project)
