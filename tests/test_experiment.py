"""Building experiments, overrides and their errors, provenance, run directories."""

from __future__ import annotations

import textwrap
from pathlib import Path

import fiddle as fdl
import pytest

from evr1.errors import ConfigError
from evr1.experiment import Experiment, apply_overrides, build_experiment, flatten, parse_value, provenance
from evr1.experiment_files import load_config, resolve
from evr1.registry import REWARDS, UnknownNameError
from evr1.run_dir import load_experiment, new_run_dir, write_run_dir

EXPERIMENT_FILE = '''
"""Test experiments."""
import fiddle as fdl
from evr1.experiment import Experiment
from evr1.specs import DataSpec, EvalSpec, TrainerSpec, VideoSpec


def experiment():
    """The base."""
    video = fdl.Config(VideoSpec, fps=1.0)
    return fdl.Config(Experiment, data=fdl.Config(DataSpec, video=video), eval=fdl.Config(EvalSpec, video=video))


def longer():
    """More steps."""
    cfg = experiment()
    cfg.trainer = fdl.Config(TrainerSpec, steps=500)
    return cfg


def helper(cfg):
    return cfg
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "toy.py").write_text(EXPERIMENT_FILE)
    (tmp_path / "experiments" / "returns_int.py").write_text("def experiment():\n    return 3\n")
    (tmp_path / "experiments" / "raises.py").write_text("import not_a_real_module_xyz\n")
    return tmp_path


def test_default_and_variant(project: Path) -> None:
    base, source = load_config("toy", project)
    assert source.origin == "file" and source.label == "toy"
    exp = build_experiment(base)
    assert exp.name == "toy" and exp.data.video.fps == 1.0 and exp.trainer.steps == 100
    longer, source = load_config("toy:longer", project)
    assert source.label == "toy:longer"
    assert build_experiment(longer).trainer.steps == 500


def test_path_to_a_file(project: Path) -> None:
    cfg, source = load_config(str(project / "experiments" / "toy.py"), project)
    assert source.origin == "file" and build_experiment(cfg).name == "toy"


def test_shared_spec_is_one_object(project: Path) -> None:
    cfg, _ = load_config("toy", project)
    exp = build_experiment(cfg)
    assert exp.data.video is exp.eval.video
    applied = apply_overrides(cfg, ["data.video.fps=4"])
    exp = build_experiment(cfg)
    assert exp.eval.video.fps == 4.0
    marks = provenance(cfg, applied)
    assert marks["data.video.fps"] == "--set data.video.fps=4"
    assert marks["eval.video.fps"] == "--set data.video.fps=4 (shared)"
    assert "data.video.nframes" not in marks


SHARED_INSTANCE = """
import fiddle as fdl
from evr1.experiment import Experiment
from evr1.specs import DataSpec, EvalSpec, VideoSpec


def experiment():
    video = VideoSpec(fps=2.0, max_frames=64)  # a built instance, not a Config, given to data and eval
    return fdl.Config(Experiment, data=fdl.Config(DataSpec, video=video), eval=fdl.Config(EvalSpec, video=video))
"""


@pytest.mark.parametrize("item", ["data.video.fps=4", "eval.video.fps=4"])
def test_shared_instance_stays_shared_under_overrides(tmp_path: Path, item: str) -> None:
    (tmp_path / "shared.py").write_text(SHARED_INSTANCE)
    cfg, _ = load_config(str(tmp_path / "shared.py"), tmp_path)
    applied = apply_overrides(cfg, [item, "data.video.min_frames=2"])
    exp = build_experiment(cfg)
    assert exp.data.video is exp.eval.video
    assert (exp.eval.video.fps, exp.eval.video.min_frames, exp.eval.video.max_frames) == (4.0, 2, 64)
    marks = provenance(cfg, applied)
    other = "eval.video.fps" if item.startswith("data") else "data.video.fps"
    assert marks[other] == f"--set {item} (shared)"
    assert marks["eval.video.min_frames"] == "--set data.video.min_frames=2 (shared)"


@pytest.mark.parametrize(
    ("item", "path", "expected"),
    [
        ("trainer.steps=7", "trainer.steps", 7),
        ("optim.lr=3e-4", "optim.lr", 3e-4),
        ("optim.betas=(0.8, 0.9)", "optim.betas", (0.8, 0.9)),
        ("model.name=tiny-qwen3-vl", "model.name", "tiny-qwen3-vl"),  # not a literal: kept as text
        ("model.name='my model'", "model.name", "my model"),
        ("data.video.total_pixels=None", "data.video.total_pixels", None),
        ("data.train=['a.jsonl', 'b.jsonl']", "data.train", ("a.jsonl", "b.jsonl")),
        ("trainer.run_root = out", "trainer.run_root", "out"),
    ],
)
def test_override_values(project: Path, item: str, path: str, expected: object) -> None:
    cfg, _ = load_config("toy", project)
    apply_overrides(cfg, [item])
    values = dict(flatten(build_experiment(cfg)))
    assert values[path] == expected


def test_overrides_apply_in_order(project: Path) -> None:
    cfg, _ = load_config("toy", project)
    apply_overrides(cfg, ["trainer.steps=7", "trainer.steps=9"])
    assert build_experiment(cfg).trainer.steps == 9


def test_unknown_experiment_lists_and_suggests(project: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve("tyo", project)
    message = str(info.value)
    assert message.startswith(f"unknown experiment 'tyo' under {project / 'experiments'} or among those evr1 ships.")
    assert "Did you mean 'toy'?" in message
    assert "Known: ablations, quickstart, qwen25vl_7b_video, qwen35_video, qwen3vl_8b_video, raises, returns_int, toy" in message


def test_unknown_variant(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"has no variant 'longr'\. Did you mean 'longer'\? Variants: experiment, longer$"):
        resolve("toy:longr", project)


def test_bad_experiment_files(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"returned int, not fdl.Config\[Experiment\]"):
        load_config("returns_int", project)
    with pytest.raises(ConfigError, match="failed to import: ModuleNotFoundError: No module named 'not_a_real_module_xyz'"):
        load_config("raises", project)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve(str(project / "nope.py"), project)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "trainer.stepz=3",
            "--set trainer.stepz=3: TrainerSpec at trainer has no field 'stepz'. Did you mean 'steps'? Fields: steps,",
        ),
        ("algo.kl.estimatr=k2", "KLSpec at algo.kl has no field 'estimatr'. Did you mean 'estimator'?"),
        ("trainr.steps=3", "Experiment at <experiment> has no field 'trainr'. Did you mean 'trainer'?"),
        ("trainer.steps.x=3", "trainer.steps is a int value, not a spec with fields"),
        ("no_equals_sign", "--set expects PATH=VALUE"),
        ("algo.advantage=@advantages:rlo", "algo.advantage: unknown advantages name 'rlo'. Did you mean 'rloo'?"),
        ("algo.advantage=@advantage:rloo", "algo.advantage: unknown registry 'advantage' in '@advantage:rloo'."),
    ],
)
def test_unknown_override_paths(project: Path, item: str, message: str) -> None:
    cfg, _ = load_config("toy", project)
    with pytest.raises(ConfigError) as info:
        apply_overrides(cfg, [item])
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("data.video.fps='fast'", "data.video.fps: Input should be a valid number, unable to parse string as a number (got 'fast')"),
        ("trainer.steps=0", "trainer.steps: Input should be greater than 0 (got 0)"),
        ("model.dtype=fp8", "model.dtype: Input should be 'auto', 'float32', 'bfloat16' or 'float16' (got 'fp8')"),
        ("data.video.nframes=8", "data.video: set exactly one of fps and nframes"),
        ("algo.advantage=grpoo", "algo.advantage: unknown advantages name 'grpoo'. Did you mean 'grpo'?"),
        ("rollout.temperature=0", "rollout: temperature=0 is greedy decoding, one response per prompt: set n=1 (got n=8)"),
        ("rollout.top_k=0", "rollout.top_k: must be -1 (off) or a positive number of tokens, got 0"),
        ("rollout.top_k=-2", "rollout.top_k: must be -1 (off) or a positive number of tokens, got -2"),
        ("data.modality_ratio={'vid': 1.0}", "data.modality_ratio key 'vid': Input should be 'video', 'image' or 'text' (got 'vid')"),
        ("reward.routes={'numerica': 'numerical'}", "reward.routes: unknown problem_type 'numerica'. Did you mean 'numerical'?"),
    ],
)
def test_wrong_values_name_the_field(project: Path, item: str, message: str) -> None:
    cfg, _ = load_config("toy", project)
    apply_overrides(cfg, [item])
    with pytest.raises(ConfigError) as info:
        build_experiment(cfg)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        (["rollout.temperature=0", "rollout.n=1"], (0.0, 1, -1)),  # greedy with one response: fine
        (["rollout.top_k=1"], (1.0, 8, 1)),
        (["rollout.top_k=-1"], (1.0, 8, -1)),  # -1: off, as `SamplingParams` reads it
    ],
)
def test_rollout_values_that_sample(project: Path, items: list[str], expected: tuple) -> None:
    cfg, _ = load_config("toy", project)
    apply_overrides(cfg, items)
    rollout = build_experiment(cfg).rollout
    assert (rollout.temperature, rollout.n, rollout.top_k) == expected


def test_registry_references() -> None:
    REWARDS.register("test/exact", lambda response, answer: 1.0)
    try:
        assert parse_value("@rewards:test/exact") == "test/exact"
        with pytest.raises(UnknownNameError, match="Did you mean 'test/exact'"):
            parse_value("@rewards:test/exakt")
        with pytest.raises(ConfigError, match="unknown registry 'rewardz'.*Did you mean 'rewards'"):
            parse_value("@rewardz:test/exact")
    finally:
        REWARDS.unregister("test/exact")


def test_root_must_be_an_experiment() -> None:
    with pytest.raises(ConfigError, match="must return fdl.Config"):
        build_experiment(fdl.Config(dict))


def test_run_dir_round_trip(project: Path, tmp_path: Path) -> None:
    cfg, source = load_config("toy", project)
    applied = apply_overrides(cfg, ["trainer.steps=11", "data.video.fps=3"])
    exp = build_experiment(cfg)
    run_dir = new_run_dir(exp, tmp_path / "runs")
    assert run_dir.parent == tmp_path / "runs" / "toy"
    write_run_dir(run_dir, exp, source, applied)
    again = load_experiment(run_dir)
    assert again == exp and isinstance(again, Experiment)
    assert (run_dir / "experiment.py").read_text() == EXPERIMENT_FILE
    run_info = (run_dir / "run.json").read_text()
    assert '"trainer.steps=11"' in run_info and '"data.video.fps=3"' in run_info
    assert '"pydantic"' in (run_dir / "versions.json").read_text()
    assert new_run_dir(exp, tmp_path / "runs") != run_dir  # same second: still a new folder


def test_load_experiment_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a run directory: config.json is missing"):
        load_experiment(tmp_path)
    (tmp_path / "config.json").write_text(textwrap.dedent('{"trainer": {"steps": -1}}'))
    with pytest.raises(ConfigError, match="does not hold a valid experiment"):
        load_experiment(tmp_path)


@pytest.mark.parametrize(("given", "expected"), [("a.jsonl", ("a.jsonl",)), (["a", "b"], ("a", "b")), ((), ())])
def test_data_files_take_one_path(given: object, expected: tuple[str, ...]) -> None:
    from evr1.specs import DataSpec

    assert DataSpec(train=given, val=given).train == DataSpec(val=given).val == expected


def test_resume_message_names_the_checkpoint(tmp_path: Path) -> None:
    from evr1.run_dir import finished, interrupted_message, resume_message, stopped_message

    assert resume_message(tmp_path, 0) == "no checkpoint (save_every=0): starting again from step 0"
    assert resume_message(tmp_path, 5) == "no checkpoint (none saved yet, save_every=5): starting again from step 0"
    assert resume_message(tmp_path, 0, 30.0) == (
        "no checkpoint (none saved yet, save_every=0, save_every_minutes=30): starting again from step 0")
    assert interrupted_message(tmp_path, 3) == (
        f"interrupted at step 3; no checkpoint was saved: `evr1 run --resume {tmp_path}` starts again from step 0"
        " (checkpoints come every trainer.save_every steps and trainer.save_every_minutes minutes, and when a single"
        " Ctrl-C or SIGTERM stops the run after the step in progress)")
    assert stopped_message(tmp_path, "SIGTERM", 4, "step_000004") == (
        f"stopped on SIGTERM after step 4 with checkpoint step_000004; continue with `evr1 run --resume {tmp_path}`")
    for step in (5, 10):
        (tmp_path / "checkpoints" / f"step_{step:06d}").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step_000005" / "trainer.json").write_text("{}")  # step 10 is incomplete
    assert resume_message(tmp_path, 5) == "resuming from checkpoint step_000005"
    assert interrupted_message(tmp_path, 7) == (
        f"interrupted at step 7; continue with `evr1 run --resume {tmp_path}` (from step_000005)"
    )
    (tmp_path / "metrics.jsonl").write_text('{"step": 9}\n{"step": 10}\n')
    assert not finished(tmp_path, 10)  # no final model
    (tmp_path / "final_model").mkdir()
    assert finished(tmp_path, 10) and not finished(tmp_path, 12)


def test_load_experiment_of_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="run directory .* does not exist"):
        load_experiment(tmp_path / "nothere")
