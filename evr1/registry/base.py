"""The one `Registry` class: named components, decorators, entry-point plugins."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Generic, TypeVar

from evr1.errors import Evr1Error, known_list, suggest

T = TypeVar("T")
Check = Callable[[str, Any], None]


class UnknownNameError(KeyError, Evr1Error):
    """A name that is not in a registry; the message lists known names and a suggestion."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DuplicateNameError(ValueError, Evr1Error):
    """A name registered twice without `override=True`."""


class RegistrationError(TypeError, Evr1Error):
    """An object that does not satisfy the registry's check, or an un-namespaced plugin."""


@dataclass(frozen=True)
class Description:
    """Where a registered component lives and what it does."""

    registry: str
    name: str
    aliases: tuple[str, ...]
    module: str
    file: str | None
    summary: str
    origin: str  # "builtin", "entry point (dist)", or "runtime"

    def __str__(self) -> str:
        alias = f" (aliases: {', '.join(self.aliases)})" if self.aliases else ""
        where = f"{self.module} [{self.file}]" if self.file else self.module
        return f"{self.registry}:{self.name}{alias}\n  {where}\n  origin: {self.origin}\n  {self.summary}"


def requires_params(*params: str) -> Check:
    """A registration check: the object must be callable and accept these parameters."""

    def check(name: str, obj: Any) -> None:
        if not callable(obj):
            raise RegistrationError(f"must be callable, got {type(obj).__name__}")
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return
        has_var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        missing = [p for p in params if p not in sig.parameters and not has_var_kw]
        if missing:
            raise RegistrationError(f"must accept parameter(s) {', '.join(missing)}; its signature is {sig}")

    return check


def is_instance_of(*types: type) -> Check:
    """A registration check: the object must be an instance of one of these types."""

    def check(name: str, obj: Any) -> None:
        if not isinstance(obj, types):
            expected = " or ".join(t.__name__ for t in types)
            raise RegistrationError(f"must be a {expected}, got {type(obj).__name__}")

    return check


@dataclass(frozen=True)
class Call:
    """One call evr1 makes: `positional` arguments (their names only document them), `keywords` passed by name on
    every call, `sometimes` passed by name on some calls only (so they need a default)."""

    positional: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    sometimes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Convention(Call):
    """How evr1 uses a registry's entries, checked when one is registered (see `called_as`).

    The entry itself (or its `through` attribute, e.g. `from_spec` of an engine class) is called as the
    inherited `Call` fields say; `methods`: the methods evr1 calls on the entry or on the instance it builds, and
    how; `attributes`: what evr1 reads from it; `text`: the whole convention as documented.
    """

    text: str
    through: str | None = None
    methods: Mapping[str, Call] = field(default_factory=dict)
    attributes: tuple[str, ...] = ()


