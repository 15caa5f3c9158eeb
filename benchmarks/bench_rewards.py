"""Reward throughput: samples/s per problem type on 10k generated responses, through the router.

Comparisons printed as ratios in the same run:
- router (grouped, concurrent, isolated) vs calling each per-sample scorer in a plain loop;
- math in persistent worker processes vs one fresh process per check (the obvious way to get a
  process-level timeout);
- our linear answer-tag scan vs the naive `<answer>(.*?)</answer>` regex on hostile text;
- code answers in the bubblewrap sandbox (answer and tests in separate processes) vs one plain
  `python -I -S` process per answer running it with its asserts (the old way), on 64 answers.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time

import pytest

from evr1.problem_types import ProblemType
from evr1.registry import REWARDS
from evr1.rewards import RewardInput, RewardRouter, code_reward
from evr1.rewards.code_sandbox import sandbox_for
from evr1.rewards.contract import sample_function
from evr1.rewards.extract import extract_answer
from evr1.rewards.sandbox_local import Deadline, python_binary
from evr1.specs import CodeSandboxSpec, RewardSpec

N = 10_000
SVG = "<svg width='10'><rect x='1' y='2'/><circle r='3'/></svg>"


def _sample(t: ProblemType, rng: random.Random) -> tuple[str, dict]:
    """A plausible response (right or wrong) and the reference for problem type `t`."""
    k = rng.randint(0, 9)
    think = "<think>" + " ".join(rng.choice(["so", "the", "video", "shows", "a", "cat"]) for _ in range(40)) + "</think>"
    table = {
        ProblemType.MULTIPLE_CHOICE: (f"<answer>{'ABCD'[k % 4]}</answer>", {"answer": "B", "options": ["w", "x", "y", "z"]}),
        ProblemType.NUMERICAL: (f"<answer>{k},000 meters</answer>", {"answer": "3000"}),
        ProblemType.REGRESSION: (f"<answer>{k + 0.5}</answer>", {"answer": 5}),
        ProblemType.TEMPORAL_GROUNDING: (f"<answer>from {k} s to {k + 4} s</answer>", {"answer": {"time": [3, 7]}, "duration": 20.0}),
        ProblemType.SPATIAL_GROUNDING: (f'<answer>{{"bbox_2d": [{k}, {k}, 50, 60]}}</answer>', {"answer": {"boxes": [0, 0, 50, 50]}}),
        ProblemType.SPATIAL_TEMPORAL_GROUNDING: (f'<answer>{{"time": [1, {k + 2}], "boxes": {{"1": [0, 0, {k + 1}, 5]}}}}</answer>',
                                                 {"answer": {"time": [1, 3], "boxes": {"1": [0, 0, 5, 5], "2": [0, 0, 4, 4]}}, "fps": 1.0}),
        ProblemType.TRACKING: (f'<answer>{{"1": [0, 0, {k + 1}, 5], "2": [0, 0, 4, 4]}}</answer>', {"answer": {"boxes": {"1": [0, 0, 5, 5], "2": [0, 0, 4, 4]}}, "fps": 1.0}),
        ProblemType.OPEN_ENDED: (f"<answer>a man is riding {k} horses on the beach</answer>", {"answer": "a man rides a horse on a beach"}),
        ProblemType.MATH: (f"<answer>\\frac{{{rng.randint(1, 999)}}}{{{rng.randint(2, 999)}}}</answer>", {"answer": "1/2"}),
        ProblemType.OCR: (f"<answer>hello wor{'l' * (k % 3)}d {k}</answer>", {"answer": "hello world"}),
        ProblemType.BOOLEAN: (f"<answer>{'yes' if k % 2 else 'no'}</answer>", {"answer": "yes"}),
        ProblemType.CODE: (f"<answer>{SVG if k % 2 else '<svg><rect/></svg>'}</answer>", {"answer": SVG}),
        ProblemType.PREFERENCE: (f"<answer>Response {'AB'[k % 2]}</answer>", {"answer": "A"}),
    }  # fmt: skip
    response, ref = table[t]
    return think + response, ref


def _inputs(t: ProblemType, n: int) -> list[RewardInput]:
    rng = random.Random(0)
    out = []
    for i in range(n):
        response, ref = _sample(t, rng)
        out.append(RewardInput(response=response + f" {n}-{i}", problem_type=t, sample_id=str(i), **ref))
    return out


PER_TYPE = N // len(ProblemType)  # 10k responses spread over the 13 types
# code here is SVG (no execution); math goes to worker processes
ROUTER = RewardRouter(RewardSpec(math_workers=2))


@pytest.mark.parametrize("problem_type", list(ProblemType), ids=[t.value for t in ProblemType])
def test_throughput_per_type(benchmark, problem_type: ProblemType) -> None:
    ROUTER.score(_inputs(problem_type, 20))  # start math workers, import scorer libraries
    extract_answer.cache_clear()  # time cold extraction: every response is new
    inputs = _inputs(problem_type, PER_TYPE)
    outputs = benchmark.pedantic(ROUTER.score, args=(inputs,), rounds=1, iterations=1)
    assert len(outputs) == len(inputs) and not any(o.error for o in outputs)
    rate = len(inputs) / benchmark.stats.stats.mean
    print(f"\n{problem_type.value}: {rate:,.0f} samples/s ({len(inputs)} responses)")


def test_router_vs_plain_loop(benchmark) -> None:
    types = [t for t in ProblemType if sample_function(REWARDS.get(t.value)) is not None]
    inputs = [inp for t in types for inp in _inputs(t, 300)]
    spec = ROUTER.spec

    def plain() -> list:
        return [sample_function(REWARDS.get(i.problem_type.value))(i, spec) for i in inputs]  # type: ignore[misc]

    plain()
    start = time.perf_counter()
    plain()
    loop_s = time.perf_counter() - start
    benchmark.pedantic(ROUTER.score, args=(inputs,), rounds=3, iterations=1)
    print(f"\nrouter {benchmark.stats.stats.mean:.3f} s vs plain loop {loop_s:.3f} s for {len(inputs)} samples "
          f"(router/loop = {benchmark.stats.stats.mean / loop_s:.2f}x; the router adds format, isolation and timeouts)")  # fmt: skip


def test_math_pool_vs_process_per_check(benchmark) -> None:
    inputs = _inputs(ProblemType.MATH, 20)
    benchmark.pedantic(ROUTER.score, args=(inputs,), rounds=3, iterations=1, warmup_rounds=1)
    code = "import sys; from evr1.rewards.math_reward import equivalent; equivalent(sys.argv[1], sys.argv[2])"
    start = time.perf_counter()
    for inp in inputs[:5]:
        subprocess.run([sys.executable, "-c", code, "1/2", extract_answer(inp.response).text or ""], check=True, timeout=60)
    fresh_per_sample = (time.perf_counter() - start) / 5
    pool_per_sample = benchmark.stats.stats.mean / len(inputs)
    print(f"\nmath: pool {pool_per_sample * 1000:.1f} ms/sample vs fresh process {fresh_per_sample * 1000:.0f} ms/sample "
          f"({fresh_per_sample / pool_per_sample:.0f}x faster)")  # fmt: skip


def test_tag_scan_vs_naive_regex(benchmark) -> None:
    hostile = "<answer>" * 3_000 + "x"
    naive = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
    start = time.perf_counter()
    naive.findall(hostile)
    naive_s = time.perf_counter() - start
    benchmark.pedantic(lambda: extract_answer.__wrapped__(hostile), rounds=5, iterations=1)
    print(f"\nhostile tags: scan {benchmark.stats.stats.mean * 1000:.2f} ms vs naive regex {naive_s * 1000:.1f} ms "
          f"({naive_s / benchmark.stats.stats.mean:.0f}x)")  # fmt: skip


CODE_TESTS = ["assert f(1) == 2", "assert f(10) == 11", "assert [f(i) for i in range(3)] == [1, 2, 3]"]


def _code_batch(n: int = 64) -> list[RewardInput]:
    answers = ["def f(x):\n    return x + 1", "def f(x):\n    return x * 2"]
    return [RewardInput(response=f"<answer>```python\n{answers[i % 2]}\n```</answer>", problem_type="code",
                        answer={"language": "python", "tests": CODE_TESTS}, sample_id=str(i)) for i in range(n)]  # fmt: skip


def _plain(inputs: list[RewardInput]) -> None:
    for inp in inputs:
        code = inp.response.split("```python\n")[1].split("```")[0]
        subprocess.run([python_binary(), "-I", "-S", "-c", code + "\n" + "\n".join(CODE_TESTS)],
                       capture_output=True, timeout=30, check=False)  # fmt: skip


def test_code_sandbox_vs_plain_process(benchmark) -> None:
    spec = RewardSpec(code=CodeSandboxSpec(workers=2))
    backend = sandbox_for(spec.code)
    start_plain = time.perf_counter()
    for _ in range(10):
        subprocess.run([python_binary(), "-I", "-S", "-c", "pass"], check=True)
    plain_start = (time.perf_counter() - start_plain) / 10
    start_box = time.perf_counter()
    for _ in range(10):
        deadline = Deadline(30)
        backend.program(b'{"mode": "program", "code": "pass", "stdin": "", "limits": {"memory_mb": 512, "cpu_s": 5, '
                        b'"file_mb": 16, "processes": 16}}\n', deadline)  # fmt: skip
        deadline.close()
    box_start = (time.perf_counter() - start_box) / 10
    inputs = _code_batch()
    start = time.perf_counter()
    _plain(inputs)
    plain_s = time.perf_counter() - start
    scores = benchmark.pedantic(code_reward.score, args=(inputs, spec), rounds=3, iterations=1, warmup_rounds=1)
    assert scores == pytest.approx([1.0, 1 / 3] * 32)  # x * 2 passes f(1) == 2 only
    ours = benchmark.stats.stats.mean
    print(f"\ncode sandbox ({backend.limits}): start-up {box_start * 1000:.0f} ms vs plain python {plain_start * 1000:.0f} ms "
          f"({box_start / plain_start:.1f}x); 64 answers x 3 tests: {ours * 1000 / 64:.0f} ms/answer with "
          f"{spec.code.workers} workers vs {plain_s * 1000 / 64:.0f} ms/answer plain, one at a time "
          f"(sandbox/plain = {ours / plain_s:.2f}x)")  # fmt: skip
