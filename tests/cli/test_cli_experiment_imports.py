"""How experiment files are imported, where a review found them break: a file named like a standard-library
module; a sibling package of two folders; a class an experiment file defines, pickled; one file imported both
as a sibling and as an experiment; a resume whose file loads another at import, that one gone; a run loaded
in the process that built it; an import error met twice; a dependency's copy and original both gone."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest
from test_cli_experiment_deps import QUICKSTART, listed_labels, project
from test_cli_experiments import evr1_process as evr1

from evr1.errors import ConfigError

pytestmark = pytest.mark.usefixtures("experiment_imports_restored")  # what a test imports here is undone after it

REWARD = '''
from evr1.registry import REWARDS
from evr1.rewards import per_sample


@REWARDS.register("{name}")
@per_sample
def r(inp, spec):
    return 1.0
'''

BUILT_ON_QUICKSTART = f'''
from evr1.experiment_files import load_config


def experiment():
    """On the quickstart."""
    return load_config("{QUICKSTART}:debug")[0]
'''


def test_a_file_named_like_a_standard_module_leaves_that_module_alone(tmp_path: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "random.py").write_text("import random\n" + REWARD.format(name="stdname/r") + BUILT_ON_QUICKSTART)
    (tmp_path / "experiments" / "other.py").write_text("import random\nSEED = random.randint(0, 10)\n" + BUILT_ON_QUICKSTART)
    listed = evr1("list", "experiments", cwd=tmp_path)  # imports random.py once, and other.py gets the standard random
    assert listed.returncode == 0, listed.stderr
    assert "broken" not in listed.stdout and listed_labels(listed.stdout) == ["other", "random"]
    shown = evr1("show", "other", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr


def test_a_sibling_package_of_two_folders_is_imported_once_each(tmp_path: Path) -> None:
    from evr1.experiment_files import load_config
    from evr1.registry import REWARDS

    uses_lib = "from lib.sub import r\n" + BUILT_ON_QUICKSTART
    for folder in ("X", "Y"):
        (tmp_path / folder / "lib").mkdir(parents=True)
        (tmp_path / folder / "lib" / "__init__.py").write_text("")
        (tmp_path / folder / "lib" / "sub.py").write_text(REWARD.format(name=f"subtree_{folder}/r"))
    (tmp_path / "Y" / "pkg_a.py").write_text(uses_lib)
    (tmp_path / "Y" / "pkg_a2.py").write_text(uses_lib)
    (tmp_path / "X" / "pkg_b.py").write_text(
        "from lib.sub import r\nfrom evr1.experiment_files import load_config\n\n\ndef experiment():\n"
        f"    load_config('{tmp_path}/Y/pkg_a.py')\n    return load_config('{tmp_path}/Y/pkg_a2.py')[0]\n"
    )
    load_config(str(tmp_path / "X" / "pkg_b.py"))  # Y's lib.sub is imported once, for pkg_a; pkg_a2 gets it again
    assert {"subtree_X/r", "subtree_Y/r"} <= set(REWARDS.names())
    assert Path(sys.modules["lib.sub"].__file__) == tmp_path / "X" / "lib" / "sub.py"  # X's put back whole


NOTE = '''
from dataclasses import dataclass


@dataclass
class Note:
    x: int
'''


def test_a_class_defined_in_an_experiment_file_pickles(tmp_path: Path) -> None:
    from evr1.experiment_files import load_config

    (tmp_path / "pickled_note.py").write_text(NOTE + BUILT_ON_QUICKSTART)
    load_config(str(tmp_path / "pickled_note.py"))
    note = sys.modules["evr1_experiments.pickled_note"].Note(3)
    assert pickle.loads(pickle.dumps(note)) == note


def test_a_file_imported_as_a_sibling_has_its_experiment_name_too(tmp_path: Path) -> None:
    from evr1.experiment_files import load_config

    (tmp_path / "sib_note.py").write_text(NOTE + BUILT_ON_QUICKSTART)
    (tmp_path / "uses_sib.py").write_text("import sib_note\n" + BUILT_ON_QUICKSTART.replace(f"{QUICKSTART}:debug", str(tmp_path / "sib_note.py")))
    load_config(str(tmp_path / "uses_sib.py"))  # `import sib_note` first: the name Ray workers use is the same module
    assert sys.modules["evr1_experiments.sib_note"] is sys.modules["sib_note"]
    load_config(str(tmp_path / "sib_note.py"))
    assert sys.modules["evr1_experiments.sib_note"] is sys.modules["sib_note"]


def test_a_run_loads_in_the_process_that_built_it_and_an_import_error_stays_itself(tmp_path: Path) -> None:
    from evr1.experiment import build_experiment
    from evr1.experiment_files import load_config
    from evr1.run_dir import load_experiment, write_run_dir

    (tmp_path / "built_here.py").write_text(REWARD.format(name="built_here/r") + BUILT_ON_QUICKSTART)
    cfg, source = load_config(str(tmp_path / "built_here.py"))
    (tmp_path / "run").mkdir()
    write_run_dir(tmp_path / "run", build_experiment(cfg), source, [])
    assert load_experiment(tmp_path / "run").name == build_experiment(cfg).name  # the copy is the module imported
    (tmp_path / "bad_twice.py").write_text(REWARD.format(name="bad_twice/r") + "raise RuntimeError('real bug')\n")
    for _ in range(2):  # not a duplicate name the second time
        with pytest.raises(ConfigError, match="bad_twice.py failed to import: RuntimeError: real bug"):
            load_config(str(tmp_path / "bad_twice.py"))


def test_resume_without_the_originals_finds_the_copies_and_names_a_missing_one(tmp_path: Path) -> None:
    proj = project(tmp_path / "p", "gone")
    runs = {name: proj / "runs" / name for name in ("top", "derived")}
    for name, run_dir in runs.items():
        out = evr1("run", name, "--prepare", "--run-dir", str(run_dir), cwd=proj)
        assert out.returncode == 0, out.stderr
    (proj / "experiments" / "ex.py").unlink()
    resumed = evr1("run", "--resume", str(runs["top"]), "--dry-run", cwd=proj)  # top.py loads "ex" at import: its copy
    assert resumed.returncode == 0, resumed.stderr
    (runs["derived"] / "experiment_deps" / "ex.py").unlink()
    assert json.loads((runs["derived"] / "run.json").read_text())["deps"][0]["copy"] == "experiment_deps/ex.py"
    updated = evr1("run", "--resume", str(runs["derived"]), "--dry-run", "--update-code", cwd=proj)
    assert updated.returncode == 2 and "Traceback" not in updated.stderr, updated.stderr
    assert " ".join(updated.stderr.split("error: ")[-1].split()) == (  # not an unrelated unknown reward later
        f"{runs['derived']}/experiment_deps/ex.py, the run's copy of the experiment file {proj}/experiments/ex.py,"
        " is missing, and that file no longer exists either")
