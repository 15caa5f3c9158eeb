"""Evaluating on registered benchmarks: `evaluate(spec, responder, run_dir)`.

    responder = engine_responder(ModelSpec(name="tiny-qwen2.5-vl"), spec)  # or ScriptedResponder(...)
    results = evaluate(spec, responder, "runs/eval-1")  # results.json, results.md, <bench>/samples.jsonl

Frame settings, decoding and prompt mode are part of every result file's `settings`.
The same entry point serves periodic evaluation during training (`responder_for_engine`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evr1.data.records import Record
from evr1.errors import ConfigError
from evr1.eval.benchmark import Benchmark
from evr1.eval.report import write_run
from evr1.eval.responders import EngineResponder, Responder
from evr1.eval.runner import RunOptions, evaluate_benchmark
from evr1.specs import EvalSpec, JudgeSpec, ModelSpec, RewardSpec


def resolve_target(target: str) -> tuple[ModelSpec, EvalSpec | None]:
    """(ModelSpec, EvalSpec or None) for a registered model, an HF checkpoint directory, or an experiment."""
    from evr1.experiment import build_experiment
    from evr1.experiment_files import load_config
    from evr1.registry import MODELS

    if target in MODELS or Path(target).expanduser().is_dir():
        return ModelSpec(name=target), None
    experiment = build_experiment(load_config(target)[0])
    return experiment.model, experiment.eval


def run_settings(spec: EvalSpec, responder: Responder) -> dict[str, Any]:
    """Everything that shapes the answers: frames, pixels, decoding, prompt mode, model."""
    return {
        "video": spec.video.model_dump(mode="json"),
        "image": spec.image.model_dump(mode="json"),
        "max_response_tokens": spec.max_response_tokens,
        **responder.describe(),
    }


JUDGE_OPTIONS = ("set eval.judge.base_url and eval.judge.model (an OpenAI-compatible endpoint, e.g. a vLLM server;"
                 " `evr1 eval run --judge-url URL --judge-model NAME`)")


def require_judge(bench: Benchmark, judge: JudgeSpec, problem_types: Iterable[str], hint: str = JUDGE_OPTIONS) -> bool:
    """Whether `bench` scores any of `problem_types` with an LLM judge; a ConfigError ending in `hint` (how to
    set the judge) when one is needed and `judge` lacks its endpoint or model."""
    judged = {t.value for t, name in bench.routes.items() if name.endswith("_judge")}
    needed = sorted(judged.intersection(problem_types))
    if needed and not (judge.base_url and judge.model):
        raise ConfigError(f"benchmark {bench.name!r} scores {', '.join(needed)} answers with an LLM judge: {hint}")
    return bool(needed)


def reward_router(bench: Benchmark, judge: JudgeSpec, problem_types: Iterable[str], hint: str = JUDGE_OPTIONS) -> Any:
    """The reward router scoring answers of `problem_types` on `bench` (accuracy only; the judge routes only
    when one of them needs the judge); `require_judge`'s error, with `hint`, when that judge is missing."""
    from evr1.rewards import RewardRouter

    judged = require_judge(bench, judge, problem_types, hint)
    routes = {t: name for t, name in bench.routes.items() if judged or not name.endswith("_judge")}
    return RewardRouter(RewardSpec(format="none", routes=routes, judge=judge))


def make_router(bench: Benchmark, spec: EvalSpec, records: Sequence[Record]) -> Any:
    """The reward router scoring `records` of `bench`; a ConfigError naming the CLI options when a needed judge is missing."""
    return reward_router(bench, spec.judge, (r.problem_type.value for r in records))


def evaluate(spec: EvalSpec, responder: Responder, run_dir: str | Path, *, benchmarks: Sequence[str] | None = None,
             data_root: str | Path | None = None) -> dict[str, Any]:
    """Evaluate (or resume) the benchmarks of `spec` (or `benchmarks`) and write the run's reports."""
    from evr1.registry import BENCHMARKS

    names = list(benchmarks or spec.benchmarks)
    root = data_root or spec.data_root
    if not names:
        raise ConfigError("no benchmarks to evaluate: set eval.benchmarks or pass --benchmarks")
    if root is None:
        raise ConfigError("no data root: set eval.data_root or pass --data-root")
    loaded = []
    for name in names:  # load and check everything before the first generation
        bench = BENCHMARKS.get(name)
        records = bench.load(root)[: spec.limit]
        loaded.append((bench, records, make_router(bench, spec, records)))
    settings = run_settings(spec, responder)
    options = RunOptions(spec.batch_size, spec.media_workers, spec.prefetch)
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    results = {}
    for bench, records, router in loaded:
        results[bench.name] = evaluate_benchmark(bench, records, responder, run_dir, settings, router, options)
    return write_run(run_dir, settings, results)


def responder_for_engine(engine: Any, processor: Any, spec: EvalSpec, model: str, data_root: str | Path) -> EngineResponder:
    """A greedy responder over an existing engine (periodic evaluation during training)."""
    from evr1.data.loader import MediaLoader
    from evr1.engines.base import SamplingParams

    loader = MediaLoader(spec.video, spec.image, spec.cache, processor, data_root)
    params = SamplingParams(greedy=True, max_tokens=spec.max_response_tokens, seed=0)
    return EngineResponder(engine, processor, loader, params, mode=spec.prompt_mode, model=model,
                           max_prompt_tokens=getattr(engine, "max_prompt_tokens", None))


def engine_responder(model: ModelSpec, spec: EvalSpec, *, engine: str = "hf", device: str = "cpu",
                     data_root: str | Path | None = None) -> EngineResponder:
    """Load `model` into a registered rollout engine and answer greedily with it."""
    from evr1.models import load_processor
    from evr1.registry import ENGINES
    from evr1.specs import RolloutSpec

    rollout = RolloutSpec(engine=engine, n=1, max_response_tokens=spec.max_response_tokens, max_prompt_tokens=32768)
    built = ENGINES.get(engine).from_spec(model, rollout, device=device)
    root = data_root or spec.data_root
    if root is None:
        raise ConfigError("no data root: set eval.data_root or pass --data-root")
    return responder_for_engine(built, load_processor(model), spec, model.name, root)
