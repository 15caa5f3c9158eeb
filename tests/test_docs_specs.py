"""docs/specs.md is generated from the specs: stale docs fail, and each field's note comes from its
description or its source comments."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from evr1 import docs_specs
from evr1.specs import Spec


def test_docs_specs_md_is_up_to_date() -> None:
    assert docs_specs.DOC.read_text(encoding="utf-8") == docs_specs.render(), (
        f"docs/specs.md is stale: run `{docs_specs.COMMAND}`"
    )


class _Inner(Spec):
    """Inner settings."""

    depth: int = 1


class _Sample(Spec):
    """A sample spec.

    With a second paragraph.
    """

    plain: int = 3
    commented: Annotated[float, Field(gt=0)] | None = 0.5  # the note on its line
    # a note above,
    # on two lines
    above: str = "x"  # and one on its line
    described: bool = Field(default=False, description="from the description")  # not this comment
    needed: int
    inner: _Inner = Field(default_factory=_Inner)
    shared: _Inner | None = None


def test_each_field_row_has_path_type_default_and_note() -> None:
    rows = [line for line in docs_specs._section(_Sample, ["top"]) if line.startswith("| `")]
    assert rows == [
        "| `top.plain` | `int` | `3` |  |",
        "| `top.commented` | `float (gt=0) \\| None` | `0.5` | the note on its line |",
        "| `top.above` | `str` | `'x'` | a note above, on two lines and one on its line |",
        "| `top.described` | `bool` | `False` | from the description |",
        "| `top.needed` | `int` | `required` |  |",
        "| `top.inner` | `_Inner` | `_Inner()` |  |",
        "| `top.shared` | `_Inner \\| None` | `None` |  |",
    ]


def test_a_spec_at_several_paths_is_listed_once_with_all_of_them() -> None:
    found = docs_specs.walk(_Sample)
    assert found == {_Sample: [""], _Inner: ["inner", "shared"]}
    assert "At `inner`, `shared`." in list(docs_specs._section(_Inner, found[_Inner]))


def test_check_reports_a_stale_file(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(docs_specs, "DOC", tmp_path / "specs.md")
    assert docs_specs.main(["--check"]) == 1
    assert "stale: run `python -m evr1.docs_specs`" in capsys.readouterr().err
    assert docs_specs.main([]) == 0 and docs_specs.main(["--check"]) == 0
