"""`evr1 eval run | compare | fixtures | list`: evaluate on video benchmarks and compare runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from evr1.specs import EvalSpec

app = typer.Typer(help="Evaluate checkpoints on video benchmarks.", no_args_is_help=True)
console = Console(highlight=False, soft_wrap=True)


def _names(value: str | None) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()] if value else []


def with_options(spec: EvalSpec, *, video: dict[str, Any], judge: dict[str, Any], image: dict[str, Any] | None = None,
                 **fields: Any) -> EvalSpec:
    """`spec` with the command-line options given (not None): `video`, `image` and `judge` fields update the spec's
    own (the rest of its judge, e.g. `api_key_env`, is kept); a ConfigError naming the field when a value is invalid."""
    from pydantic import ValidationError

    from evr1.errors import ConfigError
    from evr1.experiment import format_validation_error

    def given(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if v is not None}

    dumped = spec.model_dump()
    try:
        return type(spec).model_validate({**dumped, **given(fields), "video": {**dumped["video"], **given(video)},
                                          "image": {**dumped["image"], **given(image or {})},
                                          "judge": {**dumped["judge"], **given(judge)}})
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, "eval")) from None


GENERATION_OPTIONS = ("--fps", "--max-frames", "--min-pixels", "--max-pixels", "--image-min-pixels", "--image-max-pixels",
                      "--prompt-mode", "--max-tokens", "--batch-size")


def run_note(run: Path, spec: EvalSpec) -> str:
    """The line saying that a training run is evaluated as it was trained, and at which settings."""
    v = spec.video
    rate = f"fps {v.fps:g}" if v.fps is not None else f"{v.nframes} frames"
    return (f"evaluating {run / 'final_model'} with the run's eval settings ({run / 'config.json'}): {rate},"
            f" frames {v.min_frames}-{v.max_frames}, pixels {v.min_pixels}-{v.max_pixels}, prompt {spec.prompt_mode}")


@app.command()
def run(
    target: Annotated[str | None, typer.Argument(metavar="TARGET", help="A model (registered name or HF checkpoint directory), a training run (its directory or final_model/: evaluated at the run's eval settings) or an experiment; not with --responses.")] = None,
    benchmarks: Annotated[str | None, typer.Option(help="Comma-separated benchmark names (default: the experiment's).")] = None,
    data_root: Annotated[Path | None, typer.Option(help="Folder holding the benchmark folders.")] = None,
    out: Annotated[Path, typer.Option(help="Output directory (rerun to resume; failed samples are retried).")] = Path("runs/eval"),
    responses: Annotated[Path | None, typer.Option(help="Score these responses (JSONL of {id: '<benchmark>/<id>', response}, optionally official_choice: LiveSports-3K's recorded choice by logits) instead of generating.")] = None,
    limit: Annotated[int | None, typer.Option(help="Keep the first N items of each benchmark.")] = None,
    fps: Annotated[float | None, typer.Option(help="Frames per second sampled from videos.")] = None,
    max_frames: Annotated[int | None, typer.Option(help="Most frames per video.")] = None,
    min_pixels: Annotated[int | None, typer.Option(help="Fewest pixels per frame.")] = None,
    max_pixels: Annotated[int | None, typer.Option(help="Most pixels per frame.")] = None,
    image_min_pixels: Annotated[int | None, typer.Option(help="Fewest pixels per image.")] = None,
    image_max_pixels: Annotated[int | None, typer.Option(help="Most pixels per image.")] = None,
    prompt_mode: Annotated[str | None, typer.Option(help="direct | reason")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Most response tokens.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Samples generated together.")] = None,
    judge_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint of the LLM judge (open-ended answers).")] = None,
    judge_model: Annotated[str | None, typer.Option(help="Model name of the LLM judge.")] = None,
    protocol: Annotated[str | None, typer.Option(help="Headline protocol: official (the benchmark authors' scorer; default) or strict (evr1's rules). Both are always computed.")] = None,
    engine: Annotated[str, typer.Option(help="Rollout engine.")] = "hf",
    device: Annotated[str, typer.Option(help="Device of the HF engine.")] = "cpu",
) -> None:
    """Evaluate TARGET (or score --responses) on benchmarks; writes samples.jsonl, results.json and results.md under --out."""
    from evr1.errors import ConfigError
    from evr1.eval.api import engine_responder, evaluate, evaluate_responses, resolve_target, run_of
    from evr1.specs import EvalSpec

    generation = dict(zip(GENERATION_OPTIONS, (fps, max_frames, min_pixels, max_pixels, image_min_pixels, image_max_pixels,
                                               prompt_mode, max_tokens, batch_size)))
    if responses is not None:
        given = [name for name, value in generation.items() if value is not None]
        if target is not None or given:
            extra = f"TARGET {target!r}" if target is not None else ", ".join(given)
            raise ConfigError(f"--responses scores given answers: {extra} would not be used (generation only)")
        model, spec = None, EvalSpec()
    elif target is None:
        raise ConfigError("give TARGET (a model or an experiment) to generate answers, or --responses FILE to score given ones")
    else:
        model, spec = resolve_target(target)
        run_dir = run_of(target)
        if run_dir is not None and spec is not None:
            console.print(run_note(run_dir, spec), markup=False)
        spec = spec or EvalSpec()
    spec = with_options(spec, video={"fps": fps, "max_frames": max_frames, "min_pixels": min_pixels, "max_pixels": max_pixels},
                        image={"min_pixels": image_min_pixels, "max_pixels": image_max_pixels},
                        judge={"base_url": judge_url, "model": judge_model}, limit=limit, prompt_mode=prompt_mode,
                        max_response_tokens=max_tokens, batch_size=batch_size, protocol=protocol)
    root = data_root or spec.data_root
    names = _names(benchmarks) or None
    if responses is not None:
        results = evaluate_responses(spec, responses, out, benchmarks=names, data_root=root)
    else:
        responder = engine_responder(model, spec, engine=engine, device=device, data_root=root)  # type: ignore[arg-type]
        results = evaluate(spec, responder, out, benchmarks=names, data_root=root)
    for name, r in results["benchmarks"].items():
        console.print(headline_line(name, r), markup=False)
        for error in r["errors"][:3]:
            console.print(f"  failed: {error}", markup=False)
    console.print(f"results: {Path(out) / 'results.md'}", markup=False)


def headline_line(name: str, result: dict[str, Any]) -> str:
    """One benchmark's headline (its protocol's), with the other protocol's score beside it."""
    head = result.get("protocol", "strict")
    line = (f"{name}: {result['score']:.2f} {head} ({result['metric']}; n={result['n']}, failed={result['failed']},"
            f" unparsed={result['unparsed']}, dropped={result.get('dropped', 0)})")
    others = [f"{p} {b['score']:.2f} (n={b['n']})" for p, b in result.get("protocols", {}).items() if p != head]
    return line + "".join(f"; {o}" for o in others)


