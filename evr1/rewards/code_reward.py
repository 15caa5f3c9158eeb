"""Code: Python executed against the reference's tests; SVG/HTML compared structurally.

The answer is `{"language": "python", "tests": ["assert f(1) == 2", ...]}` (or `"cases":
[{"input": "1 2", "output": "3"}, ...]` for stdin/stdout programs), or `{"language": "svg" |
"html", "reference": "<svg …>"}` (a bare markup string works too). The response's code is its
last fenced code block, else the whole answer. Python scores the fraction of tests passed, run by
`code_sandbox` (the answer in a sandbox, the tests in another process); a solution that runs out of
time passes nothing, and one that hits a limit or dies keeps the tests it passed before. A sandbox
that cannot start, or a remote one that fails, fails that sample alone (with its reason); a sandbox
that is unavailable here refuses the batch with a ConfigError naming the options. A Python answer that
did not get to run every test (a timeout, a limit, its process died) says why in its output's `note`. With
`RewardSpec.code.execute` off, Python problems are not applicable (None).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError
from evr1.rewards import markup_compare
from evr1.rewards.code_sandbox import run_python, sandbox_for
from evr1.rewards.contract import RewardOutput
from evr1.rewards.extract import answer_of

if TYPE_CHECKING:
    from evr1.rewards.contract import RewardInput, ScorerValue
    from evr1.specs import RewardSpec

logger = logging.getLogger(__name__)
_FENCE = re.compile(r"```([^\n]*)\n(.*?)```", re.DOTALL)
MAX_CODE_CHARS = 100_000


def code_of(text: str | None) -> str | None:
    """The last fenced code block of the answer, else the answer itself."""
    if not text:
        return None
    blocks = [m.group(2) for m in _FENCE.finditer(text[: MAX_CODE_CHARS * 2])]
    code = (blocks[-1] if blocks else text).strip()
    return code or None


def task(answer: Any) -> dict[str, Any]:
    """The reference as a dict with `language` and its tests or reference markup."""
    if isinstance(answer, str):
        stripped = answer.lstrip().lower()
        language = "svg" if stripped.startswith(("<svg", "<?xml")) else "html" if stripped.startswith("<") else None
        if language is None:
            raise ValueError(f"code answer {answer[:60]!r}… is neither markup nor a dict with tests")
        return {"language": language, "reference": answer}
    if not isinstance(answer, dict):
        raise ValueError(f"code answer must be a dict or markup text, got {type(answer).__name__}")  # noqa: TRY004 - a bad record
    language = str(answer.get("language", "python")).lower()
    if language == "python" and not (answer.get("tests") or answer.get("cases")):
        raise ValueError("python code answer has neither 'tests' nor 'cases'")
    if language in ("svg", "html") and not isinstance(answer.get("reference"), str):
        raise ValueError(f"{language} code answer needs a 'reference' string")
    if language not in ("python", "svg", "html"):
        raise ValueError(f"code language {language!r} is not supported (python, svg, html)")
    return {**answer, "language": language}


def suits(text: str, inp: RewardInput) -> bool:
    code = code_of(text)
    if code is None:
        return False
    if isinstance(inp.answer, dict) and str(inp.answer.get("language", "python")).lower() == "python":
        try:
            compile(code[:MAX_CODE_CHARS], "<answer>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _one(inp: RewardInput, spec: RewardSpec) -> ScorerValue:
    try:
        ref = task(inp.answer)
    except ValueError as exc:
        return exc
    code = code_of(answer_of(inp, spec))
    if ref["language"] != "python":
        return markup_compare.similarity(code, ref["reference"]) if code else 0.0
    if not spec.code.execute:
        return None
    if not code or len(code) > MAX_CODE_CHARS:
        return 0.0
    raw = ref.get("tests")
    tests = [raw] if isinstance(raw, str) else [str(t) for t in raw] if raw else None
    cases = [c if isinstance(c, dict) else {} for c in ref["cases"]] if not tests else None
    try:
        result = run_python(code, tests=tests, cases=cases, spec=spec.code)
    except Exception as exc:  # noqa: BLE001  (the sandbox's failure, not the answer's: this sample alone fails)
        return exc
    accuracy = result.passed / result.total if result.total else 0.0
    if not result.reason:
        return accuracy
    note = f"{result.passed}/{result.total} tests passed: {result.reason}"
    logger.debug("code sample %s: %s", inp.sample_id, note)
    return RewardOutput(accuracy, {"accuracy": accuracy}, note=note)


def _runs_python(inp: RewardInput) -> bool:
    try:
        return task(inp.answer)["language"] == "python"
    except ValueError:
        return False


def score(inputs: Sequence[RewardInput], spec: RewardSpec) -> list[ScorerValue]:
    """Code: fraction of Python tests passed in a sandbox, or SVG/HTML structural similarity."""
    if spec.code.execute and any(_runs_python(inp) for inp in inputs):
        sandbox_for(spec.code)  # refuses the batch when answers cannot be isolated here
    with ThreadPoolExecutor(max_workers=max(1, min(spec.code.workers, len(inputs)))) as threads:
        return list(threads.map(lambda inp: _one(inp, spec), inputs))


def status(spec: RewardSpec) -> list[str]:
    """Where Python answers run here under `spec`, and the limits in force (for `evr1 rewards describe`)."""
    if not spec.code.execute:
        return ["python answers: not run (reward.code.execute=False)"]
    try:
        backend = sandbox_for(spec.code)
    except ConfigError as exc:
        return [f"python answers: refused here: {exc}"]
    return [f"python answers run in: {backend.name}", f"limits in force: {backend.limits}"]
