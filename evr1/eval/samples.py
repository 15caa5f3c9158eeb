"""The evaluation loop: prefetch media, generate, score, stream samples to disk, resume, aggregate.

    result = evaluate_benchmark(bench, records, responder, run_dir, settings, router)

Media and prompts for upcoming samples are prepared in a thread pool while the responder works
on the current batch. Each scored sample is appended to `<run_dir>/<benchmark>/samples.jsonl`
(and flushed) as soon as its batch is done; a rerun skips the ids done there and retries the
failed ones (a failed scoring on the stored response, without generating again), so an
interrupted run resumes without duplicating or skipping any sample. The settings the samples are
made under are kept beside them (`settings.json`, written whole or not at all): a resume under
others is refused, naming the settings that differ, and so is one beside a `settings.json` that
cannot be read. A batch the responder fails on is retried one sample at a time; a sample that
still fails is a failed row, and many failures in a row stop the run (the engine is broken). Failed and unparsed samples score 0 and stay in
every denominator of the `strict` protocol; the `official` one counts what the benchmark's official scorer counts.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evr1.data.records import Record
from evr1.errors import Evr1Error
from evr1.eval.definition import Benchmark
from evr1.eval.judging import official_judged, officially_asked
from evr1.eval.logit_choice import LogitChoice
from evr1.eval.protocols import Protocol, blocks
from evr1.eval.responders import Prepared, Responder
from evr1.problem_types import ProblemType
from evr1.rewards import RewardInput, RewardRouter, extract_answer
from evr1.rewards.contract import Shown
from evr1.rewards.format_reward import content_suits
from evr1.rewards.multiple_choice import choice_letter

if TYPE_CHECKING:
    from evr1.specs import JudgeSpec

logger = logging.getLogger("evr1.eval")
T = TypeVar("T")
R = TypeVar("R")
_END = object()


def prefetched(items: Iterable[T], fn: Callable[[T], R], workers: int, ahead: int) -> Iterator[R]:
    """`fn(item)` for every item, in order, with up to `ahead` calls running in `workers` threads."""
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="evr1-eval-media") as pool:
        it = iter(items)
        pending = deque(pool.submit(fn, item) for item in islice(it, max(1, ahead)))
        while pending:
            future = pending.popleft()
            nxt = next(it, _END)
            if nxt is not _END:
                pending.append(pool.submit(fn, nxt))
            yield future.result()


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


SETTINGS_FILE = "settings.json"


def settings_id(settings: Mapping[str, Any]) -> str:
    """A short hash of the settings a sample was produced under (checked on resume)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted path -> value of nested settings."""
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{prefix}.{key}" if prefix else str(key)).items()}
    return {prefix: value}


def settings_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """`path: old -> new` for every setting that differs (`-` where one side lacks it)."""
    as_read = [json.loads(json.dumps(s, default=str)) for s in (old, new)]  # as JSON reads them back: tuples as lists
    before, after = _leaves(as_read[0]), _leaves(as_read[1])
    return [f"{k}: {before.get(k, '-')!r} -> {after.get(k, '-')!r}" for k in sorted(before.keys() | after.keys())
            if before.get(k, KeyError) != after.get(k, KeyError)]


def recorded_settings(folder: Path) -> dict[str, Any] | None:
    """The settings the samples in `folder` were made under: its `settings.json`, else (a folder written before
    there was one) the settings of its `results.json`; None when neither is there. A file that cannot be read
    is an `Evr1Error` naming it (never taken as "no settings": that would let other settings through)."""
    if (folder / SETTINGS_FILE).is_file():
        return _json_object(folder / SETTINGS_FILE)
    if (folder / "results.json").is_file():
        settings = _json_object(folder / "results.json").get("settings")
        return {k: v for k, v in settings.items() if k != "judge"} if isinstance(settings, dict) else None
    return None


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; an `Evr1Error` saying what to do when it is empty, torn or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
        why = None if isinstance(value, dict) else "does not hold a JSON object"
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        why = "is empty" if not path.read_bytes().strip() else f"is not valid JSON ({exc})"
    if why is not None:
        raise Evr1Error(f"{path} {why}, so the settings of the samples beside it are unknown: delete it to resume (each"
                        " sample's own settings id is still checked), or use another output directory")
    return value


def check_settings(folder: Path, settings: Mapping[str, Any]) -> None:
    """Refuse to resume the samples in `folder` under other `settings` than they were made with, naming the
    settings that differ; then record `settings` there (unless samples of unknown settings are there)."""
    samples, old = folder / "samples.jsonl", recorded_settings(folder)
    if samples.exists() and old is not None and settings_id(old) != settings_id(settings):
        changes = settings_changes(old, settings)
        if changes:  # else only how JSON stores them differs: the samples' own ids decide
            raise Evr1Error(f"{samples} holds samples made with other settings ({'; '.join(changes)}): use another output"
                            " directory, or the same settings to resume")
    if old is not None or not samples.exists():
        record_settings(folder, settings)


def record_settings(folder: Path, settings: Mapping[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / SETTINGS_FILE, json.dumps(settings, indent=2, sort_keys=True, default=str) + "\n")


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` by `text` in one step (a temporary sibling renamed over it): a killed run leaves the old
    file or the new one, never a torn one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def parsed_answer(record: Record, response: str) -> str | None:
    """What was read from a response: the option letter for multiple choice, else the answer text when it has
    the form of the problem type (a number, an interval, yes or no, non-empty text, ...); None when none was read."""
    text = extract_answer(response).text
    if record.problem_type is ProblemType.MULTIPLE_CHOICE:
        return choice_letter(text, record.options)
    return text if content_suits(text, RewardInput.from_record(record, response)) else None


def read_log(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The rows (with line numbers) of a JSONL log we append to; a torn last line (a killed run) is cut off."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1].strip():  # no newline at the end: the last write did not finish
        logger.warning("%s: dropping an incomplete last line", path)
        path.write_bytes(b"\n".join(lines[:-1]) + b"\n")
        lines = lines[:-1]
    rows = []
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            try:
                rows.append((number, json.loads(raw)))
            except json.JSONDecodeError as exc:
                raise Evr1Error(f"{path}:{number}: malformed line ({exc.msg}); remove it to resume") from None
    return rows


def write_samples(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Replace the samples file by `rows` (one per id), atomically."""
    write_atomic(path, "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows))


def read_samples(path: Path, sid: str) -> dict[str, dict[str, Any]]:
    """The samples already written, all made under settings `sid`: the last row of each id (a retried sample's
    row replaces its failed one; a file left with both by a killed run is rewritten with one row per id)."""
    logged = read_log(path)
    rows: dict[str, dict[str, Any]] = {}
    for number, row in logged:
        if row.get("settings_id") != sid:
            raise Evr1Error(
                f"{path}:{number}: sample {row.get('id')!r} was made with other settings ({row.get('settings_id')} vs {sid});"
                " use another output directory or the same settings to resume"
            )
        rows[row["id"]] = row
    if len(rows) < len(logged):
        write_samples(path, rows.values())
    return rows


@dataclass(frozen=True)
class RunOptions:
    batch_size: int = 4
    media_workers: int = 2
    prefetch: int = 8  # samples prepared ahead of the one being generated
    max_failures_in_row: int = 8  # generation failures in a row that stop the run (the engine is broken)
    progress: bool | None = None  # a progress bar per benchmark; None: when stderr is a terminal


Scored = tuple[float, dict[str, float], str | None]  # accuracy, components (no format), error


def score_responses(records: Sequence[Record], responses: Sequence[str], router: RewardRouter,
                    shown: Sequence[Shown | None] | None = None) -> list[Scored]:
    """Score each response to its record, read against what the model was `shown` of it (when known);
    a scorer failure or "not applicable" scores 0 with `error` set."""
    seen = shown if shown is not None else [None] * len(records)
    inputs = [RewardInput.from_record(r, text, shown=s) for r, text, s in zip(records, responses, seen)]
    out = []
    for output in router.score(inputs):
        error = output.error or (None if output.applicable else "scorer not applicable to this sample")
        accuracy = float(output.components.get("accuracy", output.score)) if error is None else 0.0
        out.append((accuracy, {k: v for k, v in output.components.items() if k != "format"}, error))
    return out


def sample_row(bench: Benchmark, record: Record, response: str | None, scored: Scored,
               official: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The scored sample as the benchmark's aggregation reads it (`score`, `components`, `error`, `meta`, ...), with
    the official judge step's result (`official`, see `evr1.eval.judging`) when the benchmark has one."""
    score, components, error = scored
    parsed = parsed_answer(record, response) if response is not None else None
    return {
        "id": record.id, "benchmark": bench.name, "problem_type": record.problem_type.value, "response": response,
        "parsed": parsed, "answer": record.answer, "options": record.options, "score": score, "components": components,
        "error": error, "meta": record.meta, **({"official": dict(official)} if official is not None else {}),
    }


def _row(bench: Benchmark, p: Prepared, response: str | None, scored: Scored | None, sid: str,
         scorer: str | None, official: Mapping[str, Any] | None = None) -> dict[str, Any]:
    row = sample_row(bench, p.record, response, scored if scored is not None else (0.0, {}, p.error), official)
    return {**row, "prompt_hash": p.prompt_hash, "settings_id": sid, "scorer_id": scorer, "cache_hits": p.cache_hits}


def generate(responder: Responder, batch: Sequence[Prepared]) -> tuple[dict[str, str], dict[str, str]]:
    """The responses to `batch` by id, and the generation errors by id: a batch the responder fails on is
    retried one sample at a time, so that one bad sample (an over-long video running out of memory) fails alone."""
    if not batch:
        return {}, {}
    try:
        answers = responder.respond(batch)
        if len(answers) != len(batch):
            raise Evr1Error(f"the responder gave {len(answers)} answers to {len(batch)} prompts")
        return dict(zip((p.record.id for p in batch), answers)), {}
    except Exception as exc:  # noqa: BLE001 - one failing sample must not stop the benchmark; it is recorded
        if len(batch) == 1:
            error = f"generation failed: {type(exc).__name__}: {exc}"
            logger.warning("%s: %s", batch[0].record.id, error)
            return {}, {batch[0].record.id: error}
        logger.warning("generation failed on a batch of %d (%s: %s); retrying one sample at a time", len(batch),
                       type(exc).__name__, exc)
    responses: dict[str, str] = {}
    errors: dict[str, str] = {}
    for p in batch:
        answered, failed = generate(responder, [p])
        responses |= answered
        errors |= failed
    return responses, errors


def official_choices(responder: Responder, choice: LogitChoice, batch: Sequence[Prepared]) -> dict[str, dict[str, Any]]:
    """The official choice by logits of each sample of `batch` by id (`{"error": ...}` where it failed): a batch the
    responder fails on is retried one sample at a time, as `generate` does."""
    if not batch:
        return {}
    try:
        return dict(zip((p.record.id for p in batch), responder.choose(batch, choice), strict=True))
    except Exception as exc:  # noqa: BLE001 - one failing sample must not stop the benchmark; it is recorded
        if len(batch) == 1:
            return {batch[0].record.id: {"error": f"official choice failed: {type(exc).__name__}: {exc}"}}
    return {k: v for p in batch for k, v in official_choices(responder, choice, [p]).items()}


def chooser(bench: Benchmark, responder: Responder) -> LogitChoice | None:
    """The official choice by logits the runner asks `responder` for on `bench` (None: none, or it cannot make one)."""
    choice = bench.official.choice if bench.official is not None else None
    return choice if choice is not None and getattr(responder, "chooses", False) else None


def officially_judged(bench: Benchmark, row: Mapping[str, Any], judge: JudgeSpec) -> bool:
    """Whether `row` holds what its benchmark's official judge step gives with `judge` (a row without a response needs
    none, nor one of an optional step without a judge; one whose judge was unreachable, or one scored before the step
    existed, is judged on a resume)."""
    if bench.official is None or bench.official.judge is None or row.get("response") is None:
        return True
    if not officially_asked(bench, judge):
        return True
    official = row.get("official")
    return official is not None and "error" not in official


def stored_response(earlier: Mapping[str, Any] | None, p: Prepared) -> str | None:
    """The response of a failed earlier row of this sample that can be scored again: one generated from the same prompt."""
    if earlier is None or earlier.get("response") is None or earlier.get("prompt_hash") != p.prompt_hash:
        return None
    return earlier["response"]


def run_samples(bench: Benchmark, records: Sequence[Record], responder: Responder, samples: Path, sid: str,
                router: RewardRouter, options: RunOptions, scorer: str | None = None) -> dict[str, dict[str, Any]]:
    """Generate and score every record not yet in `samples`, or whose row there failed or was scored under other
    scoring settings than `scorer` (the judge's): such rows are scored again on their stored response when
    it was generated from the same prompt, else generated again. Where the official scorer chooses by logits and the
    responder can (`chooser`), each prepared sample's choice is made and kept in its row's `official`; a row without
    one is done again (its response kept). Returns the row of every id.

    The progress bar (`options.progress`) counts the records done (resumed ones included) and the failed ones."""
    from tqdm import tqdm

    samples.parent.mkdir(parents=True, exist_ok=True)
    rows = read_samples(samples, sid)
    choice = chooser(bench, responder)
    todo = [r for r in records if r.id not in rows or rows[r.id].get("error") or rows[r.id].get("scorer_id") != scorer
            or not officially_judged(bench, rows[r.id], router.spec.judge)
            or (choice is not None and "choice" not in (rows[r.id].get("official") or {}))]
    retried = {r.id: rows[r.id] for r in todo if r.id in rows}
    failures_in_row = failed = 0
    bar = tqdm(total=len(records), initial=len(records) - len(todo), desc=bench.name, unit="sample",
               disable=None if options.progress is None else not options.progress)
    with bar, samples.open("a", encoding="utf-8") as out:
        prepare = partial(responder.prepare, choice=choice) if choice is not None else responder.prepare
        prepared = prefetched(todo, prepare, options.media_workers, options.prefetch)
        for batch in batched(prepared, options.batch_size):
            ready = [p for p in batch if p.error is None]
            responses = {p.record.id: text for p in ready if (text := stored_response(retried.get(p.record.id), p)) is not None}
            generated, errors = generate(responder, [p for p in ready if p.record.id not in responses])
            responses |= generated
            answered = [p for p in ready if p.record.id in responses]
            scored = score_responses([p.record for p in answered], [responses[p.record.id] for p in answered], router,
                                     [p.shown for p in answered]) if answered else []
            scores = dict(zip((p.record.id for p in answered), scored))
            judged = dict(zip((p.record.id for p in answered), official_judged(
                bench, [p.record for p in answered], [responses[p.record.id] for p in answered], router.spec.judge)))
            chosen = official_choices(responder, choice, ready) if choice is not None else {}
            for p in batch:
                done = replace(p, error=p.error or errors.get(p.record.id))
                official = {**(judged.get(p.record.id) or {}), **chosen.get(p.record.id, {})} or None
                row = _row(bench, done, responses.get(p.record.id), scores.get(p.record.id), sid, scorer, official)
                rows[row["id"]] = row
                out.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                failed += bool(row["error"])
            out.flush()
            bar.set_postfix(failed=failed, refresh=False)
            bar.update(len(batch))
            failures_in_row = 0 if generated else failures_in_row + len(errors)
            if failures_in_row >= options.max_failures_in_row:
                last = next(reversed(errors.items()))
                raise Evr1Error(f"{bench.name}: generation failed for {failures_in_row} samples in a row (last: {last[0]}:"
                                f" {last[1]}); the engine looks broken, stopping. Rows so far are in {samples}: rerun to"
                                " resume (failed samples are retried)")
    if retried:
        write_samples(samples, rows.values())
    return rows


def missing_row(bench: Benchmark, record: Record, sid: str) -> dict[str, Any]:
    return {"id": record.id, "benchmark": bench.name, "problem_type": record.problem_type.value, "score": 0.0,
            "components": {}, "error": "no sample", "meta": record.meta, "settings_id": sid, "response": None,
            "parsed": None, "answer": record.answer, "options": record.options}


def summarize(bench: Benchmark, records: Sequence[Record], rows: Mapping[str, Mapping[str, Any]],
              settings: Mapping[str, Any], notes: Sequence[str] = (), protocol: Protocol = "official",
              judged: bool = True) -> dict[str, Any]:
    """The results of one benchmark: both protocols' blocks (`protocols`), the headline `protocol`'s block at the top
    level (its `score`, `metric`, `metrics`, `breakdowns`, counts), the first errors, settings and load notes.

    `failed`: samples with no answer scored (preparation, generation or scoring failed, or no response given);
    `unparsed`: samples answered without an answer of the problem type's form (`parsed_answer` is None).
    Under `strict` both score 0 and count in `n`; `official` counts what the official scorer counts (`dropped`:
    the items it leaves out); `judged` False: no judge was set (see `evr1.eval.protocols.blocks`)."""
    sid = settings_id(settings)
    ordered = [rows.get(r.id) or missing_row(bench, r, sid) for r in records]
    both = blocks(bench, ordered, judged)
    failed = [r for r in ordered if r.get("error")]
    return {
        "benchmark": bench.name, "title": bench.title, "protocol": protocol, **both[protocol], "protocols": both,
        "errors": [f"{r['id']}: {r['error']}" for r in failed[:10]],
        "notes": list(notes),
        "settings": dict(settings),
    }


def evaluate_benchmark(bench: Benchmark, records: Sequence[Record], responder: Responder, run_dir: str | Path,
                       settings: Mapping[str, Any], router: RewardRouter, options: RunOptions = RunOptions(),
                       notes: Sequence[str] = (), judge: Mapping[str, Any] | None = None,
                       protocol: Protocol = "official") -> dict[str, Any]:
    """Run (or resume) one benchmark in `run_dir/<name>/` and write its `results.json` (with the `notes` of its loading).

    `settings` make the responses (a resume under others is refused); `judge` scores them (a resume under
    another judge scores the stored responses again). Both are reported. `protocol` is the headline (both
    protocols are computed: `evr1.eval.protocols`)."""
    folder = Path(run_dir) / bench.name
    settings = {**settings, "benchmark": bench.name}
    scorer = settings_id(judge) if judge else None
    check_settings(folder, settings)
    rows = run_samples(bench, records, responder, folder / "samples.jsonl", settings_id(settings), router, options, scorer)
    if not (folder / SETTINGS_FILE).is_file():  # samples of unrecorded settings were resumed: all are under these now
        record_settings(folder, settings)
    result = summarize(bench, records, rows, {**settings, "judge": judge} if judge else settings, notes, protocol,
                       officially_asked(bench, router.spec.judge))
    write_atomic(folder / "results.json", json.dumps(result, indent=2, default=str))
    return result