def call_problems(sig: inspect.Signature, convention: Call) -> list[str]:
    """What stops `sig` from accepting every call described by `convention` (empty when nothing does)."""
    params = list(sig.parameters.values())
    var_pos = any(p.kind is p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    by_position = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    problems = []
    n = len(convention.positional)
    if len(by_position) < n and not var_pos:
        problems.append(f"takes {len(by_position)} positional argument(s), evr1 passes {n} ({', '.join(convention.positional)})")
    filled = {p.name for p in by_position[:n]}
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    passed = (*convention.keywords, *convention.sometimes)
    twice = [k for k in passed if k in filled]
    if twice:
        problems.append(f"gets {', '.join(twice)} both by position and by name")
    unexpected = [k for k in passed if k not in named and not var_kw]
    if unexpected:
        problems.append(f"unexpected keyword argument(s) {', '.join(unexpected)}")
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    by_name_only = [p.name for p in required if p.kind is p.POSITIONAL_ONLY and p.name not in filled and p.name in passed]
    if by_name_only:
        problems.append(f"positional-only parameter(s) {', '.join(by_name_only)} that evr1 passes by name")
    missing = [p.name for p in required if p.name not in filled and p.name not in passed]
    if missing:
        problems.append(f"required parameter(s) {', '.join(missing)} that evr1 never passes")
    without_default = [p.name for p in required if p.name in convention.sometimes and p.name not in filled]
    if without_default:
        problems.append(f"parameter(s) {', '.join(without_default)} need a default (evr1 passes them only sometimes)")
    if not problems:  # what the rules above miss, Python's own binding reports
        for keywords in (convention.keywords, passed):
            try:
                sig.bind(*convention.positional, **dict.fromkeys(keywords))
            except TypeError as exc:
                return [str(exc)]
    return problems


def called_as(convention: Convention) -> Check:
    """A registration check: the entry (or its `through` attribute) accepts every call evr1 makes, its `methods`
    accept theirs, and it has the `attributes` evr1 reads."""

    def check(name: str, obj: Any) -> None:
        wanted = ([convention.through] if convention.through else []) + list(convention.methods)
        absent = [m for m in wanted if not callable(getattr(obj, m, None))]
        if absent:
            raise RegistrationError(f"has no method(s) {', '.join(absent)}. Expected: {convention.text}")
        unset = [a for a in convention.attributes if not _has_attribute(obj, a)]
        if unset:
            raise RegistrationError(
                f"has no attribute(s) {', '.join(unset)}, which evr1 reads (set it on the class, or declare it in the"
                f" class body, e.g. `{unset[0]}: int`). Expected: {convention.text}"
            )
        target = getattr(obj, convention.through) if convention.through else obj
        calls = [(target, convention.through or "it", convention)]
        calls += [(getattr(obj, m), m, _as_method(obj, m, call)) for m, call in convention.methods.items()]
        for function, what, call in calls:
            _check_call(function, what, call, convention.text)

    return check


def _as_method(obj: Any, name: str, call: Call) -> Call:
    """`call` of method `name` as seen through `obj`: a plain function of a class also takes the instance first."""
    if inspect.isclass(obj) and inspect.isfunction(inspect.getattr_static(obj, name)):
        return Call(("self", *call.positional), call.keywords, call.sometimes)
    return call


def _check_call(function: Any, what: str, call: Call, expected: str) -> None:
    if not callable(function):
        raise RegistrationError(f"{what} must be callable, got {type(function).__name__}. Expected: {expected}")
    try:
        sig = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    problems = call_problems(sig, call)
    if problems:
        label = getattr(function, "__qualname__", None) or type(function).__name__
        hint = " (add **kwargs to take keywords you do not use)" if any(p.startswith("unexpected") for p in problems) else ""
        raise RegistrationError(
            f"{label}{sig} cannot be called the way evr1 calls it: {'; '.join(problems)}. Expected: {expected}{hint}"
        )


def _has_attribute(obj: Any, name: str) -> bool:
    """Whether `obj` has attribute `name`; for a class, also one declared for its instances (`name: int` in
    the class body, as `RolloutEngine` declares `version`)."""
    if hasattr(obj, name):
        return True
    return inspect.isclass(obj) and any(name in getattr(k, "__annotations__", {}) for k in obj.__mro__)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _summary(obj: Any) -> str:
    """An instance's own `summary` text (e.g. a benchmark's title and metric), else its docstring's first line."""
    own = getattr(obj, "summary", None)
    if isinstance(own, str) and own and not inspect.isclass(obj):
        return own
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else "(no description)"


def _dist(ep: metadata.EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else "?"


def _registering_module() -> str | None:
    """The module whose code called `register` (the first frame outside this module)."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__") if frame is not None else None


def _module_of(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    return module or "?"


class Registry(Generic[T]):
    """Components by name: `@REG.register("name")`, `REG.get("name")`, entry points `evr1.<name>`.

    Built-in components are imported lazily from `builtin_modules` on first lookup, so that
    creating registries (and importing `evr1`) stays cheap. Names without a namespace are
    reserved for evr1's own modules; plugins use `owner/name`. An entry point whose name is
    already taken (a built-in, a runtime registration, another plugin) makes that name an error
    on lookup, naming both sides; the registry's other names keep working.
    """

    def __init__(self, name: str, *, builtin_modules: Sequence[str] = (), check: Check | None = None) -> None:
        self.name = name
        self.group = f"evr1.{name}"
        self._builtin_modules = tuple(builtin_modules)
        self._check = check
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._modules: dict[str, str] = {}  # name -> the module that defines an instance whose class lives elsewhere
        self._aliases: dict[str, str] = {}
        self._pending: dict[str, metadata.EntryPoint] = {}
        self._clashes: dict[str, str] = {}  # name -> why it is ambiguous (an entry point collides)
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    # -- registration -------------------------------------------------------------------
    def register(
        self, name: str, obj: T | None = None, *, aliases: Sequence[str] = (), override: bool = False,
        module: str | None = None,
    ) -> Any:
        """Register `obj` under `name`; without `obj`, return a decorator that does.

        `module`: the module that defines `obj`, where it is an instance of a class from elsewhere (a benchmark
        module's `Benchmark`), so that `describe` names it rather than the class's module."""
        if obj is None:
            def decorator(target: T) -> T:
                self._add(name, target, tuple(aliases), override, module)
                return target

            return decorator
        self._add(name, obj, tuple(aliases), override, module)
        return obj

    def _add(self, name: str, obj: T, aliases: tuple[str, ...], override: bool, defined_in: str | None = None) -> None:
        if not name or name != name.strip():
            raise RegistrationError(f"invalid {self.name} name {name!r}")
        module = defined_in or _module_of(obj)
        if "/" not in name and not (module == "evr1" or module.startswith("evr1.")):
            raise RegistrationError(
                f"{self.name} name {name!r} from module {module!r} must be namespaced, e.g. 'yourpkg/{name}'"
                " (plain names are reserved for evr1's built-ins)"
            )
        if self._check is not None:
            try:
                self._check(name, obj)
            except RegistrationError as exc:
                raise RegistrationError(f"cannot register {self.name} {name!r}: {exc}") from None
        with self._lock:
            for key in (name, *aliases):
                taken = key in self._entries or key in self._aliases
                if taken and not override:
                    owner = self._aliases.get(key, key)
                    raise DuplicateNameError(
                        f"{self.name} name {key!r} is already registered (by {self.describe_origin(owner)});"
                        " pass override=True to replace it"
                    )
            self._entries[name] = obj
            if defined_in:
                self._modules[name] = defined_in
            else:
                self._modules.pop(name, None)
            builtin = self._loading or _registering_module() in self._builtin_modules  # whatever imported it first
            self._origins.setdefault(name, "builtin" if builtin else "runtime")
            self._pending.pop(name, None)
            for alias in aliases:
                self._aliases[alias] = name

    def describe_origin(self, name: str) -> str:
        return self._origins.get(name, "?")

    def holds(self, obj: object) -> bool:
        """Whether `obj` itself is an entry registered so far (no entry point is loaded to find out)."""
        with self._lock:
            return any(entry is obj for entry in self._entries.values())

    # -- discovery ----------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                for module in self._builtin_modules:
                    if _module_exists(module):  # parts not built yet are simply absent
                        importlib.import_module(module)
            finally:
                self._loading = False
            for ep in metadata.entry_points(group=self.group):
                taken = self._taken_by(ep)
                if taken is None:
                    self._pending[ep.name] = ep
                else:
                    self._clashes[ep.name] = (
                        f"{self.name} plugin {ep.name!r} ({ep.value}, from {_dist(ep)}) collides with {taken}:"
                        f" plugin names must be namespaced and unique, e.g. 'yourpkg/{ep.name.rpartition('/')[2]}';"
                        f" rename the entry point or uninstall {_dist(ep)}"
                    )
            self._loaded = True

    def _taken_by(self, ep: metadata.EntryPoint) -> str | None:
        """What already holds the name of entry point `ep`, described; None when the name is free."""
        if ep.name in self._entries or ep.name in self._aliases:
            owner = self._aliases.get(ep.name, ep.name)
            alias = f" (an alias of {owner!r})" if owner != ep.name else ""
            return f"the {self.describe_origin(owner)} {self.name} name {ep.name!r}{alias} from {_module_of(self._entries[owner])}"
        other = self._pending.get(ep.name)
        if other is not None and (other.value, _dist(other)) != (ep.value, _dist(ep)):
            return f"the plugin {ep.name!r} ({other.value}, from {_dist(other)})"
        return None

    def _load_entry_point(self, name: str) -> None:
        ep = self._pending[name]
        dist = _dist(ep)
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin must say which one
            raise RegistrationError(f"{self.name} plugin {name!r} ({ep.value}, from {dist}) failed to load: {exc}") from exc
        with self._lock:
            if name not in self._entries:  # the module may have registered itself on import
                if inspect.ismodule(obj):
                    raise RegistrationError(
                        f"{self.name} plugin {name!r} points at module {ep.value} which did not register {name!r}"
                    )
                self._add(name, obj, (), override=False)
            self._origins[name] = f"entry point ({dist})"
            self._pending.pop(name, None)

    # -- lookup -------------------------------------------------------------------------
    def canonical(self, name: str) -> str:
        """The registered name for `name` or one of its aliases; raises `UnknownNameError`."""
        self._ensure_loaded()
        key = self._aliases.get(name, name)
        if key in self._clashes:
            raise RegistrationError(self._clashes[key])
        if key in self._entries or key in self._pending:
            return key
        known = self.names()
        raise UnknownNameError(
            f"unknown {self.name} name {name!r}.{suggest(name, known + list(self._aliases))} Known: {known_list(known)}"
        )

    def get(self, name: str) -> T:
        key = self.canonical(name)
        if key in self._pending:
            self._load_entry_point(key)
        return self._entries[key]

    def __getitem__(self, name: str) -> T:
        """`REG["name"]`: the same as `REG.get("name")`, with the same errors."""
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self._ensure_loaded()
        key = self._aliases.get(name, name)
        return key in self._entries or key in self._pending

    def names(self) -> list[str]:
        """All registered names (entry points included, without loading them), sorted."""
        self._ensure_loaded()
        return sorted({*self._entries, *self._pending})

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def describe(self, name: str) -> Description:
        key = self.canonical(name)
        obj = self.get(key)
        defined_in = self._modules.get(key)
        target = obj if (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj)) else type(obj)
        if defined_in is not None:
            target = importlib.import_module(defined_in)
        try:
            file = inspect.getsourcefile(target)
        except TypeError:
            file = None
        return Description(
            registry=self.name,
            name=key,
            aliases=tuple(sorted(a for a, k in self._aliases.items() if k == key)),
            module=defined_in or _module_of(obj),
            file=file,
            summary=_summary(obj),
            origin=self._origins.get(key, "?"),
        )

    def unregister(self, name: str) -> None:
        """Remove a name (and its aliases); for tests and interactive use."""
        with self._lock:
            key = self._aliases.get(name, name)
            self._entries.pop(key, None)
            self._pending.pop(key, None)
            self._clashes.pop(key, None)
            self._origins.pop(key, None)
            for alias in [a for a, k in self._aliases.items() if k == key]:
                del self._aliases[alias]

    def __repr__(self) -> str:
        return f"Registry({self.name!r})"
