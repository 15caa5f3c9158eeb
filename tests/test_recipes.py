"""The GPU recipes validate on CPU: `evr1 show` and `evr1 run --dry-run`, as a user runs them.

Runs offline with an empty Hugging Face home: naming a hub model must not download anything
until a run starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVR1 = str(Path(sys.executable).parent / "evr1")
PUBLISHED = {  # EasyVideoR1's published video GRPO settings
    "data.video.fps": "2.0",
    "data.video.max_frames": "128",
    "data.video.max_pixels": "262144",
    "data.image.max_pixels": "1048576",
    "rollout.n": "8",
    "algo.clip_low": "0.2",
    "algo.clip_high": "0.28",
    "algo.kl.enabled": "False",
    "optim.lr": "1e-06",
    "rollout.engine": "'vllm'",
}
RECIPES = {"qwen25vl_7b_video": "'Qwen/Qwen2.5-VL-7B-Instruct'", "qwen3vl_8b_video": "'Qwen/Qwen3-VL-8B-Instruct'"}


def evr1(*args: str, hf_home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([EVR1, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env, check=False)


def shown(out: subprocess.CompletedProcess) -> dict[str, str]:
    assert out.returncode == 0, out.stderr
    rows = [line.split(None, 1) for line in out.stdout.splitlines()[1:] if line and not line[0].isspace()]
    return {row[0]: row[1].split("  #")[0].strip() for row in rows if len(row) == 2}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_show_has_the_published_settings(name: str, tmp_path: Path) -> None:
    values = shown(evr1("show", name, hf_home=tmp_path / "hf"))
    assert {key: values[key] for key in PUBLISHED} == PUBLISHED
    assert values["model.name"] == RECIPES[name]
    assert values["resources.num_gpus"] == "8" and values["rollout.colocate"] == "True"
    assert values["resources.learner_sharding"] == "'fsdp'"  # 7-8B with AdamW state does not fit replicated
    assert not (tmp_path / "hf").exists()  # nothing was downloaded or cached


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ("small_gpu", {"resources.num_gpus": "1", "resources.learner_workers": "1", "rollout.n": "4", "data.video.max_frames": "32",
                       "resources.learner_sharding": "'replicated'"}),
        ("multi_node", {"resources.ray_address": "'auto'", "resources.num_gpus": "16", "resources.learner_workers": "16",
                        "resources.learner_sharding": "'fsdp'"}),
    ],
)
def test_variants(variant: str, expected: dict[str, str], tmp_path: Path) -> None:
    values = shown(evr1("show", f"qwen25vl_7b_video:{variant}", hf_home=tmp_path / "hf"))
    assert {key: values[key] for key in expected} == expected
    assert values["algo.clip_high"] == "0.28"  # the published settings stay


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_prepare_records_the_config_with_a_local_model(name: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = evr1(
        "run", name, "--prepare", "--run-dir", str(run_dir),
        "--set", "model.name='/models/local-copy'", "--set", "data.train=('/data/mine.jsonl',)",
        hf_home=tmp_path / "hf",
    )
    assert out.returncode == 0, out.stderr
    assert "prepared: run directory written" in out.stdout and "vllm engine, n=8" in out.stdout
    assert "warning: model.name: the model directory /models/local-copy does not exist; a real run stops here" in out.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["name"] == "/models/local-copy"
    assert config["data"]["train"] == ["/data/mine.jsonl"]
    assert config["data"]["video"] == config["eval"]["video"]  # one VideoSpec for training and eval
    assert config["data"]["image"] == config["eval"]["image"]  # and one ImageSpec
    assert (config["data"]["video"]["max_pixels"], config["data"]["image"]["max_pixels"]) == (262_144, 1_048_576)
    assert (config["algo"]["clip_low"], config["algo"]["clip_high"], config["optim"]["lr"]) == (0.2, 0.28, 1e-6)
    assert not (tmp_path / "hf").exists()


def test_nonsense_override_is_a_user_error(tmp_path: Path) -> None:
    out = evr1("show", "qwen3vl_8b_video", "--set", "resources.learner_workers=9", hf_home=tmp_path / "hf")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "learner_workers (9) > num_gpus (8)" in out.stderr


@pytest.mark.parametrize("variant", ["experiment", "small_gpu"])
def test_eval_reads_images_at_the_training_budget(variant: str) -> None:
    from evr1.experiment import apply_overrides, build_experiment
    from evr1.experiment_files import load_config

    cfg, _ = load_config(f"qwen25vl_7b_video:{variant}")
    exp = build_experiment(cfg)
    assert exp.eval.image is exp.data.image
    assert exp.eval.image.max_pixels == {"experiment": 1_048_576, "small_gpu": 256 * 28 * 28}[variant]
    apply_overrides(cfg, ["data.image.max_pixels=401408"])
    assert build_experiment(cfg).eval.image.max_pixels == 401_408


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_small_gpu_lora_variant_validates_and_dry_runs(name: str, tmp_path: Path) -> None:
    values = shown(evr1("show", f"{name}:small_gpu_lora", hf_home=tmp_path / "hf"))
    expected = {"model.lora.rank": "64", "model.lora.alpha": "128.0", "model.lora.vision": "'frozen'",
                "optim.lr": "1e-05", "resources.num_gpus": "1", "resources.learner_sharding": "'replicated'"}
    assert {key: values[key] for key in expected} == expected
    assert values["algo.clip_high"] == "0.28"  # the published settings stay
    run_dir = tmp_path / "run"
    out = evr1("run", f"{name}:small_gpu_lora", "--prepare", "--run-dir", str(run_dir),
               "--set", "model.lora.vision='merger'", hf_home=tmp_path / "hf")
    assert out.returncode == 0, out.stderr
    lora = json.loads((run_dir / "config.json").read_text())["model"]["lora"]
    assert (lora["rank"], lora["vision"], lora["target_modules"][0]) == (64, "merger", "q_proj")
    assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.lora.rank=0", "model.lora.rank: Input should be greater than 0"),
        ("model.lora.target_modules=()", "model.lora.target_modules: name at least one linear layer"),
        ("model.lora.vision='tower'", "freeze_vision=True contradicts lora.vision='tower'"),
    ],
)
def test_bad_lora_settings_are_user_errors(override: str, message: str, tmp_path: Path) -> None:
    out = evr1("show", "quickstart", "--set", "model.freeze_vision=True", "--set", override, hf_home=tmp_path / "hf")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert message in out.stderr


def test_lora_with_fsdp_is_refused_when_the_config_is_built(tmp_path: Path) -> None:
    out = evr1("show", "qwen25vl_7b_video:small_gpu_lora", "--set", "resources.num_gpus=2", "--set", "resources.learner_workers=2",
               "--set", "resources.learner_sharding='fsdp'", hf_home=tmp_path / "hf")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "model.lora is not supported with resources.learner_sharding='fsdp' yet" in out.stderr


@pytest.mark.parametrize("variant", ["experiment", "multi_node"])
def test_qwen35_video_has_the_peers_qwen35_frames_and_dry_runs(variant: str, tmp_path: Path) -> None:
    """EasyVideoR1's Qwen3.5 config: 256 frames at 2 fps (the other published settings as for the recipes above)."""
    name = "qwen35_video" if variant == "experiment" else f"qwen35_video:{variant}"
    values = shown(evr1("show", name, hf_home=tmp_path / "hf"))
    expected = PUBLISHED | {"data.video.max_frames": "256", "model.name": "'Qwen/Qwen3.5-2B'",
                            "rollout.max_prompt_tokens": "36864"}
    assert {key: values[key] for key in expected} == expected
    assert values["eval.video.max_frames"] == "256"  # the one VideoSpec
    if variant == "multi_node":
        assert (values["resources.ray_address"], values["resources.num_gpus"]) == ("'auto'", "16")
    out = evr1("run", name, "--dry-run", hf_home=tmp_path / "hf")
    assert out.returncode == 0, out.stderr
    assert "dry run: config validated" in out.stdout
    assert not (tmp_path / "hf").exists()
