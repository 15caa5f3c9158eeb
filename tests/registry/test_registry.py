"""The Registry class: registration, lookup, errors, descriptions, checks."""

from __future__ import annotations

import sys

import pytest

from evr1.errors import Evr1Error
from evr1.registry import (
    REGISTRIES,
    DuplicateNameError,
    RegistrationError,
    Registry,
    UnknownNameError,
    is_instance_of,
    requires_params,
)


def acme_reward(response, answer):
    """Scores a response by shouting at it."""
    return 1.0


def other_reward(response, answer):
    return 0.0


@pytest.fixture
def reg() -> Registry:
    return Registry("things")


def test_decorator_and_direct_registration(reg: Registry) -> None:
    @reg.register("acme/first", aliases=["acme/one"])
    def first():
        return 1

    reg.register("acme/second", other_reward)
    assert reg.get("acme/first") is first
    assert reg.get("acme/one") is first
    assert reg.get("acme/second") is other_reward
    assert reg.names() == ["acme/first", "acme/second"]
    assert "acme/one" in reg and "acme/nope" not in reg and 3 not in reg
    assert reg.canonical("acme/one") == "acme/first"


def test_duplicates_raise_unless_override(reg: Registry) -> None:
    reg.register("acme/x", acme_reward)
    with pytest.raises(DuplicateNameError, match="'acme/x' is already registered"):
        reg.register("acme/x", other_reward)
    reg.register("acme/x", other_reward, override=True)
    assert reg.get("acme/x") is other_reward


def test_alias_collision_is_a_duplicate(reg: Registry) -> None:
    reg.register("acme/x", acme_reward, aliases=["acme/y"])
    with pytest.raises(DuplicateNameError, match="'acme/y'"):
        reg.register("acme/y", other_reward)


@pytest.mark.parametrize(
    ("asked", "suggestion"),
    [("acme/shout", "'acme/shouts'"), ("acme/whisperz", "'acme/whisper'"), ("zzz", None)],
)
def test_unknown_name_lists_known_and_suggests(reg: Registry, asked: str, suggestion: str | None) -> None:
    reg.register("acme/shouts", acme_reward)
    reg.register("acme/whisper", other_reward)
    with pytest.raises(UnknownNameError) as info:
        reg.get(asked)
    message = str(info.value)
    assert isinstance(info.value, KeyError) and isinstance(info.value, Evr1Error)
    assert message.startswith(f"unknown things name {asked!r}.")
    assert "Known: acme/shouts, acme/whisper" in message
    if suggestion:
        assert f"Did you mean {suggestion}?" in message
    else:
        assert "Did you mean" not in message


def test_describe_names_module_file_and_docstring(reg: Registry) -> None:
    reg.register("acme/shout", acme_reward, aliases=["acme/loud"])
    d = reg.describe("acme/loud")
    assert (d.name, d.aliases, d.module) == ("acme/shout", ("acme/loud",), __name__)
    assert d.file == __file__
    assert d.summary == "Scores a response by shouting at it."
    assert d.origin == "runtime"
    assert "acme/shout" in str(d) and __name__ in str(d)
    reg.register("acme/bare", other_reward)
    assert reg.describe("acme/bare").summary == "(no description)"


def test_plain_names_are_reserved_for_evr1(reg: Registry) -> None:
    with pytest.raises(RegistrationError, match="must be namespaced, e.g. 'yourpkg/shout'"):
        reg.register("shout", acme_reward)


def test_signature_check(reg: Registry) -> None:
    checked = Registry("checked", check=requires_params("response", "answer"))
    checked.register("acme/ok", acme_reward)

    def wrong(text):
        return 0.0

    with pytest.raises(RegistrationError, match=r"must accept parameter\(s\) response, answer"):
        checked.register("acme/wrong", wrong)
    with pytest.raises(RegistrationError, match="must be callable"):
        checked.register("acme/number", 3)


def test_instance_check() -> None:
    ints = Registry("ints", check=is_instance_of(int))
    with pytest.raises(RegistrationError, match="must be a int, got str"):
        ints.register("acme/s", "text")


def test_unregister_removes_aliases(reg: Registry) -> None:
    reg.register("acme/x", acme_reward, aliases=["acme/y"])
    reg.unregister("acme/x")
    assert "acme/x" not in reg and "acme/y" not in reg


def test_named_registries_exist() -> None:
    expected = {
        "rewards", "advantages", "policy_losses", "mixers", "samplers", "engines", "models", "tools", "benchmarks", "experiments",
        "rollout_corrections",
    }  # fmt: skip
    assert set(REGISTRIES) == expected
    assert all(REGISTRIES[name].group == f"evr1.{name}" for name in expected)


def test_builtin_modules_are_imported_lazily_and_marked_builtin(tmp_path, monkeypatch) -> None:
    (tmp_path / "probe_registry.py").write_text(
        "from evr1.registry import Registry\n"
        "REG = Registry('probe', builtin_modules=['probe_builtins', 'evr1.not_built.yet'])\n"
    )
    (tmp_path / "probe_builtins.py").write_text(
        "from probe_registry import REG\n@REG.register('probe/x')\ndef x():\n    'The x.'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("probe_registry", "probe_builtins"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import probe_registry

    assert "probe_builtins" not in sys.modules  # nothing imported at registry creation
    assert probe_registry.REG.names() == ["probe/x"]  # first lookup imports the built-ins
    assert "probe_builtins" in sys.modules
    assert probe_registry.REG.describe("probe/x").origin == "builtin"


def test_a_builtin_imported_before_its_registry_loads_is_still_builtin() -> None:
    """Origin does not depend on import order (a test importing every evr1 module made the tiny models 'runtime')."""
    import subprocess
    import sys

    code = ("import evr1.models.builtin\nfrom evr1.registry import MODELS\n"
            "print(MODELS.describe('tiny-qwen2-vl').origin)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "builtin"


def test_an_instance_registered_with_its_module_is_described_there() -> None:
    from fractions import Fraction

    reg: Registry = Registry("probe_instances")
    reg.register("acme/half", Fraction(1, 2), module=__name__)
    reg.register("acme/third", Fraction(1, 3))
    assert (reg.describe("acme/half").module, reg.describe("acme/half").file) == (__name__, __file__)
    assert reg.describe("acme/third").module == "fractions"
    reg.register("acme/half", Fraction(1, 2), override=True)  # again without a module: the class's module
    assert reg.describe("acme/half").module == "fractions"
