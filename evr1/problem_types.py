"""The canonical problem types: one enum shared by records, rewards, the router and eval.

Aliases (the spellings found in public datasets such as Video-R1 / EasyVideoR1) are resolved
here and nowhere else.
"""

from __future__ import annotations

from enum import StrEnum

from evr1.errors import Evr1Error, suggest


class ProblemType(StrEnum):
    MULTIPLE_CHOICE = "multiple_choice"
    NUMERICAL = "numerical"
    REGRESSION = "regression"
    TEMPORAL_GROUNDING = "temporal_grounding"
    SPATIAL_GROUNDING = "spatial_grounding"
    SPATIAL_TEMPORAL_GROUNDING = "spatial_temporal_grounding"
    TRACKING = "tracking"
    OPEN_ENDED = "open_ended"
    MATH = "math"
    OCR = "ocr"
    BOOLEAN = "boolean"
    CODE = "code"
    PREFERENCE = "preference"

    @classmethod
    def parse(cls, value: str | ProblemType) -> ProblemType:
        """The canonical type for a name or alias; raises `UnknownProblemTypeError` otherwise."""
        if isinstance(value, ProblemType):
            return value
        found = _ALIASES.get(_norm(str(value)))
        if found is None:
            allowed = [t.value for t in cls]
            raise UnknownProblemTypeError(
                f"unknown problem_type {value!r}.{suggest(str(value), allowed)} Allowed: {', '.join(allowed)}"
                " (aliases are listed in evr1.problem_types)"
            )
        return found


class UnknownProblemTypeError(ValueError, Evr1Error):
    """A problem type that is neither canonical nor a known alias."""


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


_ALIAS_TABLE: dict[ProblemType, tuple[str, ...]] = {
    ProblemType.MULTIPLE_CHOICE: ("multiple choice", "multiple-choice", "mc", "mcq", "choice"),
    ProblemType.NUMERICAL: ("numerical", "numeric", "number", "counting"),
    ProblemType.REGRESSION: ("regression", "mra"),
    ProblemType.TEMPORAL_GROUNDING: ("temporal grounding", "temporal localization", "tg"),
    ProblemType.SPATIAL_GROUNDING: ("spatial grounding", "grounding", "bbox"),
    ProblemType.SPATIAL_TEMPORAL_GROUNDING: ("spatial temporal grounding", "spatial-temporal grounding", "stvg", "spatiotemporal grounding"),
    ProblemType.TRACKING: ("tracking", "object tracking"),
    ProblemType.OPEN_ENDED: ("open ended", "open-ended", "free form", "free-form", "open", "video qa", "video description"),
    ProblemType.MATH: ("math", "mathematics"),
    ProblemType.OCR: ("ocr",),
    ProblemType.BOOLEAN: ("boolean", "bool", "yes/no", "yes no", "yesno", "true/false", "judgement", "binary classification"),
    ProblemType.CODE: ("code", "coding", "svg code", "html code", "python"),
    ProblemType.PREFERENCE: ("preference", "pairwise preference"),
}

_ALIASES: dict[str, ProblemType] = {}
for _type, _names in _ALIAS_TABLE.items():
    for _name in (_type.value, *_names):
        _ALIASES[_norm(_name)] = _type
