"""The `Experiment` root, building it from a Fiddle graph, and `--set` overrides.

An experiment file holds functions returning `fdl.Config[Experiment]`. Leaves are pydantic specs;
`build` validates them and reports errors with the full field path.
"""

from __future__ import annotations

import ast
import inspect
import types
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import fiddle as fdl
from pydantic import BaseModel, Field, ValidationError, model_validator

from evr1.errors import ConfigError, Evr1Error, known_list, suggest
from evr1.specs import (
    AlgoSpec,
    DataSpec,
    EvalSpec,
    MixerSpec,
    ModelSpec,
    OptimSpec,
    ResourcesSpec,
    RewardSpec,
    RolloutSpec,
    Spec,
    TrainerSpec,
)


class Experiment(Spec):
    """A complete, validated experiment: every setting of a run, and nothing else."""

    name: str = "experiment"
    description: str = ""
    model: ModelSpec = Field(default_factory=ModelSpec)
    data: DataSpec = Field(default_factory=DataSpec)
    rollout: RolloutSpec = Field(default_factory=RolloutSpec)
    mixer: MixerSpec = Field(default_factory=MixerSpec)
    reward: RewardSpec = Field(default_factory=RewardSpec)
    algo: AlgoSpec = Field(default_factory=AlgoSpec)
    optim: OptimSpec = Field(default_factory=OptimSpec)
    trainer: TrainerSpec = Field(default_factory=TrainerSpec)
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    eval: EvalSpec = Field(default_factory=EvalSpec)

    @model_validator(mode="after")
    def _coherent(self) -> Experiment:
        if self.mixer.name is not None and self.mixer.k >= self.rollout.n:
            raise ValueError(f"mixer.k ({self.mixer.k}) must be smaller than rollout.n ({self.rollout.n})")
        if self.model.lora is not None and self.resources.learner_sharding == "fsdp":
            raise ValueError("model.lora is not supported with resources.learner_sharding='fsdp' yet: set"
                             " learner_sharding='replicated' (each worker holds the frozen base and the adapters)")
        if self.trainer.max_staleness and self.resources.num_gpus and self.rollout.colocate:
            raise ValueError("trainer.max_staleness > 0 generates while the learners update, but a colocated engine"
                             " (rollout.colocate=True) shares learner 0's GPU and sleeps while it trains: set"
                             " rollout.colocate=False to give the engine GPUs of its own, or max_staleness=0")
        return self


# -- building -------------------------------------------------------------------------------


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def format_validation_error(error: ValidationError, path: str) -> str:
    """One line per problem: `field.path: message (got value)`."""
    lines = []
    for err in error.errors():
        where, parts = path, list(err["loc"])
        for i, part in enumerate(parts):
            if part == "[key]":  # pydantic: the dict key just named is what is wrong
                continue
            where = _join(where, part) if i + 1 >= len(parts) or parts[i + 1] != "[key]" else f"{where} key {part!r}"
        got = f" (got {err['input']!r})" if err["type"] not in ("missing", "value_error") and "input" in err else ""
        message = err["msg"].removeprefix("Value error, ")
        lines.append(f"{where or '<experiment>'}: {message}{got}")
    return "\n".join(lines)


def build(cfg: fdl.Buildable) -> Any:
    """Build a Fiddle graph, validating each spec and naming the field path of any error.

    Shared sub-configs are built once, so every part receives the same object.
    """
    memo: dict[int, Any] = {}

    def visit(node: Any, path: str) -> Any:
        if isinstance(node, fdl.Buildable):
            if id(node) not in memo:
                if not isinstance(node, fdl.Config):
                    memo[id(node)] = fdl.build(node)
                    return memo[id(node)]
                kwargs = {k: visit(v, _join(path, k)) for k, v in node.__arguments__.items()}
                try:
                    memo[id(node)] = node.__fn_or_cls__(**kwargs)
                except ValidationError as exc:
                    raise ConfigError(format_validation_error(exc, path)) from None
                except Evr1Error as exc:
                    raise ConfigError(f"{path or '<experiment>'}: {exc}") from None
            return memo[id(node)]
        if isinstance(node, (list, tuple)):
            return type(node)(visit(v, _join(path, i)) for i, v in enumerate(node))
        if isinstance(node, dict):
            return {k: visit(v, _join(path, str(k))) for k, v in node.items()}
        return node

    return visit(cfg, "")


def build_experiment(cfg: fdl.Config) -> Experiment:
    """Build and check that the root really is an `Experiment`."""
    if not isinstance(cfg, fdl.Config) or not (
        inspect.isclass(cfg.__fn_or_cls__) and issubclass(cfg.__fn_or_cls__, Experiment)
    ):
        raise ConfigError(f"an experiment function must return fdl.Config[Experiment], got {cfg!r}")
    return build(cfg)


