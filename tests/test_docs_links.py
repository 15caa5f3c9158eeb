"""README.md and docs/*.md point at things that exist: relative links (and their #anchors), repository paths
and `evr1.module.name` objects named in code spans, the spec fields named as `section.field` paths, and the counts
of problem types and benchmarks."""

from __future__ import annotations

import ast
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path

import pytest
from pydantic import BaseModel

from evr1.experiment import Experiment
from evr1.problem_types import ProblemType
from evr1.registry import BENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"(?<![\w./~-])((?:evr1|benchmarks|experiments|scripts|tests|evals|docs)/[\w./*-]*)")
EXAMPLES = {"experiments/", "experiments/my_exp.py", "experiments/NAME.py", "experiments/split.py"}  # a user's, not ours
SPEC_PATH = re.compile(r"(?<![\w./$-])((?:" + "|".join(Experiment.model_fields) + r")(?:\.\w+)+)")
DOTTED = re.compile(r"(?<![\w./-])(evr1(?:\.\w+)+)")
NOT_SPEC = re.compile(r"\.(mdb|jsonl?|py|md|png)$")  # file names such as data.mdb


def _spans(path: Path) -> list[tuple[int, str]]:
    return [
        (n, code)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for code in CODE.findall(line)
    ]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but hyphens, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def _broken_link(doc: Path, target: str) -> str | None:
    if re.match(r"[a-z]+:", target):
        return None  # a web address: not checked here
    file, _, anchor = target.partition("#")
    dest = (doc.parent / file).resolve() if file else doc
    if not dest.exists():
        return f"{target}: no file {dest.relative_to(ROOT)}"
    if anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
        return f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}"
    return None


def _top_level_names(module: Path) -> set[str]:
    names = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _missing_object(dotted: str) -> str | None:
    """None when `evr1.a.b` is a module or package of this tree, or `evr1.a.b.name` one defined in a module."""
    parts = dotted.split(".")
    for i in range(len(parts), 1, -1):  # the longest prefix that is a module of evr1
        base = ROOT.joinpath(*parts[:i])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = parts[i:]
            if not rest:
                return None
            return None if rest[0] in _top_level_names(module) else f"{'.'.join(parts[:i])} defines no {rest[0]!r}"
    return "no such module"


def _field_type(model: type[BaseModel], path: list[str]) -> str | None:
    """None when `path` names a field under `model` (a key of a dict field, a field of a tuple's items), else why not."""
    name, rest = path[0], path[1:]
    field = model.model_fields.get(name)
    if field is None:
        return f"{model.__name__} has no field {name!r}"
    if not rest:
        return None
    annotation = field.annotation
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for option in options:
        if isinstance(option, type) and issubclass(option, BaseModel):
            return _field_type(option, rest)
        if typing.get_origin(option) in (dict, Mapping) or option is dict:
            return None  # the rest is a key
        items = [t for t in typing.get_args(option) if isinstance(t, type) and issubclass(t, BaseModel)]
        if typing.get_origin(option) in (tuple, list) and items:
            return _field_type(items[0], rest)  # a field of each item (`rejection.statistic`)
    return f"{model.__name__}.{name} has no fields"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_and_anchors_exist(doc: Path) -> None:
    targets = LINK.findall(doc.read_text(encoding="utf-8"))
    assert [why for t in targets if (why := _broken_link(doc, t))] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_repository_paths_in_code_spans_exist(doc: Path) -> None:
    missing = []
    for line, code in _spans(doc):
        for match in REPO_PATH.finditer(code):
            path = match.group(1).rstrip(".").split("::")[0]
            if path not in EXAMPLES and not list(ROOT.glob(path.rstrip("/"))):
                missing.append(f"{doc.name}:{line}: {path}")
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_spec_paths_name_real_fields(doc: Path) -> None:
    bad = [
        f"{doc.name}:{line}: {path}: {why}"
        for line, code in _spans(doc)
        for path in SPEC_PATH.findall(code)
        if not NOT_SPEC.search(path) and (why := _field_type(Experiment, path.split(".")))
    ]
    assert bad == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_evr1_objects_in_code_spans_exist(doc: Path) -> None:
    bad = [
        f"{doc.name}:{line}: {name}: {why}"
        for line, code in _spans(doc)
        for name in DOTTED.findall(code)
        if (why := _missing_object(name.rstrip(".")))
    ]
    assert bad == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_counts_of_problem_types_and_benchmarks_are_the_registries(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    type_counts = re.findall(r"\b(\d+) (?:canonical )?(?:problem )?types\b", text)
    benchmarks = re.findall(r"\b(\d+) (?:video )?benchmarks\b(?! lmms-eval has)", text)
    assert {int(n) for n in type_counts} <= {len(ProblemType)}
    assert {int(n) for n in benchmarks} <= {len(BENCHMARKS.names())}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_make_targets_named_exist(doc: Path) -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE))
    named = {t for _, code in _spans(doc) for t in re.findall(r"^make ([\w-]+)", code)}
    named |= set(re.findall(r"^make ([\w-]+)", doc.read_text(encoding="utf-8"), re.MULTILINE))
    assert named <= targets


def test_the_checks_catch_what_they_look_for() -> None:
    readme = ROOT / "README.md"
    assert _broken_link(readme, "docs/rewards.md#the-code-sandbox") is None
    assert "no heading #no-such" in _broken_link(readme, "docs/rewards.md#no-such")
    assert "no file" in _broken_link(readme, "docs/nothing.md")
    assert _missing_object("evr1.algos.objective.actor_objective") is None
    assert _missing_object("evr1.registry") is None
    assert _missing_object("evr1.algos.objective.nothing") == "evr1.algos.objective defines no 'nothing'"
    assert _missing_object("evr1.nothing.x") == "no such module"
    assert _slug("Settings (`RewardSpec`)") == "settings-rewardspec"
    assert _field_type(Experiment, ["reward", "routes", "open_ended"]) is None
    assert _field_type(Experiment, ["model", "lora", "rank"]) is None  # through `LoraSpec | None`
    assert _field_type(Experiment, ["algo", "clip_hihg"]) == "AlgoSpec has no field 'clip_hihg'"
    assert _field_type(Experiment, ["trainer", "steps", "x"]) == "TrainerSpec.steps has no fields"
    assert SPEC_PATH.findall("--set trainer.steps=3 data.mdb cfg.trainer.steps") == ["trainer.steps", "data.mdb"]