@app.command()
def compare(
    run_a: Annotated[Path, typer.Argument(help="First run directory (or its results.json).")],
    run_b: Annotated[Path, typer.Argument(help="Second run directory (or its results.json).")],
    protocol: Annotated[str, typer.Option(help="The protocol compared: official or strict (a run scored before protocols holds strict numbers only).")] = "official",
) -> None:
    """Print every metric of two runs under one protocol side by side with deltas (B - A)."""
    from evr1.eval.report import compare_table, load_results

    console.print(compare_table(load_results(run_a), load_results(run_b), protocol, (str(run_a), str(run_b))))


@app.command()
def fixtures(
    out: Annotated[Path, typer.Option(help="Where to write the tiny benchmark copies.")],
    benchmarks: Annotated[str | None, typer.Option(help="Comma-separated names (default: all 22).")] = None,
) -> None:
    """Write tiny fixtures of the benchmarks (official annotation formats, generated videos)."""
    from evr1.eval.fixtures import write_fixtures

    counts = write_fixtures(out, _names(benchmarks) or None)
    console.print(f"wrote {sum(counts.values())} items of {len(counts)} benchmarks under {out}")


@app.command("lmms-tasks")
def lmms_tasks(
    data_root: Annotated[Path, typer.Option(help="Folder holding the benchmark folders.")],
    out: Annotated[Path, typer.Option(help="Where to write the bound task folders (pass it to lmms-eval --include_path).")],
    benchmarks: Annotated[str | None, typer.Option(help="Comma-separated names (default: every benchmark whose annotations are under --data-root).")] = None,
    evals: Annotated[Path | None, typer.Option(help="Task templates (default: the repository's evals/).")] = None,
) -> None:
    """Bind the lmms-eval task folders of evals/ to local data; prints the task names for --tasks."""
    from evr1.eval.lmms.tasks import bind, present
    from evr1.registry import BENCHMARKS

    names = _names(benchmarks)
    if not names:
        names, absent = present(data_root, BENCHMARKS.names())
        if absent:
            console.print(f"skipped {len(absent)} benchmarks without annotations under {data_root}: {', '.join(absent)}",
                          markup=False)
    bound = bind(data_root, out, names, evals)
    for b in bound:
        names = ", ".join(b.skipped) if len(b.skipped) <= 3 else f"{len(b.skipped)} subtasks"
        skipped = f" (without documents: {names})" if b.skipped else ""
        console.print(f"{b.benchmark}: {', '.join(b.names)} — {sum(b.tasks.values())} documents{skipped}")
    console.print(f"lmms-eval --model evr1 --include_path {out} --tasks {','.join(n for b in bound for n in b.names)}")


@app.command("list")
def list_benchmarks() -> None:
    """The registered benchmarks, their metric and lmms-eval task."""
    from evr1.registry import BENCHMARKS

    for name in BENCHMARKS.names():
        bench = BENCHMARKS.get(name)
        base = f"extends stock {bench.lmms_task}" if bench.lmms_task else "scored by evr1"
        console.print(f"{name}: {bench.title} — {bench.metric} [lmms-eval: evr1_{name}, {base}]", markup=False)