# -- overrides ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    """One `--set path=value` as given on the command line, with its parsed value."""

    path: str
    raw: str
    value: Any = field(compare=False)

    def __str__(self) -> str:
        return f"--set {self.path}={self.raw}"


def parse_value(raw: str) -> Any:
    """A Python literal if it parses as one, `@registry:name` checked against the registry, else the text."""
    text = raw.strip()
    if text.startswith("@") and ":" in text:
        from evr1.registry import REGISTRIES

        registry, _, name = text[1:].partition(":")
        if registry not in REGISTRIES:
            raise ConfigError(f"unknown registry {registry!r} in {raw!r}.{suggest(registry, REGISTRIES)} Known: {known_list(REGISTRIES)}")
        return REGISTRIES[registry].canonical(name)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_override(item: str) -> Override:
    path, sep, raw = item.partition("=")
    if not sep or not path.strip():
        raise ConfigError(f"--set expects PATH=VALUE (e.g. algo.clip_high=0.28), got {item!r}")
    try:
        value = parse_value(raw)
    except Evr1Error as exc:  # an unknown registry or name in `@registry:name`
        message = exc.args[0] if exc.args else str(exc)
        raise ConfigError(f"{path.strip()}: {message}") from None
    return Override(path=path.strip(), raw=raw, value=value)


def _fields_of(node: fdl.Config) -> list[str]:
    return list(inspect.signature(node.__fn_or_cls__).parameters)


def as_config(value: Any, memo: dict[int, fdl.Config] | None = None) -> Any:
    """A spec instance as an editable `fdl.Config` (recursively); other values unchanged.

    With a `memo` shared between calls, an instance met several times becomes one shared Config.
    """
    if not isinstance(value, BaseModel):
        return value
    memo = {} if memo is None else memo
    if id(value) not in memo:
        memo[id(value)] = fdl.Config(type(value), **{k: as_config(getattr(value, k), memo) for k in value.model_fields_set})
    return memo[id(value)]


