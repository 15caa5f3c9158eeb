"""Evaluating on registered benchmarks: `evaluate(spec, responder, run_dir)`.

    responder = engine_responder(ModelSpec(name="tiny-qwen2.5-vl"), spec)  # or ScriptedResponder(...)
    results = evaluate(spec, responder, "runs/eval-1")  # results.json, results.md, <bench>/samples.jsonl
    results = evaluate_responses(spec, "answers.jsonl", "runs/eval-2")  # score given responses

Frame settings, decoding, prompt mode and the judge (where a benchmark uses one) are part of every
benchmark's `settings` (given responses: the responses file and its hash instead).
The same entry point serves periodic evaluation during training (`responder_for_engine`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evr1.data.records import Record
from evr1.errors import ConfigError, Evr1Error, known_list
from evr1.eval.definition import Benchmark
from evr1.eval.eval_prompt import LETTERS
from evr1.eval.protocols import Protocol, needs_official_judge
from evr1.eval.report import write_run
from evr1.eval.responders import EngineResponder, Responder, ScriptedResponder, engine_chooses
from evr1.eval.samples import RunOptions, evaluate_benchmark
from evr1.run_dir import CONFIG_FILE, FINAL_MODEL
from evr1.specs import EvalSpec, JudgeSpec, ModelSpec, RewardSpec


def run_of(target: str) -> Path | None:
    """The run directory TARGET names: a run directory itself (its `config.json` and `final_model/`) or the
    `final_model/` of one; None for anything else."""
    path = Path(target).expanduser()
    if (path / CONFIG_FILE).is_file() and (path / FINAL_MODEL).is_dir():
        return path
    if path.name == FINAL_MODEL and path.is_dir() and (path.parent / CONFIG_FILE).is_file():
        return path.parent
    return None


def resolve_target(target: str) -> tuple[ModelSpec, EvalSpec | None]:
    """(ModelSpec, EvalSpec or None) for a registered model, a training run (its directory or its `final_model/`:
    the exported model with the run's own model settings and `eval` spec), an HF checkpoint directory, or an
    experiment; a ConfigError naming what was tried when TARGET is none of them."""
    from evr1.registry import MODELS
    from evr1.run_dir import load_experiment

    if target in MODELS:
        return ModelSpec(name=target), None
    run = run_of(target)
    if run is not None:
        experiment = load_experiment(run)
        model = experiment.model.model_copy(update={"name": str(run / FINAL_MODEL), "lora": None})  # merged on export
        return model, experiment.eval
    path = Path(target).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{target} is neither an HF model directory (no config.json) nor a training run"
                              f" (no config.json and {FINAL_MODEL}/)")
        if "model_type" not in _json_keys(path / "config.json"):
            raise ConfigError(f"{path / 'config.json'} is neither an HF model config (no model_type) nor a finished"
                              f" training run's config (no {FINAL_MODEL}/ beside it: has the run finished?)")
        return ModelSpec(name=target), None
    experiment = _experiment(target)
    return experiment.model, experiment.eval


def _json_keys(path: Path) -> set[str]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return set(value) if isinstance(value, dict) else set()


def _experiment(target: str) -> Any:
    """The experiment TARGET names; a ConfigError naming all that was tried when it names nothing known."""
    import importlib.util

    from evr1.experiment import build_experiment
    from evr1.experiment_files import known_experiments, load_config
    from evr1.registry import MODELS

    try:
        return build_experiment(load_config(target)[0])
    except ConfigError:
        name = target.partition(":")[0]
        head = name.split(".")[0]
        module = "." in name and head.isidentifier() and importlib.util.find_spec(head) is not None
        if name in known_experiments() or name.endswith(".py") or module:
            raise  # a known experiment that failed: its own error says why
    close = difflib.get_close_matches(target, MODELS.names(), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    raise ConfigError(f"{target!r} is no registered model ({hint}known: {known_list(MODELS.names())}), no experiment"
                      f" (known: {known_list(known_experiments())}) and no folder (an HF model directory or a"
                      f" training run)") from None


def run_settings(spec: EvalSpec, responder: Responder) -> dict[str, Any]:
    """Everything that shapes the answers: frames, pixels, decoding, prompt mode, model."""
    return {
        "video": spec.video.model_dump(mode="json"),
        "image": spec.image.model_dump(mode="json"),
        "max_response_tokens": spec.max_response_tokens,
        **responder.describe(),
    }


def judge_settings(judge: JudgeSpec) -> dict[str, Any]:
    """What of the judge shapes its verdicts: its endpoint, model and reply length."""
    return {"base_url": judge.base_url, "model": judge.model, "max_tokens": judge.max_tokens}


STRICT_HINT = "; or choose the strict headline (`--protocol strict`): its official block is then unavailable"
JUDGE_OPTIONS = ("set eval.judge.base_url and eval.judge.model (an OpenAI-compatible endpoint, e.g. a vLLM server;"
                 " `evr1 eval run --judge-url URL --judge-model NAME`)")


def require_judge(bench: Benchmark, judge: JudgeSpec, problem_types: Iterable[str], hint: str = JUDGE_OPTIONS,
                  official_needed: bool = True) -> bool:
    """Whether `bench` scores any of `problem_types` with an LLM judge (its routes, or its official scorer's judge
    step, which judges every answer; an optional step, or one whose official block is not `official_needed` (a strict
    headline), only when `judge` is set); a ConfigError ending in `hint` (how to set the judge) when one is needed
    and `judge` lacks its endpoint or model."""
    types = set(problem_types)
    judged = {t.value for t, name in bench.routes.items() if name.endswith("_judge")}
    needed = sorted(judged.intersection(types))
    step = bool(types) and bench.official is not None and bench.official.judge is not None
    official = step and official_needed and needs_official_judge(bench)
    configured = bool(judge.base_url and judge.model)
    if (needed or official) and not configured:
        what = f"scores {', '.join(needed)} answers" if needed else "has an official scorer that judges every answer"
        strict = STRICT_HINT if not needed and hint == JUDGE_OPTIONS else ""
        raise ConfigError(f"benchmark {bench.name!r} {what} with an LLM judge: {hint}{strict}")
    return bool(needed) or official or (step and configured)


def reward_router(bench: Benchmark, judge: JudgeSpec, problem_types: Iterable[str], hint: str = JUDGE_OPTIONS,
                  official_needed: bool = True) -> Any:
    """The reward router scoring answers of `problem_types` on `bench` (accuracy only; the judge routes only
    when one of them needs the judge); `require_judge`'s error, with `hint`, when that judge is missing."""
    from evr1.rewards import RewardRouter

    judged = require_judge(bench, judge, problem_types, hint, official_needed)
    routes = {t: name for t, name in bench.routes.items() if judged or not name.endswith("_judge")}
    return RewardRouter(RewardSpec(format="none", routes=routes, judge=judge))


@dataclass(frozen=True)
class Loaded:
    """A benchmark ready to run: its records (the first `limit`), their router, its judge's settings (when it
    uses one), the notes of its loading, and the ids of all its records."""

    bench: Benchmark
    records: list[Record]
    router: Any
    judge: dict[str, Any] | None
    notes: list[str]
    ids: frozenset[str]


def load_benchmarks(spec: EvalSpec, benchmarks: Sequence[str] | None = None,
                    data_root: str | Path | None = None) -> list[Loaded]:
    """Load and check the benchmarks of `spec` (or `benchmarks`) before anything runs: records, needed judge."""
    from evr1.registry import BENCHMARKS

    names = list(benchmarks or spec.benchmarks)
    root = data_root or spec.data_root
    if not names:
        raise ConfigError("no benchmarks to evaluate: set eval.benchmarks or pass --benchmarks")
    if root is None:
        raise ConfigError("no data root: set eval.data_root or pass --data-root")
    loaded = []
    for name in names:
        bench = BENCHMARKS.get(name)
        records, notes = bench.load_noted(root)
        kept = records[: spec.limit]
        types = {r.problem_type.value for r in kept}
        strict = spec.protocol == "strict"  # the official block may then go without its judge (unavailable)
        judge = judge_settings(spec.judge) if require_judge(bench, spec.judge, types, official_needed=not strict) else None
        loaded.append(Loaded(bench, kept, reward_router(bench, spec.judge, types, official_needed=not strict), judge, notes,
                             frozenset(r.id for r in records)))
    return loaded


def run_loaded(loaded: Sequence[Loaded], responder: Responder, run_dir: str | Path, settings: Mapping[str, Any],
               options: RunOptions, protocol: Protocol = "official") -> dict[str, Any]:
    """Run (or resume) the `loaded` benchmarks, each under `settings` and its judge's, and write the run's reports
    (both protocols; `protocol` the headline)."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    results = {}
    for b in loaded:
        results[b.bench.name] = evaluate_benchmark(b.bench, b.records, responder, run_dir, settings, b.router, options,
                                                   b.notes, b.judge, protocol)
    return write_run(run_dir, results)


def require_choices(benches: Iterable[Benchmark], engine: Any, protocol: Protocol) -> None:
    """A ConfigError when `engine` is to answer a benchmark whose official headline chooses answers by the model's
    logits (LiveSports-3K) and the engine gives none (`engine_chooses`). vLLM could (a one-token request restricted to
    the candidate tokens, `allowed_token_ids`, greedy: its token is their arg-max), but evr1's vLLM engine does not
    ask. Called before an evaluation, and by a training run's rollout worker when it evaluates periodically."""
    if protocol != "official" or engine_chooses(engine):
        return
    for bench in benches:
        if bench.official is not None and bench.official.choice is not None:
            raise ConfigError(f"benchmark {bench.name!r}: its official scorer chooses each answer by the model's logits"
                              f" over the option letters, which the {type(engine).__name__} engine does not"
                              " give: evaluate it with the HF engine (`--engine hf`, `rollout.engine='hf'`), or choose"
                              " the strict headline (`--protocol strict`, `eval.protocol='strict'`): its official block"
                              " is then unavailable")


def evaluate(spec: EvalSpec, responder: Responder, run_dir: str | Path, *, benchmarks: Sequence[str] | None = None,
             data_root: str | Path | None = None) -> dict[str, Any]:
    """Evaluate (or resume) the benchmarks of `spec` (or `benchmarks`) and write the run's reports (`require_choices`
    first)."""
    loaded = load_benchmarks(spec, benchmarks, data_root)
    if isinstance(responder, EngineResponder):
        require_choices((b.bench for b in loaded), responder.engine, spec.protocol)
    options = RunOptions(spec.batch_size, spec.media_workers, spec.prefetch)
    return run_loaded(loaded, responder, run_dir, run_settings(spec, responder), options, spec.protocol)


def read_responses(path: str | Path) -> tuple[dict[str, str | None], dict[str, str]]:
    """`{id: response}` of a JSONL file of `{"id": ..., "response": text or null}` rows, and `{id: letter}` of the
    rows that also carry `"official_choice"`: the option letter an official scorer choosing by logits picked
    (LiveSports-3K: `evr1.eval.logit_choice`), recorded where the model ran; errors name the line."""
    path = Path(path)
    if not path.is_file():
        raise Evr1Error(f"responses file {path} does not exist")
    table: dict[str, str | None] = {}
    choices: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise Evr1Error(f"{path}:{number}: not JSON ({exc.msg})") from None
        valid = isinstance(row, dict) and "id" in row and isinstance(row.get("response", 0), (str, type(None)))
        if not valid:
            raise Evr1Error(f"{path}:{number}: expected {{\"id\": ..., \"response\": text or null}}, got {line[:80]!r}")
        rid = str(row["id"])
        if rid in table:
            raise Evr1Error(f"{path}:{number}: id {rid!r} again (first at line {lines[rid]})")
        table[rid], lines[rid] = row["response"], number
        if "official_choice" in row:
            choice = row["official_choice"]
            if not (isinstance(choice, str) and len(choice) == 1 and choice in LETTERS):
                raise Evr1Error(f"{path}:{number}: official_choice must be one option letter (A, B, ...), got {choice!r}")
            choices[rid] = choice
    return table, choices


def check_response_ids(table: Mapping[str, Any], loaded: Sequence[Loaded], path: str | Path) -> None:
    """An Evr1Error listing the ids of `table` that are no record of the `loaded` benchmarks (ids of other
    registered benchmarks are left alone), with the `<benchmark>/` prefix to add when that would match."""
    from evr1.registry import BENCHMARKS

    others = set(BENCHMARKS.names()) - {b.bench.name for b in loaded}
    known = frozenset().union(*(b.ids for b in loaded))
    unknown = [i for i in table if i not in known and i.split("/", 1)[0] not in others]
    if not unknown:
        return
    listed = ", ".join(repr(i) for i in unknown[:5]) + (f", ... ({len(unknown) - 5} more)" if len(unknown) > 5 else "")
    names = ", ".join(b.bench.name for b in loaded)
    prefixed = next((f"{b.bench.name}/{i}" for i in unknown for b in loaded if f"{b.bench.name}/{i}" in b.ids), None)
    hint = f"; record ids are '<benchmark>/<id>', e.g. {prefixed!r}" if prefixed else ""
    raise Evr1Error(f"{path}: {len(unknown)} response id(s) match no record of {names}: {listed}{hint}")


def evaluate_responses(spec: EvalSpec, responses: str | Path, run_dir: str | Path, *,
                       benchmarks: Sequence[str] | None = None, data_root: str | Path | None = None) -> dict[str, Any]:
    """Score the responses of a JSONL file (see `read_responses`) on the benchmarks of `spec` (or `benchmarks`) and
    write the run's reports; a record without a response fails. Its settings are the file's path and hash."""
    table, choices = read_responses(responses)
    loaded = load_benchmarks(spec, benchmarks, data_root)
    check_response_ids(table, loaded, responses)
    path = Path(responses)
    settings = {"responses": {"path": str(path.resolve()), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}}
    options = RunOptions(spec.batch_size, spec.media_workers, spec.prefetch)
    return run_loaded(loaded, ScriptedResponder(table, default=None, choices=choices), run_dir, settings, options, spec.protocol)


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
