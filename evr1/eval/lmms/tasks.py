"""Bind the task folders of `evals/` to a data root, so lmms-eval runs them on local data.

    evr1 eval lmms-tasks --data-root DATA --out TASKS
    lmms-eval --model evr1 --model_args model=... --include_path TASKS --tasks evr1_videomme

Every `evals/<benchmark>/*.yaml` is a template: an lmms-eval task (or group) config with two keys of
ours. `evr1_stock: videomme/videomme.yaml` names the stock task it extends (a path under lmms-eval's
`tasks/`), which becomes an `include:` of that file; its prompts, scoring and aggregation are used
unless the template overrides them. `evr1_subset: action_sequence` keeps only the documents of that
subset (one task of a group). Binding writes, under `<out>/<benchmark>/`, each template with its
dataset set to a local JSONL of documents (`test` split) and the other files of the folder
(`utils.py`, ...). Groups keep only the tasks that have documents.

A document is made from each record of the benchmark (its importer reads the official or
EasyVideoR1 annotations) by the benchmark's converter, which also sees the raw annotation row
(the stock task's fields), plus our keys: `evr1_id`, `evr1_benchmark`, `evr1_subset`,
`evr1_record` (the record's fields) and `evr1_media` (absolute paths and clip bounds), which
`doc_to_visual` gives to the model.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evr1.data.records import Record, RecordError
from evr1.errors import ConfigError, Evr1Error

EVALS_DIR = Path(__file__).resolve().parents[3] / "evals"
STOCK_KEY, SUBSET_KEY, SUBSET_FIELD = "evr1_stock", "evr1_subset", "evr1_subset"


# -- YAML with lmms-eval's `!function` tags kept as they are --------------------------------------


@dataclass(frozen=True)
class Function:
    """An `!function module.name` reference, kept verbatim."""

    name: str


class _Loader(yaml.SafeLoader):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Loader.add_constructor("!function", lambda loader, node: Function(loader.construct_scalar(node)))
_Dumper.add_representer(Function, lambda dumper, f: dumper.represent_scalar("!function", f.name))


def read_template(path: Path) -> dict[str, Any]:
    try:
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise Evr1Error(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(config, dict):
        raise Evr1Error(f"{path}: expected a mapping (an lmms-eval task config)")
    return config


def write_config(path: Path, config: Mapping[str, Any]) -> None:
    path.write_text(yaml.dump(dict(config), Dumper=_Dumper, sort_keys=False, allow_unicode=True), encoding="utf-8")


# -- documents ------------------------------------------------------------------------------------


def media_fields(record: Record, data_root: Path) -> list[dict[str, Any]]:
    """The record's media with absolute paths and clip bounds (`evr1_media`)."""
    out = []
    for ref in record.media:
        item: dict[str, Any] = {"type": ref.kind, "path": str((data_root / ref.path).resolve())}
        if ref.start is not None:
            item["video_start"] = ref.start
        if ref.end is not None:
            item["video_end"] = ref.end
        out.append(item)
    return out


def doc_to_visual(doc: Mapping[str, Any]) -> list[Any]:
    """lmms-eval visuals of a bound document: paths, or `{type, path, video_start, video_end}` for clips.

    The JSON loader gives every media item the union of all items' keys (`None` where absent).
    """
    visuals: list[Any] = []
    for media in doc["evr1_media"]:
        item = {k: v for k, v in media.items() if v is not None}
        visuals.append(item if "video_start" in item or "video_end" in item else item["path"])
    return visuals


def record_doc(record: Record, row: Mapping[str, Any]) -> dict[str, Any]:
    """The default converter: the record itself (for tasks scored by `evr1.eval.lmms.scoring`)."""
    return record.model_dump(mode="json", exclude={"media", "offline_response", "offline_logprobs"})


def benchmark_docs(name: str, data_root: str | Path) -> list[dict[str, Any]]:
    """The documents of benchmark `name` under `data_root`, in annotation order."""
    from evr1.registry import BENCHMARKS

    bench = BENCHMARKS.get(name)
    root = Path(data_root).resolve()
    convert = bench.lmms_doc or record_doc  # a benchmark extending a stock task converts to its fields
    docs: list[dict[str, Any]] = []
    for record, row, ctx in bench.rows(root):
        try:
            doc = convert(record, row)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RecordError(ctx.file, ctx.line, None, f"{name}: cannot make an lmms-eval document: {exc!r}") from None
        doc.update(evr1_id=record.id, evr1_benchmark=bench.name, evr1_media=media_fields(record, root),
                   evr1_record=record_doc(record, row))
        doc.setdefault(SUBSET_FIELD, None)
        docs.append(doc)
    return docs


# -- binding --------------------------------------------------------------------------------------


def stock_tasks_dir() -> Path:
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("lmms-eval is not installed: pip install -e '.[eval]'")
    return Path(next(iter(spec.submodule_search_locations))) / "tasks"


def template_dir(evals: str | Path | None, name: str) -> Path:
    base = Path(evals) if evals is not None else EVALS_DIR
    folder = base / name
    if not folder.is_dir():
        raise ConfigError(f"no lmms-eval task folder for benchmark {name!r} at {folder} (pass --evals DIR)")
    return folder


@dataclass(frozen=True)
class Bound:
    """What binding one benchmark wrote: its task (and group) names and documents per task."""

    benchmark: str
    tasks: dict[str, int]
    groups: tuple[str, ...]
    skipped: tuple[str, ...]  # templates without documents

    @property
    def names(self) -> list[str]:
        """What to pass to `--tasks`: the groups, else the tasks."""
        return list(self.groups) or list(self.tasks)