def share_instances(cfg: fdl.Buildable) -> None:
    """Replace every spec instance in the graph by a Config, one per instance: an instance that
    several fields share (`video = VideoSpec(...)` given to data and eval) stays shared, so an
    override of it reaches every place it appears."""
    memo: dict[int, fdl.Config] = {}
    seen: set[int] = set()

    def convert(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return as_config(value, memo)
        if isinstance(value, fdl.Buildable):
            visit(value)
        elif type(value) in (list, tuple):
            items = [convert(v) for v in value]
            if any(new is not old for new, old in zip(items, value)):
                return type(value)(items)
        elif type(value) is dict:
            items = {k: convert(v) for k, v in value.items()}
            if any(items[k] is not v for k, v in value.items()):
                return items
        return value

    def visit(node: fdl.Buildable) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for name, value in list(node.__arguments__.items()):
            new = convert(value)
            if new is not value:
                setattr(node, name, new)

    visit(cfg)


def _spec_class(annotation: Any) -> type[BaseModel] | None:
    """The spec class inside an annotation such as `FooSpec | None`, if there is one."""
    candidates = typing.get_args(annotation) or (annotation,)
    found = [c for c in candidates if inspect.isclass(c) and issubclass(c, BaseModel)]
    return found[0] if len(found) == 1 else None


def _child(node: fdl.Config, name: str, done: str) -> fdl.Config:
    """The sub-config at `node.name`, made editable: a default or `None` spec becomes a Config."""
    cls = node.__fn_or_cls__
    field_info = cls.model_fields.get(name) if inspect.isclass(cls) and issubclass(cls, BaseModel) else None
    if name in node.__arguments__:
        value = node.__arguments__[name]
    elif field_info is not None:
        value = field_info.get_default(call_default_factory=True, validated_data={})
    else:
        value = getattr(node, name)
    if value is None and field_info is not None and _spec_class(field_info.annotation) is not None:
        value = fdl.Config(_spec_class(field_info.annotation))  # setting a field of an absent spec enables it
    if isinstance(value, BaseModel):
        value = as_config(value)
    if not isinstance(value, fdl.Config):
        raise ConfigError(f"{_join(done, name)} is a {type(value).__name__} value, not a spec with fields")
    setattr(node, name, value)
    return value


def _takes_bool(annotation: Any) -> bool:
    """Whether a field of this annotation accepts True/False as such (bool, Any, or a union/Literal with them)."""
    if annotation in (bool, Any, object):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return any(isinstance(v, bool) for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        return any(_takes_bool(a) for a in typing.get_args(annotation))
    return False


def _takes_number(annotation: Any) -> bool:
    """Whether a field of this annotation accepts an int or a float (where pydantic reads True/False as 1/0)."""
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, typing.Annotated):
        return any(_takes_number(a) for a in typing.get_args(annotation))
    return False


def _refuse_bool(node: fdl.Config, name: str, override: Override) -> None:
    """A True/False for a spec field that is not a boolean is refused, saying what the field takes instead."""
    cls = node.__fn_or_cls__
    fields = cls.model_fields if inspect.isclass(cls) and issubclass(cls, BaseModel) else {}
    if not isinstance(override.value, bool) or name not in fields or _takes_bool(fields[name].annotation):
        return
    annotation = fields[name].annotation
    if (spec := _spec_class(annotation)) is not None:
        off = ", or None to turn it off" if type(None) in typing.get_args(annotation) else ""
        example = next(iter(spec.model_fields), "FIELD")
        raise ConfigError(f"{override}: {override.path} is a {spec.__name__}, not an on/off switch: set its fields"
                          f" (e.g. --set {override.path}.{example}=...){off}. Fields: {', '.join(spec.model_fields)}")
    if _takes_number(annotation):
        raise ConfigError(f"{override}: {override.path} is not a boolean field, so {override.value} would be read as"
                          f" {int(override.value)}; give a value of its type")
    raise ConfigError(f"{override}: {override.path} is not a boolean field; give a value of its type")


def _dict_field(node: fdl.Config, name: str) -> dict[Any, Any] | None:
    """A copy of the dict held by spec field `node.name` (its default when unset), or None when the
    field is not a dict field."""
    cls = node.__fn_or_cls__
    field_info = cls.model_fields.get(name) if inspect.isclass(cls) and issubclass(cls, BaseModel) else None
    if field_info is None or typing.get_origin(field_info.annotation) is not dict:
        return None
    value = node.__arguments__.get(name, field_info.get_default(call_default_factory=True, validated_data={}))
    return dict(value) if isinstance(value, dict) else None


def apply_override(cfg: fdl.Config, override: Override) -> None:
    """Set one dotted path in the graph; unknown fields are reported with the valid ones.

    A path that goes on past a dict field sets one key: `reward.routes.open_ended=open_ended_judge`
    changes that route and keeps the others; the value None removes the key."""
    share_instances(cfg)
    parts = override.path.split(".")
    node, done = cfg, ""
    for i, name in enumerate(parts):
        fields = _fields_of(node)
        if name not in fields:
            owner = node.__fn_or_cls__.__name__
            raise ConfigError(
                f"{override}: {owner} at {done or '<experiment>'} has no field {name!r}.{suggest(name, fields)}"
                f" Fields: {', '.join(fields)}"
            )
        table = _dict_field(node, name) if i < len(parts) - 1 else None
        if table is not None:
            key = ".".join(parts[i + 1 :])
            if override.value is None:
                table.pop(key, None)
            else:
                table[key] = override.value
            setattr(node, name, table)
            return
        if i == len(parts) - 1:
            _refuse_bool(node, name, override)
            setattr(node, name, override.value)
        else:
            node = _child(node, name, done)
            done = _join(done, name)


def apply_overrides(cfg: fdl.Config, items: Iterable[str]) -> list[Override]:
    """Parse and apply `--set` items in order; returns them for provenance."""
    applied = []
    for item in items:
        override = parse_override(item)
        apply_override(cfg, override)
        applied.append(override)
    return applied


# -- flattening for `evr1 show` --------------------------------------------------------------


def _paths_by_node(cfg: fdl.Buildable) -> dict[int, list[str]]:
    """Every path at which each sub-config appears (a shared spec has several)."""
    found: dict[int, list[str]] = {}

    def visit(node: Any, path: str) -> None:
        if isinstance(node, fdl.Buildable):
            found.setdefault(id(node), []).append(path)
            for k, v in node.__arguments__.items():
                visit(v, _join(path, k))

    visit(cfg, "")
    return found


def provenance(cfg: fdl.Config, overrides: Iterable[Override]) -> dict[str, str]:
    """Flat path -> the override that set it (paths reached through a shared spec included)."""
    by_node = _paths_by_node(cfg)
    marks: dict[str, str] = {}
    for override in overrides:
        parent, _, leaf = override.path.rpartition(".")
        node: Any = cfg
        parts = parent.split(".") if parent else []
        for j, part in enumerate(parts):
            child = getattr(node, part)
            if isinstance(child, dict):  # a key of a dict field: the mark goes on the field
                parent, leaf = ".".join(parts[:j]), part
                break
            node = child
        for alias in by_node.get(id(node), [parent]):
            path = _join(alias, leaf)
            marks[path] = str(override) + ("" if path == _join(parent, leaf) else " (shared)")
    return marks


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, leaf value) pairs of a built experiment, in field order."""
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from flatten(getattr(value, name), _join(prefix, name))
    else:
        yield prefix, value
