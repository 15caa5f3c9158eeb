"""The tests run in their own process and compare plain data only: an object of the answer's that overrides
`__eq__`, `__bool__` or `__lt__` (the always-equal reward hack) fails, while legitimate solutions keep passing."""

from __future__ import annotations

import pytest
from reward_helpers import make

from evr1.rewards import code_reward
from evr1.rewards.code_sandbox import run_python
from evr1.specs import CodeSandboxSpec, RewardSpec

SANDBOX = CodeSandboxSpec(timeout_s=5, memory_mb=256)
TESTS = ["assert f(1) == 2", "assert 3 == f(2)"]
ALWAYS_EQUAL = "def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n    return E()"
HACKS = [
    ("always-equal object", ALWAYS_EQUAL, TESTS),
    ("the reviewer's one-liner", "def f(x):\n    class E: __eq__ = lambda s, o: True\n    return E()", TESTS),
    ("int subclass", "def f(x):\n    class E(int):\n        __eq__ = lambda s, o: True\n    return E(0)", TESTS),
    ("inside a list", "def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n    return [E()]", ["assert f(1) == [2]", "assert [3] == f(2)"]),
    ("as a dict value", "def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n    return {'k': E()}", ["assert f(1) == {'k': 2}"]),
    ("never unequal", "def f(x):\n    class E:\n        __ne__ = lambda s, o: False\n    return E()", ["assert not f(1) != 2"]),
    ("always true", "def f(x):\n    class E:\n        __bool__ = lambda s: True\n    return E()", ["assert f(1)", "assert f(2) and True", "assert 1 if f(3) else 0"]),
    ("always false", "def f(x):\n    class E:\n        __bool__ = lambda s: False\n    return E()", ["assert not f(4)"]),
    ("always less", "def f(x):\n    class E:\n        __lt__ = lambda s, o: True\n    return E()", ["assert f(1) < 2"]),
    ("contains anything", "def f(x):\n    class E:\n        __eq__ = lambda s, o: True\n    return E()", ["assert f(1) in (2, 3)"]),
    ("in a generator", ALWAYS_EQUAL, ["assert all(f(x) == x + 1 for x in range(3))"]),
    ("shadowing a builtin", "def f(x):\n    return 0\nabs = lambda v: 0\nsorted = lambda v: [1, 2]", ["assert abs(f(2) - 3) < 1e-9", "assert sorted(f(1)) == [1, 2]"]),
    ("a generator", "def f(x):\n    return (i for i in [])", ["assert f(1) == 2"]),
    ("rebinding the check", "__evr1_checks__ = {'plain': lambda v: v, 'truth': lambda v: v}\n" + ALWAYS_EQUAL, TESTS),
]  # fmt: skip


@pytest.mark.parametrize(("code", "tests"), [h[1:] for h in HACKS], ids=[h[0] for h in HACKS])
def test_overridden_comparisons_pass_nothing(code: str, tests: list[str]) -> None:
    assert run_python(code, tests=tests, spec=SANDBOX).passed == 0


GOOD = """import re
from collections import Counter
def f(x): return x + 1
def counts(s): return dict(Counter(s))
def nested(): return {(1, 2): [1.5, {"a"}, None], "b": b"x"}
def nothing(): return None
def words(s): return re.fullmatch(r"[a-z]+", s)
def gen(n): return (i for i in range(n))
def boom(): raise ValueError("no")
class Acc:
    def __init__(self): self.total = 0
    def add(self, x):
        self.total += x
        return self.total
"""
GOOD_TESTS = [  # (test, passes)
    ("assert f(1) == 2", True),
    ("assert 3 == f(2)", True),
    ("assert f(1) == 2.0", True),  # int vs float compares by value, as in plain Python
    ("assert f(2) != 5", True),
    ("assert f(1) < 3 <= f(2)", True),
    ("assert f(1) in [1, 2]", True),
    ("assert counts('aab') == {'a': 2, 'b': 1}", True),
    ("assert nested() == {(1, 2): [1.5, {'a'}, None], 'b': b'x'}", True),
    ("assert nothing() is None", True),
    ("assert words('abc')", True),  # a re.Match: its truth is builtin
    ("assert not words('ABC')", True),
    ("x = f(3)\nassert x in (4, 5) and x < 10", True),
    ("assert list(gen(3)) == [0, 1, 2]", True),  # a generator stays in the answer; its items come as a list
    ("a = Acc()\nassert a.add(2) == 2 and a.add(3) == 5 and a.total == 5", True),  # an object's state lives there
    ("try:\n    boom()\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError", True),  # its exceptions come back
    ("assert f(1) == 3", False),
    ("assert f(1) != 2", False),
    ("assert not f(-1) == 0", False),
    ("assert words('ABC')", False),
]  # fmt: skip


def test_legitimate_solutions_keep_passing() -> None:
    result = run_python(GOOD, tests=[t for t, _ in GOOD_TESTS], spec=SANDBOX)
    assert (result.passed, result.total) == (15, 19)  # hand count of the True rows


@pytest.mark.parametrize(("test", "passes"), GOOD_TESTS)
def test_each_legitimate_test(test: str, passes: bool) -> None:
    assert run_python(GOOD, tests=[test], spec=SANDBOX).passed == int(passes)


def test_the_exploit_scores_zero_through_the_reward() -> None:
    spec = RewardSpec(code=CodeSandboxSpec(timeout_s=5.0, memory_mb=256))
    answer = {"language": "python", "tests": ["assert f(1) == 2", "assert f(2) == 3", "assert f(-1) == 0"]}
    inputs = [make(f"<answer>```python\n{ALWAYS_EQUAL}\n```</answer>", answer, "code", sample_id="hack"),
              make("<answer>```python\ndef f(x):\n    return x + 1\n```</answer>", answer, "code", sample_id="honest")]  # fmt: skip
    assert code_reward.score(inputs, spec) == [0.0, 1.0]
