"""The base of every spec and the field types the specs share."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field


class Spec(BaseModel):
    """Base of all specs: immutable, unknown fields rejected, defaults validated."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def _in_registry(registry: str):
    def check(name: str) -> str:
        from evr1.registry import REGISTRIES, UnknownNameError  # built-ins load lazily

        try:
            REGISTRIES[registry].canonical(name)
        except UnknownNameError as exc:
            raise ValueError(str(exc)) from None  # pydantic then names the field path
        return name

    return AfterValidator(check)


def RegistryName(registry: str):
    """A `str` field that must name a component of `registry` (checked at validation)."""
    return Annotated[str, _in_registry(registry)]


PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
