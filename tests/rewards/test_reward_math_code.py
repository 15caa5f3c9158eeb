"""Math (math-verify in worker processes) and code (executed in a sandbox; SVG/HTML compared)."""

from __future__ import annotations

import pytest
from reward_helpers import accuracies, make

from evr1.rewards import code_reward, markup_compare, math_reward
from evr1.rewards.code_sandbox import run_python
from evr1.rewards.process_pool import WorkerPool
from evr1.specs import CodeSandboxSpec, RewardSpec

MATH = [
    ("<answer>\\frac{1}{2}</answer>", "0.5", 1.0),
    ("The answer is \\boxed{2\\sqrt{2}}", "\\sqrt{8}", 1.0),
    ("<answer>x^2+2x+1</answer>", "(x+1)^2", 1.0),
    ("<answer>\\{2, 1\\}</answer>", "\\{1, 2\\}", 1.0),
    ("<answer>3</answer>", "4", 0.0),
    ("<answer></answer>", "1", 0.0),
    ("<answer>not math at all</answer>", "7", 0.0),
]


def test_math_table(spec: RewardSpec) -> None:
    """The verdicts, not the timeout: sympy's first calls in a fresh worker take seconds on a loaded machine."""
    inputs = [make(r, a, "math", sample_id=str(i)) for i, (r, a, _) in enumerate(MATH)]
    assert math_reward.score(inputs, spec.model_copy(update={"math_timeout_s": 120.0})) == [e for _, _, e in MATH]


def test_worker_pool_kills_overrunning_calls() -> None:
    pool = WorkerPool("time:sleep", size=1)
    try:
        assert pool.call(0.01, timeout=30) is None  # first call starts the worker
        with pytest.raises(TimeoutError):
            pool.call(30, timeout=0.5)
        assert pool.call(0.01, timeout=30) is None  # a fresh worker replaced the killed one
    finally:
        pool.close()


PY = {"language": "python", "tests": ["assert f(1) == 2", "assert f(2) == 3", "assert f(-1) == 0"]}
CODE = [
    ("<answer>```python\ndef f(x):\n    return x + 1\n```</answer>", PY, 1.0),
    ("<answer>def f(x):\n    return x + 1 if x > 0 else 5</answer>", PY, 2 / 3),
    ("<answer>```python\ndef f(x) return\n```</answer>", PY, 0.0),  # syntax error
    ("<answer>```python\nwhile True:\n    pass\n```</answer>", PY, 0.0),  # runs out of time
    ("<answer>```python\nx = bytearray(4 * 1024**3)\ndef f(x): return x + 1\n```</answer>", PY, 0.0),  # memory
    ("<answer>```python\nimport urllib.request\nurllib.request.urlopen('http://127.0.0.1:9')\ndef f(x): return x + 1\n```</answer>", PY, 0.0),
    ("<answer></answer>", PY, 0.0),
    ("<answer>print(sum(map(int, input().split())))</answer>",
     {"language": "python", "cases": [{"input": "1 2", "output": "3"}, {"input": "2 2", "output": "5"}]}, 0.5),
]  # fmt: skip


def test_code_table() -> None:
    spec = RewardSpec(code=CodeSandboxSpec(timeout_s=6.0, memory_mb=256))  # the loop's time: far above an honest answer's
    inputs = [make(r, a, "code", sample_id=str(i)) for i, (r, a, _) in enumerate(CODE)]
    assert accuracies(code_reward.score(inputs, spec)) == pytest.approx([e for _, _, e in CODE])


def test_sandbox_is_offline_and_in_a_fresh_folder() -> None:
    code = ("import os, socket\ncwd, seen = os.getcwd(), os.listdir()\nwrote = open('x', 'w').write('1')\ntry:\n"
            "    socket.create_connection(('1.1.1.1', 53), timeout=1)\n    net = True\nexcept OSError:\n    net = False")
    result = run_python(code, tests=["assert cwd == '/sandbox' and seen == ['.evr1-output']", "assert not net",
                                     "assert wrote == 1"], spec=CodeSandboxSpec(timeout_s=5, memory_mb=256))  # fmt: skip
    assert (result.passed, result.total) == (3, 3)


def test_code_execution_can_be_disabled() -> None:
    spec = RewardSpec(code=CodeSandboxSpec(execute=False))
    svg = "<svg><rect width='1'/></svg>"
    inputs = [make("<answer>def f(x): return x + 1</answer>", PY, "code"), make(f"<answer>{svg}</answer>", svg, "code")]
    assert code_reward.score(inputs, spec) == [None, 1.0]


SVG_REF = "<svg width='10'><rect x='1' y='1'/><circle r='2'/></svg>"
MARKUP = [
    (SVG_REF, 1.0),
    ("<svg  width='10'>\n<rect x='1' y='1'/><circle r='2'/></svg>", 1.0),  # whitespace only
    # tokens svg[width], rect[x,y] vs svg[width], rect[x,y], circle[r]: F1 = 2*2/5; ratio = 2*2/5
    ("<svg width='10'><rect x='1' y='1'/></svg>", 0.8),
    ("<html><body><p>hi</p></body></html>", 0.0),
    ("not markup", 0.0),
]


@pytest.mark.parametrize(("prediction", "expected"), MARKUP)
def test_markup_similarity(prediction: str, expected: float) -> None:
    assert markup_compare.similarity(prediction, SVG_REF) == pytest.approx(expected)


def test_bad_code_reference_is_reported_per_sample(spec: RewardSpec) -> None:
    [value] = code_reward.score([make("<answer>x</answer>", {"language": "cobol", "tests": ["x"]}, "code")], spec)
    assert isinstance(value, ValueError) and "cobol" in str(value)
