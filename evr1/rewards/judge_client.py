"""A minimal client for an OpenAI-compatible chat endpoint (a vLLM server, a hosted API).

Standard library only (`urllib`): a POST to `{base_url}/chat/completions` with a timeout, retried
on connection errors, timeouts, HTTP 408/429 and 5xx with exponential back-off. The API key, if
any, is read from the environment variable *named* by `JudgeSpec.api_key_env`.

Grading requests put the question, reference and candidate between tags (`delimited`), with any
such tags inside the texts removed, and the system prompt tells the judge to treat tagged text as
data. Replies are read after dropping <think> blocks: by `reply_score`, a reply that is exactly an
integer 0-10, else the last integer 0-10 that is neither part of a range ("0-10", "0 to 10") nor a
denominator ("/10", "out of 10"); by `reply_verdict`, a last non-empty line that is exactly "correct"
or "incorrect" (any case, markdown emphasis, straight or curly quotes and a final "." or "!" allowed,
after an optional "Verdict:", "Answer:" or "Judgement:" label), unless an earlier line is the opposite
verdict. Anything else is a ValueError: a failed sample, never a guess.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evr1.errors import ConfigError

if TYPE_CHECKING:
    from evr1.specs import JudgeSpec

_RETRY_STATUS = {408, 429}
_OPEN_THINK = re.compile(r"<think>.*", re.DOTALL | re.IGNORECASE)
_INT = r"(?<![\w.])\d+(?![\w]|\.\d)"
_RANGE = re.compile(rf"{_INT}\s*(?:-|–|—|\bto\b)\s*{_INT}", re.IGNORECASE)
_DENOMINATOR = re.compile(rf"(?:/|\bout\s+of\b)\s*{_INT}", re.IGNORECASE)
_SCORE = re.compile(_INT)
_QUOTE = "[\"'\u201c\u201d\u2018\u2019]?"
_VERDICT = re.compile(rf"^(?:(?:final\s+)?(?:verdict|answer|judge?ment)\s*:\s*)?{_QUOTE}(correct|incorrect){_QUOTE}$",
                      re.IGNORECASE)
_EMPHASIS = re.compile(r"[*_`]")
MAX_REPLY_CHARS = 20_000
DATA_TAGS = ("question", "reference", "candidate")
_TAG = re.compile(rf"</?\s*(?:{'|'.join(DATA_TAGS)})\b[^>]*>", re.IGNORECASE)


class JudgeUnavailable(RuntimeError):
    """The judge endpoint could not be reached or answered with an error."""


def check_configured(judge: JudgeSpec, reward: str) -> None:
    """Raise a ConfigError naming the missing setting when the judge cannot be called."""
    missing = [name for name in ("base_url", "model") if not getattr(judge, name)]
    if missing:
        raise ConfigError(
            f"reward {reward!r} calls an LLM judge: set reward.judge.{' and reward.judge.'.join(missing)}"
            " (an OpenAI-compatible endpoint such as a vLLM server, e.g. base_url='http://127.0.0.1:8000/v1')"
        )
    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        raise ConfigError(f"reward.judge.api_key_env names {judge.api_key_env!r}, which is not set in the environment")


def chat(judge: JudgeSpec, system: str | None, user: str, options: Mapping[str, Any] | None = None) -> str:
    """The judge's reply text; raises JudgeUnavailable after `judge.retries` retries. `system` None: the user message
    alone. `options`: request fields that replace the defaults (temperature 0, `judge.max_tokens`) or add to them (an
    official scorer's `response_format`)."""
    check_configured(judge, "judge")
    url = judge.base_url.rstrip("/") + "/chat/completions"  # type: ignore[union-attr]
    headers = {"Content-Type": "application/json"}
    if judge.api_key_env:
        headers["Authorization"] = f"Bearer {os.environ[judge.api_key_env]}"
    body = json.dumps({
        "model": judge.model,
        "messages": [*([{"role": "system", "content": system}] if system is not None else []),
                     {"role": "user", "content": user}],
        "temperature": 0.0,
        "max_tokens": judge.max_tokens,
        **(options or {}),
    }).encode()  # fmt: skip
    last = ""
    for attempt in range(judge.retries + 1):
        if attempt:
            time.sleep(min(0.25 * 2 ** (attempt - 1), 4.0))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=judge.timeout_s) as reply:
                payload = json.loads(reply.read())
            return str(payload["choices"][0]["message"]["content"] or "")
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"
            if exc.code not in _RETRY_STATUS and exc.code < 500:
                raise JudgeUnavailable(f"LLM judge at {url} refused the request ({last})") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise JudgeUnavailable(f"LLM judge at {url} sent an unexpected reply ({type(exc).__name__}: {exc})") from None
    raise JudgeUnavailable(f"LLM judge at {url} unreachable after {judge.retries + 1} attempt(s): {last}")


def delimited(tag: str, text: str) -> str:
    """`text` between `<tag>` and `</tag>`, with every data tag inside it removed (so it cannot close
    the block early and write outside it)."""
    return f"<{tag}>\n{_TAG.sub('', text)}\n</{tag}>"


def final_text(reply: str) -> str:
    """The reply after its last `</think>`, with an unclosed `<think>` block (it runs on to the end) removed."""
    text = reply[:MAX_REPLY_CHARS]
    cut = text.lower().rfind("</think>")
    return _OPEN_THINK.sub(" ", text[cut + len("</think>") :] if cut >= 0 else text)


def _line_verdict(line: str) -> bool | None:
    found = _VERDICT.match(_EMPHASIS.sub("", line).strip().rstrip(".!").strip())
    return None if found is None else found.group(1).lower() == "correct"


def reply_verdict(reply: str) -> bool:
    """A judge reply's verdict, True for "correct" (rules in the module docstring); ValueError when there is none."""
    lines = [line for line in final_text(reply).splitlines() if line.strip()]
    verdict = _line_verdict(lines[-1]) if lines else None
    if verdict is None:
        raise ValueError(f"judge reply holds no verdict (correct or incorrect): {reply[:100]!r}")
    if any(_line_verdict(line) is (not verdict) for line in lines[:-1]):
        raise ValueError(f"judge reply holds both verdicts: {reply[:100]!r}")
    return verdict


def reply_score(reply: str) -> float:
    """A judge reply's 0-10 score as a fraction (rules in the module docstring); ValueError when there is none."""
    text = final_text(reply)
    whole = text.strip().rstrip(".")
    if whole.isdecimal() and int(whole) <= 10:
        return int(whole) / 10.0
    text = _DENOMINATOR.sub(" ", _RANGE.sub(" ", text))
    scores = [int(m.group()) for m in _SCORE.finditer(text) if int(m.group()) <= 10]
    if not scores:
        raise ValueError(f"judge reply holds no 0-10 score: {reply[:100]!r}")
    return scores[-1] / 10.0
