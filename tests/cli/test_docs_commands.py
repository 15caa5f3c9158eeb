"""Every `evr1 ...` command line written in README.md and docs/*.md names real sub-commands and options."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from evr1.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLI = typer.main.get_command(app)


def _command_lines(doc: Path) -> list[tuple[int, str]]:
    """(line, text from `evr1` on) of each command in a code span or a line of a fenced block; a comment cut off."""
    found, fenced = [], False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        spans = [line] if fenced else re.findall(r"`([^`\n]+)`", line)
        for span in spans:
            match = re.match(r"\s*(?:\$ )?(evr1 .*)", span)
            if match:
                found.append((number, match.group(1).split(" #")[0]))
    return found


def _problems(text: str) -> list[str]:
    """What in one command line is no sub-command or option of the `evr1` CLI."""
    words = text.split()[1:]
    commands = [CLI]
    while words and hasattr(commands[0], "commands"):  # a group (typer's own click)
        names = [n for n in words[0].split("|") if n and not n.startswith("-")]
        if not names:
            break
        missing = [n for n in names if n not in commands[0].commands]
        if missing:
            return [f"no command {' '.join(missing)!r} in {commands[0].name!r}"]
        commands = [commands[0].commands[n] for n in names]
        words = words[1:]
    known = {opt for cmd in commands for p in cmd.params for opt in (*p.opts, *p.secondary_opts)}
    flags = re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(words))
    return [f"{'/'.join(c.name for c in commands)}: no option {flag}" for flag in flags if flag not in known]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_documented_commands_exist(doc: Path) -> None:
    bad = [f"{doc.name}:{line}: {text}: {why}" for line, text in _command_lines(doc) for why in _problems(text)]
    assert bad == []


def test_the_check_finds_wrong_commands_and_options() -> None:
    assert _problems("evr1 cache info|verify|prune CACHE") == []
    assert _problems("evr1 eval run TARGET --benchmarks mvbench --data-root DIR --out DIR") == []
    assert _problems("evr1 cache inspect CACHE") == ["no command 'inspect' in 'cache'"]
    assert _problems("evr1 eval compare A B --protocl strict") == ["compare: no option --protocl"]
    assert _problems("evr1 list [KIND] [-e EXP]") == []
    assert _problems("evr1 list -x") == ["list: no option -x"]
