"""docs/specs.md, generated from the specs: `python -m evr1.docs_specs` writes it, `--check` fails when stale.

Every spec reachable from `Experiment` gets a section (in the order the experiment reaches it) with
its docstring and one row per field: the path to set it by (`--set PATH=VALUE`), its type as
declared, its default, and its note. A field's note is its pydantic `description` when it has one,
else the comment on its line in the source, after any comment lines just above it. A spec that
appears at several paths (the shared `VideoSpec`) has one section that lists them all.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import re
import sys
import textwrap
import tokenize
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

DOC = Path(__file__).resolve().parents[1] / "docs" / "specs.md"
COMMAND = "python -m evr1.docs_specs"
_CONSTRAINT = re.compile(r"Annotated\[(\w+), Field\(([^()]*)\)\]")
_REGISTRY = re.compile(r"RegistryName\(\"(\w+)\"\)")


@cache
def _comments(path: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    source = Path(path).read_text(encoding="utf-8")
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT}


@cache
def _declarations(cls: type[BaseModel]) -> dict[str, tuple[str, str]]:
    """Field name -> (its annotation as written, the comments that document it) from the source."""
    path = inspect.getsourcefile(cls)
    lines, start = inspect.getsourcelines(cls)
    source = textwrap.dedent("".join(lines))
    tree = ast.parse(source)
    comments = _comments(path) if path else {}
    code_lines = {i + start for i, text in enumerate(lines) if text.strip() and not text.strip().startswith("#")}
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body[0].body:  # type: ignore[attr-defined]
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        first, last = node.lineno + start - 1, node.end_lineno + start - 1  # type: ignore[operator]
        above = []
        line = first - 1
        while line in comments and line not in code_lines:
            above.insert(0, comments[line])
            line -= 1
        notes = [*above, *(comments[n] for n in range(first, last + 1) if n in comments)]
        out[node.target.id] = (ast.get_source_segment(source, node.annotation) or "", " ".join(notes))
    return out


def _spec_classes(annotation: Any) -> list[type[BaseModel]]:
    """The spec classes an annotation holds directly (`FooSpec`, `FooSpec | None`)."""
    found = typing.get_args(annotation) or (annotation,)
    return [c for c in found if inspect.isclass(c) and issubclass(c, BaseModel)]


def _type(written: str) -> str:
    text = _REGISTRY.sub(r"name in \1", written)
    return _CONSTRAINT.sub(r"\1 (\2)", text).replace("PositiveInt", "int (gt=0)").replace("Probability", "float (0-1)")


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        factory = info.default_factory
        return f"{factory.__name__}()" if inspect.isclass(factory) else repr(factory())  # type: ignore[call-arg]
    if info.default is PydanticUndefined:
        return "required"
    return repr(info.default)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def walk(root: type[BaseModel]) -> dict[type[BaseModel], list[str]]:
    """Every spec class reachable from `root`, in the order first reached, with the paths it sits at."""
    found: dict[type[BaseModel], list[str]] = {root: [""]}

    def visit(cls: type[BaseModel], prefix: str) -> None:
        for name, info in cls.model_fields.items():
            for sub in _spec_classes(info.annotation):
                path = f"{prefix}{name}"
                first = sub not in found
                found.setdefault(sub, []).append(path)
                if first:
                    visit(sub, f"{path}.")

    visit(root, "")
    return found


def _section(cls: type[BaseModel], paths: list[str]) -> Iterator[str]:
    where = ", ".join(f"`{p}`" for p in paths if p) or "the experiment root"
    yield f"## {cls.__name__}"
    yield ""
    yield f"At {where}."
    yield ""
    yield inspect.cleandoc(cls.__doc__ or "")
    yield ""
    yield "| field | type | default | note |"
    yield "|---|---|---|---|"
    declared = _declarations(cls)
    for name, info in cls.model_fields.items():
        written, comment = declared.get(name, ("", ""))
        note = info.description or comment
        path = f"{paths[0]}.{name}" if paths[0] else name
        yield f"| `{path}` | `{_cell(_type(written))}` | `{_cell(_default(info))}` | {_cell(note)} |"
    yield ""


def render() -> str:
    """The text of docs/specs.md."""
    from evr1.experiment import Experiment

    lines = [
        "# Spec reference",
        "",
        f"Generated from the specs by `{COMMAND}` (from `evr1/specs/` and `evr1/experiment.py`); do not edit",
        "by hand. After adding or changing a spec field, run that command; `tests/test_docs_specs.py` fails while",
        "this file is stale. Set a field with `evr1 run NAME --set PATH=VALUE` (a key of a dict field:",
        "`--set reward.routes.open_ended=open_ended_judge`). Types are as declared (`int (gt=0)`: an int > 0;",
        "`name in rewards`: a name registered in the `rewards` registry).",
        "",
    ]
    for cls, paths in walk(Experiment).items():
        lines.extend(_section(cls, paths))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Write docs/specs.md from the specs.")
    parser.add_argument("--check", action="store_true", help="exit 1 (and write nothing) when docs/specs.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        stale = not DOC.exists() or DOC.read_text(encoding="utf-8") != text
        if stale:
            print(f"{DOC} is stale: run `{COMMAND}`", file=sys.stderr)
        return int(stale)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
