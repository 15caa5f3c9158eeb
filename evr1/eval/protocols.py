"""The two protocols every evaluation reports, over the same scored samples: `official` and `strict`.

- `strict`: evr1's rules. Every sample counts in every denominator (failed and unparsed ones score 0), one
  answer reader serves all benchmarks (the reward router's `score` in the sample row), and the benchmark's
  own `aggregate`.
- `official`: the benchmark authors' scorer as far as evr1 reproduces it (`Benchmark.official`): its item
  rule (a sample row -> the official item score, or None when the official scorer drops the item from
  every denominator), the rows its aggregation counts where it merges items (`Official.counted`) and its
  aggregation; where the scorer asks an LLM judge with its own prompt, its judge step
  (`Official.judge`, run when the answer is scored: `evr1.eval.judging`; the row's `official` holds its
  result for the item rule); where it chooses answers by the model's logits over the option letters, its choice
  (`Official.choice`, made when the model runs: `evr1.eval.logit_choice`; given responses hold none, and the
  block is then unavailable). A benchmark without an item rule scores its items as `strict`
  does; without an `Official` at all, its official block is the strict one (docs/benchmarks.md says which).

A block, as `results.json` holds it under `protocols`: the headline `score`, `metric` (what the headline is),
`metrics`, `breakdowns` (`{key: {label: {score, n}}}`), `n` (items counted), `failed` and `unparsed` (among the
items counted; unparsed: evr1's reader found no answer of the problem type's form) and `dropped` (items the
protocol leaves out of its denominators). An official block whose scorer needs a judge, in a run with none (a `strict`
headline), or whose scorer chooses by logits, in samples holding no choice, has no numbers (`score` None) and says
why under `unavailable`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evr1.errors import Evr1Error
from evr1.eval.aggregate import Aggregator
from evr1.eval.logit_choice import LogitChoice, missing_choice

if TYPE_CHECKING:
    from evr1.data.records import Record
    from evr1.eval.definition import Benchmark
    from evr1.specs import JudgeSpec

Row = Mapping[str, Any]
Protocol = Literal["official", "strict"]
PROTOCOLS: tuple[Protocol, ...] = ("official", "strict")
BLOCK_KEYS = ("score", "metric", "metrics", "breakdowns", "n", "failed", "unparsed", "dropped")
ItemRule = Callable[[Row], "float | Mapping[str, Any] | None"]  # row -> official score (0-1) or row update; None: dropped
JudgeStep = Callable[["Record", str, "JudgeSpec"], Mapping[str, Any]]  # one answer's official judging (row `official`)


@dataclass(frozen=True)
class Official:
    """A benchmark's official scorer: what its headline is, its aggregation, its item rule, where it comes from."""

    metric: str
    aggregate: Aggregator
    item: ItemRule | None = None  # None: the strict item score (the official reading is evr1's); a Mapping: row update
    source: str = ""  # the scorer reproduced (repository, commit or version, file)
    judge: JudgeStep | None = None  # the official scorer's LLM-judge request, made for every answered item
    judge_optional: bool = False  # the scorer also runs without its judge (TempCompass --disable_llm): no judge set,
    # no step (the item rule scores without it)
    counted: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None  # of the kept rows (in record order),
    # those its aggregation counts, where it merges items (Charades-STA: one per repeated query); the rest are dropped
    choice: LogitChoice | None = None  # the answer is chosen by the model's logits (LiveSports-3K); `item` reads it


def official_rows(bench: Benchmark, rows: Sequence[Row]) -> tuple[list[dict[str, Any]], int]:
    """The rows the official scorer counts, each with its official `score`, and how many it dropped."""
    rule = bench.official.item if bench.official is not None else None
    kept: list[dict[str, Any]] = []
    for row in rows:
        found = rule(row) if rule is not None else row["score"]
        if isinstance(found, Mapping):
            kept.append({**row, **found, "score": float(found["score"])})
        elif found is not None:
            kept.append({**row, "score": float(found)})
    if bench.official is not None and bench.official.counted is not None:
        kept = bench.official.counted(kept)
    return kept, len(rows) - len(kept)


def needs_official_judge(bench: Benchmark) -> bool:
    """Whether `bench`'s official block needs its judge step (one that is not optional: MMVU, VCR-Bench, ...)."""
    return bench.official is not None and bench.official.judge is not None and not bench.official.judge_optional


NO_JUDGE = ("the official scorer asks an LLM judge about every answer and no judge was set (eval.judge.base_url /"
            " model): score these samples again with one for official numbers")


def unavailable(bench: Benchmark, why: str = NO_JUDGE) -> dict[str, Any]:
    """An official block that cannot be computed (no judge, by default): no numbers, `unavailable` says `why`."""
    return {"score": None, "metric": bench.official.metric if bench.official else bench.metric, "metrics": {},
            "breakdowns": {}, "n": 0, "failed": 0, "unparsed": 0, "dropped": 0,
            "unavailable": why}


def block(bench: Benchmark, rows: Sequence[Row], protocol: Protocol) -> dict[str, Any]:
    """The results of `rows` under `protocol` (see the module docstring for its keys)."""
    if protocol == "official" and bench.official is not None:
        counted, dropped = official_rows(bench, rows)
        aggregate, metric = bench.official.aggregate, bench.official.metric
    elif protocol in PROTOCOLS:
        counted, dropped, aggregate, metric = list(rows), 0, bench.aggregate, bench.metric
    else:
        raise Evr1Error(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    result = aggregate(counted)
    return {
        "score": result.score, "metric": metric, "metrics": result.metrics,
        "breakdowns": {k: {label: {"score": s, "n": n} for label, (s, n) in v.items()} for k, v in result.breakdowns.items()},
        "n": len(counted), "failed": sum(1 for r in counted if r.get("error")),
        "unparsed": sum(1 for r in counted if not r.get("error") and r.get("parsed") is None), "dropped": dropped,
    }


def official_block(bench: Benchmark, rows: Sequence[Row], judged: bool = True) -> dict[str, Any]:
    """The official block of `rows`; `judged` False: no judge was set, so an official block that needs one is
    `unavailable`, as is one choosing by logits over rows without the choice."""
    choice = bench.official.choice if bench.official is not None else None
    why = missing_choice(choice, rows) if choice is not None else None
    if not judged and needs_official_judge(bench):
        why = NO_JUDGE
    return unavailable(bench, why) if why else block(bench, rows, "official")


def blocks(bench: Benchmark, rows: Sequence[Row], judged: bool = True) -> dict[str, dict[str, Any]]:
    """Both protocols' blocks of `rows` (`official_block`, `block`)."""
    return {"official": official_block(bench, rows, judged), "strict": block(bench, rows, "strict")}


def protocol_block(result: Mapping[str, Any], protocol: Protocol, where: str) -> Mapping[str, Any]:
    """One benchmark result's block of `protocol`. A result written before there were protocols (no `protocols`)
    holds evr1's strict numbers only: its block for `strict`, an Evr1Error naming `where` for `official`."""
    if protocol not in PROTOCOLS:
        raise Evr1Error(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    if "protocols" in result:
        return result["protocols"][protocol]
    if protocol == "strict":
        return result
    raise Evr1Error(f"{where}: {result.get('benchmark', 'this result')} was scored before evr1 reported protocols, so"
                    " it holds evr1's strict numbers only: compare with --protocol strict, or score its samples again"
                    " (`evr1 eval run --responses FILE`) for the official ones")