@dataclass
class _Plan:
    """One benchmark's bound folder, made in memory: files to write and what they hold."""

    bound: Bound
    src: Path
    configs: dict[str, dict[str, Any]]  # file name -> config
    docs: dict[str, list[dict[str, Any]]]  # file name -> documents


def plan_benchmark(name: str, data_root: str | Path, out: str | Path, evals: str | Path | None = None) -> _Plan:
    """Convert the documents of benchmark `name` and assign them to its templates (nothing written).

    Every document goes to a template: documents of a subset no template reads are an error, never
    dropped (a misspelt subset would shrink the denominator).
    """
    src = template_dir(evals, name)
    dest = Path(out).resolve() / name
    docs = benchmark_docs(name, data_root)
    stock = stock_tasks_dir()
    templates = [(path, read_template(path)) for path in sorted(src.glob("*.y*ml"))]
    groups = [(p, c) for p, c in templates if _is_group(c)]
    tasks = [(p, c) for p, c in templates if not _is_group(c)]
    subsets = {c.get(SUBSET_KEY) for _, c in tasks}
    if None not in subsets:
        unread = Counter(str(d.get(SUBSET_FIELD)) for d in docs if d.get(SUBSET_FIELD) not in subsets)
        if unread:
            listed = ", ".join(f"{value!r} ({n})" for value, n in sorted(unread.items()))
            raise Evr1Error(f"benchmark {name!r}: no task of {src} reads the documents of subset {listed}; "
                            f"known subsets: {', '.join(sorted(map(str, subsets)))}")
    plan = _Plan(Bound(name, {}, (), ()), src, {}, {})
    counts: dict[str, int] = {}
    skipped: list[str] = []
    for path, config in tasks:
        config = dict(config)
        subset = config.pop(SUBSET_KEY, None)
        chosen = [d for d in docs if subset is None or d.get(SUBSET_FIELD) == subset]
        task = config.get("task")
        if not isinstance(task, str):
            raise Evr1Error(f"{path}: a task template needs `task: <unique name>`")
        if not chosen:
            skipped.append(task)
            continue
        if STOCK_KEY in config:
            stock_file = stock / str(config.pop(STOCK_KEY))
            if not stock_file.is_file():
                raise ConfigError(f"{path}: stock task file {stock_file} does not exist in this lmms-eval")
            config = {"include": str(stock_file), **config}
        docs_name = f"docs-{subset}.jsonl" if subset else "docs.jsonl"
        plan.docs[docs_name] = chosen
        config.update(dataset_path="json", dataset_name=None, test_split="test",
                      dataset_kwargs={"data_files": {"test": str(dest / docs_name)}})
        config.setdefault("doc_to_visual", Function("evr1.eval.lmms.tasks.doc_to_visual"))
        plan.configs[path.name] = config
        counts[task] = len(chosen)
    if not counts:
        raise Evr1Error(f"benchmark {name!r}: no documents for any of its tasks under {data_root}")
    group_names = []
    for path, config in groups:
        members = [t for t in _as_list(config["task"]) if t in counts]
        if members:
            plan.configs[path.name] = {**config, "task": members}
            group_names.append(str(config["group"]))
    plan.bound = Bound(name, counts, tuple(group_names), tuple(skipped))
    return plan


def write_plan(plan: _Plan, out: str | Path) -> Bound:
    """Write a planned folder beside its destination, then put it in place of the old one."""
    dest = Path(out).resolve() / plan.bound.benchmark
    fresh = dest.with_name(f".{dest.name}.binding")
    if fresh.exists():
        shutil.rmtree(fresh)
    fresh.mkdir(parents=True)
    for extra in plan.src.iterdir():
        if extra.is_file() and extra.suffix not in (".yaml", ".yml"):
            shutil.copy2(extra, fresh / extra.name)
    for docs_name, docs in plan.docs.items():
        write_jsonl(fresh / docs_name, docs)
    for file_name, config in plan.configs.items():
        write_config(fresh / file_name, config)
    if dest.exists():
        shutil.rmtree(dest)
    fresh.rename(dest)
    return plan.bound


def bind_benchmark(name: str, data_root: str | Path, out: str | Path, evals: str | Path | None = None) -> Bound:
    """Write the bound task folder of benchmark `name` under `<out>/<name>/`."""
    return write_plan(plan_benchmark(name, data_root, out, evals), out)


def bind(data_root: str | Path, out: str | Path, benchmarks: Sequence[str], evals: str | Path | None = None) -> list[Bound]:
    """Bind the task folders of `benchmarks`: every document is converted before any folder is written."""
    from evr1.registry import BENCHMARKS

    for name in benchmarks:
        BENCHMARKS.get(name)  # an unknown name fails with the known ones and a close match
        template_dir(evals, name)
    plans = [plan_benchmark(name, data_root, out, evals) for name in benchmarks]
    return [write_plan(plan, out) for plan in plans]


def present(data_root: str | Path, benchmarks: Sequence[str]) -> tuple[list[str], list[str]]:
    """The `benchmarks` whose annotations are under `data_root`, and those whose annotations are not (to bind
    what a data root holds when no benchmark is named); an error when none is there."""
    from evr1.registry import BENCHMARKS

    found: list[str] = []
    absent: list[str] = []
    for name in benchmarks:
        (found if BENCHMARKS.get(name).annotation_paths(data_root, required=False) else absent).append(name)
    if not found:
        raise ConfigError(f"no benchmark annotations under {data_root}: none of {len(absent)} benchmarks has its folder"
                          " there (see docs/benchmarks.md for the layout; `evr1 eval fixtures --out DIR` writes tiny copies)")
    return found, absent


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _is_group(config: Mapping[str, Any]) -> bool:
    """A group template: a `group` over a list of tasks, with no data of its own."""
    return "group" in config and "task" in config and STOCK_KEY not in config and "dataset_path" not in config


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]
