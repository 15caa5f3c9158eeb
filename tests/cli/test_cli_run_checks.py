"""What `evr1 run` checks before and as it starts: the model name (with a did-you-mean), curated answers
longer than the response budget (a dry-run warning, checked in process: the CLI prints it as the hub
note is printed), a config refused at start (start a new run, no run directory left), and a run folder
per variant.

The commands run in this process (`cli_inproc`); the run refused as it starts is refused before Ray and the
workers start, and the experiment file a test writes registers nothing (its import is undone after the test)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from test_cli_experiments import assert_user_error, evr1


def test_a_misspelt_model_name_is_refused_with_a_suggestion_and_no_run_directory(tmp_path: Path) -> None:
    out = evr1("run", "quickstart", "--set", "model.name='tiny-qwen25-vl'", "--set", f"trainer.run_root='{tmp_path}'")
    assert_user_error(out, "model.name: model 'tiny-qwen25-vl' is neither a registered model")
    assert "Did you mean 'tiny-qwen2.5-vl'?" in out.stderr  # a dry run checks the same, before its own branch
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_notes_a_hub_model_not_cached_here(tmp_path: Path) -> None:
    out = evr1("run", "quickstart", "--dry-run", "--set", "model.name='Qwen/Qwen2.5-VL-3B-Instruct'",
               "--set", f"trainer.run_root='{tmp_path}'")
    assert out.returncode == 0, out.stderr
    assert "note: model.name: 'Qwen/Qwen2.5-VL-3B-Instruct' is not in the local Hugging Face cache" in " ".join(out.stderr.split())
    assert list(tmp_path.iterdir()) == []


def test_curated_answers_longer_than_the_response_budget_are_counted_with_an_example(tmp_path: Path, model_cache: Path) -> None:
    from evr1.cli.run_checks import long_offline_answers
    from evr1.experiment import Experiment
    from evr1.models.testing import tiny_spec
    from evr1.specs import DataSpec, MixerSpec, RolloutSpec

    rows = [{"id": f"r{i}", "problem": "Which?", "problem_type": "multiple_choice", "options": ["x", "y"], "answer": "A",
             "offline_response": text} for i, text in enumerate(["A", "A " * 30, "B " * 40])]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    exp = Experiment(model=tiny_spec("qwen2.5-vl", model_cache), data=DataSpec(train=(str(data),)),
                     rollout=RolloutSpec(n=4, max_response_tokens=8), mixer=MixerSpec(name="offline_k", k=1))
    warning = long_offline_answers(exp)
    assert warning is not None and warning.startswith(
        "2 of 3 curated offline answers are longer than rollout.max_response_tokens=8 (with the stop token) and are cut"
        " to it, e.g. record 'r1': ")
    length = int(warning.rpartition(": ")[2].split()[0])
    assert length > 8
    roomy = exp.model_copy(update={"rollout": RolloutSpec(n=4, max_response_tokens=length + 50)})
    assert long_offline_answers(roomy) is None
    assert long_offline_answers(exp.model_copy(update={"mixer": MixerSpec()})) is None  # no mixer: nothing to cut


@pytest.mark.usefixtures("experiment_imports_restored")
def test_a_config_refused_as_the_run_starts_says_start_a_new_run_and_leaves_no_run_directory(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    out = evr1("run", "quickstart", "--set", "data.synth=None", "--set", f"data.train=('{tmp_path / 'empty.jsonl'}',)",
               "--set", "data.val=()", "--set", f"trainer.run_root='{tmp_path / 'runs'}'")
    assert_user_error(out, "holds no records")
    text = " ".join(out.stderr.split())
    assert "fix it and start a new run" in text and "--resume" not in text
    assert list((tmp_path / "runs" / "quickstart").iterdir()) == []


@pytest.mark.usefixtures("experiment_imports_restored")
def test_each_variant_gets_its_own_run_folder_when_the_experiment_sets_its_name(tmp_path: Path) -> None:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "named.py").write_text(textwrap.dedent('''
        import fiddle as fdl
        from evr1.experiment import Experiment

        def experiment():
            return fdl.Config(Experiment, name="mine")

        def debug():
            return experiment()
    '''))
    out = evr1("run", "named:debug", "--prepare", "--set", f"trainer.run_root='{tmp_path / 'runs'}'", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["mine-debug"]  # the default variant's is runs/mine
