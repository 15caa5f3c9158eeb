"""The local judge (tests/judge_server.py) with scripted verdicts: each request gets the reply scripted
for the candidate answer it carries (between `<candidate>` tags, or after the official "Model Response to the
Question:" of MMVU, "Model Response:" of VideoReasonBench, VCR-Bench's "Answer:" to extract and "[Model
Answer]:" to score), so one run can judge some answers correct and others
incorrect. An unscripted candidate gets a reply that holds no verdict. VCR-Bench's CoT step prompts (recall,
precision) carry the response after "[Solution]"; their replies are scripted under "recall: <response>" and
"precision: <response>", and an unscripted one gets `NO_STEPS` (no step scores, the item kept).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from judge_server import Judge, serving

from evr1.eval.benchmarks.vcrbench import VCRBENCH_PRECISION, VCRBENCH_RECALL

_CANDIDATE = re.compile(r"<candidate>\n(.*)\n</candidate>", re.DOTALL)
_OFFICIAL = (re.compile(r"\n\nModel Response to the Question: (.*)\Z", re.DOTALL),  # MMVU's official judge request
             re.compile(r"\n\nModel Response: (.*)\n\nGround-Truth Answer:", re.DOTALL),  # VideoReasonBench's
             # VCR-Bench's extraction, then its scoring (the last "Answer:" / "[Model Answer]:": its examples come first)
             re.compile(r".*\nAnswer: (.*)\nYour output:\n\Z", re.DOTALL),
             re.compile(r".*\n\[Model Answer\]: (.*)\n\[Standard Answer\]: ", re.DOTALL),
             re.compile(r"\n\[Solution\]\n(.*)\n\n\[Ground Truth Information\]\n", re.DOTALL))  # its CoT steps
UNSCRIPTED = "no verdict scripted for this candidate"
STEP_PROMPTS = {"recall": VCRBENCH_RECALL[:60], "precision": VCRBENCH_PRECISION[:60]}
NO_STEPS = {"recall": "```json\n[]\n```",  # no reference step typed: no recall
            "precision": '```json\n[{"step_type": "Background Review Steps", "judgment": "Redundant"}]\n```'}


def step_kind(body: dict) -> str | None:
    """"recall" or "precision" for a VCR-Bench CoT step request, else None."""
    text = body["messages"][-1]["content"]
    return next((kind for kind, start in STEP_PROMPTS.items() if text.startswith(start)), None)


class _Requests(list):
    """The judge's request log, remembering per handler thread the request that thread received."""

    def __init__(self) -> None:
        super().__init__()
        self.current = threading.local()

    def append(self, body: dict) -> None:
        super().append(body)
        self.current.body = body


def verdict_requests(judge: Judge) -> list[dict]:
    """The requests made with evr1's verdict prompt (its `<candidate>` block), not an official scorer's."""
    return [body for body in judge.requests if _CANDIDATE.search(body["messages"][-1]["content"])]


def candidate_of(body: dict) -> str:
    """The candidate answer sent in a judge request (evr1's, or an official one: MMVU, VideoReasonBench, VCR-Bench)."""
    text = body["messages"][-1]["content"]
    found = _CANDIDATE.search(text) or next(filter(None, (p.search(text) for p in _OFFICIAL)), None)
    assert found, "no <candidate> block in the judge request"
    return found.group(1)


class VerdictJudge(Judge):
    """Replies `verdicts[candidate]` (any text: "correct", "Incorrect.", "7", ...) to each request."""

    def __init__(self) -> None:
        super().__init__()
        self.verdicts: dict[str, str] = {}
        self.requests = _Requests()

    @property  # type: ignore[override]
    def reply(self) -> str:  # read by the handler thread right after it logs its request
        body = self.requests.current.body
        kind = step_kind(body)
        if kind is not None:
            return self.verdicts.get(f"{kind}: {candidate_of(body)}", NO_STEPS[kind])
        return self.verdicts.get(candidate_of(body), UNSCRIPTED)

    @reply.setter
    def reply(self, value: str) -> None:  # Judge.__init__ sets a default reply: scripted replies replace it
        pass

    def judged(self) -> list[str]:
        """The candidates sent to the judge, in order."""
        return [candidate_of(body) for body in self.requests]


@contextmanager
def running_verdict_judge(verdicts: Mapping[str, str]) -> Iterator[VerdictJudge]:
    """A VerdictJudge serving on 127.0.0.1 with `verdicts` (candidate -> reply)."""
    server = VerdictJudge()
    server.verdicts.update(verdicts)
    with serving(server):
        yield server
