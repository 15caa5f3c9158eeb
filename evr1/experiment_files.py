"""Finding experiments by name: a `.py` path, `experiments/NAME.py` of the project, one that ships with evr1
(`evr1/experiments/NAME.py`), a registered entry point, or a dotted module; `NAME:VARIANT` picks another function
of the same file.

An experiment file is imported with its folder on `sys.path` (for that import only), so it can
import modules that sit next to it (`import myrewards` in `experiments/split.py`); import them at
the top of the file. Each file is imported once per process, whatever name it was first imported
under (an experiment loaded again, a sibling module also listed as a file): what it registers at
import is registered once. While a file is imported, the names of the modules next to it refer to
those files, not to a same-named module of another folder imported before (which is put back after).

`load_config` records every experiment used while the config is built (`ExperimentSource.deps`: an
experiment that builds on another with `load_config("quickstart")` in its function), so that Ray
workers and a resume import them all (`import_source`)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import fiddle as fdl

from evr1.config_typos import misspelt_field
from evr1.errors import ConfigError, known_list, suggest

DEFAULT_VARIANT = "experiment"


@dataclass(frozen=True)
class ExperimentSource:
    """Where an experiment came from: enough to find it again and to copy its source."""

    name: str
    variant: str
    origin: str  # "file", "entry point", "module"
    location: str  # file path or module name
    file: Path | None
    folder: Path | None = None  # where a file's sibling modules are imported from (default: the file's folder)
    deps: tuple[ExperimentSource, ...] = ()  # other experiments used to build the config, imported first

    @property
    def key(self) -> str:
        """What identifies the imported thing: the file (`location` for a run's copy), else the module or entry point."""
        return str(Path(self.location).resolve()) if self.origin == "file" else f"{self.origin} {self.location}"

    @property
    def label(self) -> str:
        return self.name if self.variant == DEFAULT_VARIANT else f"{self.name}:{self.variant}"


def project_root(start: Path | None = None) -> Path | None:
    """The nearest directory (from `start` or the cwd upwards) that has an `experiments/` folder."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "experiments").is_dir():
            return folder
    return None


BUILTIN = Path(__file__).resolve().parent / "experiments"  # the experiment files that ship with evr1


def experiment_file(name: str, root: Path | None) -> Path | None:
    """The file of experiment NAME: `experiments/NAME.py` of the project at `root`, else the one evr1 ships."""
    for folder in ([root / "experiments"] if root is not None else []) + [BUILTIN]:
        if not name.startswith("_") and (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    return None


PACKAGE = "evr1_experiments"  # experiment files are imported as its modules (`evr1_experiments.<name>`)
_LOADED: dict[Path, ModuleType] = {}  # resolved file -> its module: experiment files and their sibling modules
_DEPS: dict[Path, list[ExperimentSource]] = {}  # experiment file -> experiments its top level used
_FAILED: dict[Path, tuple[bytes, ConfigError]] = {}  # file -> the bytes that failed to import, and why
_SIBLINGS: dict[Path, dict[str, ModuleType]] = {}  # folder -> the modules imported from it by name (`helpers`, `lib.sub`)
_IMPORTED: dict[str, ExperimentSource] = {}  # name and key -> a file `import_source` imported (e.g. a run's copy)
_RECORDINGS: list[list[ExperimentSource]] = []  # open records of experiments used, innermost last


def _file_of(module: ModuleType | None) -> Path | None:
    file = getattr(module, "__file__", None)
    return Path(file).resolve() if file else None


def _loaded(path: Path) -> ModuleType | None:
    """The module already imported from `path` in this process, under whatever name."""
    if path not in _LOADED and _file_of(sys.modules.get(path.stem)) == path:
        _LOADED[path] = sys.modules[path.stem]  # imported as a sibling module
    return _LOADED.get(path)


def _package() -> None:
    """Register the parent package of experiment modules, which pickling a class they define needs."""
    if PACKAGE not in sys.modules:
        package = ModuleType(PACKAGE, "Experiment files imported by evr1.")
        package.__path__ = []
        sys.modules[PACKAGE] = package


def _subtree(name: str) -> dict[str, ModuleType]:
    return {k: m for k, m in sys.modules.items() if k == name or k.startswith(f"{name}.")}


@contextmanager
def _own_siblings(folder: Path) -> Iterator[None]:
    """While importing from `folder`: each `NAME.py` (or package) there is what `import NAME` gets, the module
    already imported from that file if any. A same-named module that another folder's import brought in is set
    aside (with its submodules), and put back after; any other module already imported (the standard library's
    `random`, an installed package) stays what `import NAME` gets, as in plain Python."""
    names = {p.stem: p.resolve() for p in folder.glob("*.py")}
    names |= {p.parent.name: p.resolve() for p in folder.glob("*/__init__.py")}
    theirs = {key.partition(".")[0] for other, modules in _SIBLINGS.items() if other != folder for key in modules}
    mine = _SIBLINGS.setdefault(folder, {})
    put_back: dict[str, dict[str, ModuleType]] = {}
    for name, file in names.items():
        current = sys.modules.get(name)
        if name in theirs and current is not None and _file_of(current) != file:
            put_back[name] = _subtree(name)
            for key in put_back[name]:
                del sys.modules[key]
    for key, module in mine.items():
        sys.modules.setdefault(key, module)
    for name, file in names.items():
        if name not in sys.modules and (module := _LOADED.get(file)) is not None:
            sys.modules[name] = module  # an experiment file imported before, also a sibling of this one
    try:
        yield
    finally:
        for key, module in list(sys.modules.items()):
            if key.partition(".")[0] in names and (file := _file_of(module)) is not None and file.is_relative_to(folder):
                mine[key] = module
        for name, file in names.items():
            if _file_of(sys.modules.get(name)) == file:
                _LOADED.setdefault(file, sys.modules[name])
        for name, modules in put_back.items():
            for key in _subtree(name):
                del sys.modules[key]
            sys.modules.update(modules)


@contextmanager
def _recording() -> Iterator[list[ExperimentSource]]:
    """Collect the experiments `_used` meanwhile (also reported to every enclosing recording)."""
    used: list[ExperimentSource] = []
    _RECORDINGS.append(used)
    try:
        yield used
    finally:
        _RECORDINGS.pop()  # recordings nest: this one is innermost


def _used(source: ExperimentSource) -> None:
    """Note that `source` (and what its file's top level used) serves the configs being built."""
    for used in _RECORDINGS:
        for item in [*_DEPS.get(Path(source.location).resolve(), []), source] if source.origin == "file" else [source]:
            if all(item.key != seen.key for seen in used):
                used.append(item)


def _load_file(path: Path, name: str | None = None, folder: Path | None = None, alias: Path | None = None) -> ModuleType:
    """The module of an experiment file, imported (once per process) as `evr1_experiments.<name>` (default: the
    file's stem) with `folder` (default: the file's own) first on `sys.path` meanwhile, for the modules it imports.
    `alias`: the file `path` is a copy of (a run's copy), which a later import of `alias` also gets; a copy equal
    to a file imported before (`alias`, or the one imported under that name) is that module. A file that failed to import fails again with the same error
    until it changes (importing it again would register its components twice)."""
    path, module_name = path.resolve(), f"{PACKAGE}.{name or path.stem}"
    _package()
    module = _loaded(path)
    for other in (alias, _file_of(sys.modules.get(module_name))) if module is None else ():
        if other is not None and (original := _loaded(other.resolve())) is not None and other.is_file() \
                and other.read_bytes() == path.read_bytes():
            module = _LOADED[path] = original  # a copy of a file imported before
            _DEPS.setdefault(path, _DEPS.get(other.resolve(), []))
            break
    if module is not None:
        sys.modules.setdefault(module_name, module)  # the name Ray workers import it under, for pickled objects
        return module
    code = path.read_bytes()
    if path in _FAILED and _FAILED[path][0] == code:
        raise _FAILED[path][1]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load experiment file {path}")
    module, previous = importlib.util.module_from_spec(spec), sys.modules.get(module_name)
    sys.modules[module_name] = module  # pickling and dataclasses need the module registered
    search = (folder or path.parent).resolve()
    added = str(search) not in sys.path
    if added:
        sys.path.insert(0, str(search))
    try:
        with _own_siblings(search), _recording() as used:
            spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        if previous is not None:  # another file of the same name
            sys.modules[module_name] = previous
        if isinstance(exc, ConfigError):
            _FAILED[path] = code, exc
            raise
        if (typo := misspelt_field(exc)) is not None:
            _FAILED[path] = code, typo
            raise typo from None
        hint = f" (modules next to it are imported from {search})" if isinstance(exc, ImportError) else ""
        error = ConfigError(f"experiment file {path} failed to import: {type(exc).__name__}: {exc}{hint}")
        _FAILED[path] = code, error
        raise error from exc
    finally:
        if added:
            sys.path.remove(str(search))
    _LOADED[path], _DEPS[path] = module, used
    if alias is not None:
        _LOADED.setdefault(alias.resolve(), module)
        _DEPS.setdefault(alias.resolve(), used)
    return module


def variants(module: ModuleType) -> dict[str, Callable[[], fdl.Config]]:
    """Public functions defined in the module that take no required arguments."""
    found = {}
    for name, fn in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        params = inspect.signature(fn).parameters.values()
        if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            found[name] = fn
    return found


def _experiment_like(fn: Callable[..., Any]) -> bool:
    """Whether a variant of a file is listed as an experiment: not a component the file registers (a plugin, e.g.
    `@EXPERIMENTS.register("acme/exp")`, listed under its registered name), nor annotated as returning something
    else than a Config of an `Experiment` (a helper such as `def video() -> fdl.Config[VideoSpec]`)."""
    from evr1.registry import REGISTRIES

    if any(registry.holds(fn) for registry in REGISTRIES.values()):
        return False
    returns = inspect.signature(fn).return_annotation
    if returns is inspect.Signature.empty or returns is fdl.Config:
        return True
    text = returns if isinstance(returns, str) else repr(returns)
    return "Experiment" in text or text.rpartition(".")[2] == "Config"


def known_experiments(root: Path | None = None) -> list[str]:
    """Names of experiment files under the project's `experiments/`, those evr1 ships and registered experiments."""
    from evr1.registry import EXPERIMENTS

    root = root if root is not None else project_root()
    folders = ([root / "experiments"] if root else []) + [BUILTIN]
    files = {p.stem for folder in folders for p in folder.glob("*.py") if not p.stem.startswith("_")}
    return sorted({*files, *EXPERIMENTS.names()})


def _pick(module_or_fn: Any, name: str, variant: str, location: str) -> Callable[[], fdl.Config]:
    if inspect.isfunction(module_or_fn):
        if variant != DEFAULT_VARIANT:
            raise ConfigError(f"experiment {name!r} ({location}) is a single function and has no variant {variant!r}")
        return module_or_fn
    choices = variants(module_or_fn)
    if not choices:
        raise ConfigError(f"{location} defines no experiment: no public function without required arguments"
                          " (such as `def experiment():`); a module next to experiments is imported by them, not run")
    if variant == DEFAULT_VARIANT and variant not in choices:
        labels = ", ".join(f"{name}:{v}" for v in sorted(choices))
        raise ConfigError(f"experiment {name!r} ({location}) has no default variant; choose one of {labels}")
    if variant not in choices:
        raise ConfigError(
            f"experiment {name!r} ({location}) has no variant {variant!r}.{suggest(variant, choices)}"
            f" Variants: {known_list(choices)}"
        )
    return choices[variant]


def locate(name: str, root: Path | None = None) -> tuple[Any, ExperimentSource]:
    """The module (or single function) of experiment NAME and where it was found (default variant)."""
    target, source = _find(name, root)
    _used(source)
    return target, source


def _find(name: str, root: Path | None) -> tuple[Any, ExperimentSource]:
    from evr1.registry import EXPERIMENTS

    root = root if root is not None else project_root()
    as_path = Path(name)
    if as_path.suffix == ".py":
        if not as_path.is_file() and (imported := _IMPORTED.get(str(as_path.resolve()))) is not None:
            return _imported(imported)
        if not as_path.is_file():
            raise ConfigError(f"experiment file {name} does not exist")
        path = as_path.resolve()
        return _load_file(path), ExperimentSource(path.stem, DEFAULT_VARIANT, "file", str(path), path)
    if (path := experiment_file(name, root)) is not None:
        return _load_file(path), ExperimentSource(name, DEFAULT_VARIANT, "file", str(path), path)
    if name in _IMPORTED:  # e.g. a run's copy, its original gone
        return _imported(_IMPORTED[name])
    if name in EXPERIMENTS:
        target = EXPERIMENTS.get(name)
        module = target if inspect.ismodule(target) else sys.modules.get(getattr(target, "__module__", ""))
        file = Path(inspect.getfile(module)) if module is not None and getattr(module, "__file__", None) else None
        return target, ExperimentSource(name, DEFAULT_VARIANT, "entry point", f"entry point {name}", file)
    if "." in name and importlib.util.find_spec(name.split(".")[0]) is not None:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigError(f"experiment module {name} failed to import: {exc}") from exc
        file = Path(module.__file__) if module.__file__ else None
        return module, ExperimentSource(name, DEFAULT_VARIANT, "module", name, file)
    known = known_experiments(root)
    where = (f" under {root / 'experiments'} or among those evr1 ships" if root else
             " among those evr1 ships (no experiments/ folder found from the current directory)")
    raise ConfigError(f"unknown experiment {name!r}{where}.{suggest(name, known)} Known: {known_list(known)}")


def _imported(source: ExperimentSource) -> tuple[ModuleType, ExperimentSource]:
    """An experiment file `import_source` imported, and its source (default variant, deps recorded apart)."""
    assert source.file is not None  # a file's source
    return _load_file(source.file, source.name, source.folder), replace(source, variant=DEFAULT_VARIANT, deps=())


def resolve(spec: str, root: Path | None = None) -> tuple[Callable[[], fdl.Config], ExperimentSource]:
    """The experiment function for `NAME[:VARIANT]` and where it was found."""
    name, _, variant = spec.partition(":")
    variant = variant or DEFAULT_VARIANT
    target, source = locate(name, root)
    return _pick(target, source.name, variant, source.location), replace(source, variant=variant)


def summary(name: str, root: Path | None = None) -> tuple[list[tuple[str, str]], str]:
    """Every variant of experiment NAME as (`NAME[:VARIANT]`, first docstring line), the default first,
    and where it lives; no rows for a file that defines no experiment (a module the experiments import, one that
    registers plugins: see `_experiment_like`)."""
    target, source = locate(name, root)
    choices = {DEFAULT_VARIANT: target} if inspect.isfunction(target) else variants(target)
    choices = {v: fn for v, fn in choices.items() if source.origin != "file" or _experiment_like(fn)}
    order = sorted(choices, key=lambda v: (v != DEFAULT_VARIANT, v))
    rows = []
    for variant in order:
        doc = (choices[variant].__doc__ or "").strip().splitlines()
        rows.append((replace(source, variant=variant).label, doc[0] if doc else ""))
    return rows, source.location


def import_source(source: ExperimentSource) -> None:
    """Import the experiments used to build a config (`source.deps`, in order), then the experiment's own
    module; a file already imported in this process is not imported again. What they register when
    imported (e.g. a reward with `@REWARDS.register` at the top of an experiment file) then exists here
    too. Ray workers call this before building anything from the registries; a file's sibling modules are
    imported from `source.folder` (a resumed run's copy: the original's folder)."""
    from evr1.registry import EXPERIMENTS

    for dep in source.deps:
        import_source(dep)
    if source.origin == "file":
        if source.file is None or not source.file.is_file():
            raise ConfigError(f"experiment file {source.location} of {source.label} does not exist")
        alias = Path(source.location) if Path(source.location) != source.file else None
        _load_file(source.file, source.name, source.folder, alias)
        _IMPORTED[source.name] = _IMPORTED[source.key] = replace(source, variant=DEFAULT_VARIANT, deps=())
    elif source.origin == "entry point":
        EXPERIMENTS.get(source.name)
    else:
        try:
            importlib.import_module(source.location)
        except ImportError as exc:
            raise ConfigError(f"experiment module {source.location} failed to import: {exc}") from exc


def _configures_an_experiment(cfg: fdl.Config) -> bool:
    from evr1.experiment import Experiment

    return inspect.isclass(cfg.__fn_or_cls__) and issubclass(cfg.__fn_or_cls__, Experiment)


def load_config(spec: str, root: Path | None = None) -> tuple[fdl.Config, ExperimentSource]:
    """Call the experiment function and name the result after its source unless it names itself. The source's
    `deps` are the other experiments used meanwhile (loaded by the function, or by the file when imported). A field
    name Fiddle refuses (`cfg.trainer.val_evry = 10`) is a one-line `ConfigError` naming the file and line."""
    with _recording() as used:
        fn, source = resolve(spec, root)
        try:
            cfg = fn()
        except (AttributeError, TypeError) as exc:
            if (typo := misspelt_field(exc)) is None:
                raise
            raise typo from None
    if not isinstance(cfg, fdl.Config):
        raise ConfigError(f"experiment {source.label} ({source.location}) returned {type(cfg).__name__}, not fdl.Config[Experiment]")
    if not _configures_an_experiment(cfg):
        what = getattr(cfg.__fn_or_cls__, "__name__", repr(cfg.__fn_or_cls__))
        raise ConfigError(f"experiment {source.label} ({source.location}) returned fdl.Config[{what}], not"
                          " fdl.Config[Experiment]")
    if "name" not in cfg.__arguments__:
        cfg.name = source.label
    return cfg, replace(source, deps=tuple(s for s in used if s.key != source.key))
