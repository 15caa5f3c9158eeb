"""Our 6 task folders (the benchmarks lmms-eval lacks) through real lmms-eval: numbers equal evr1's own.

The fixtures of the 6 are bound to `evals/`, answered by `ScriptedChat` with the responses of
tests/eval/expected.py, and scored by `evr1.eval.lmms.scoring`; lmms-eval's numbers must equal the
hand-computed ones there and those of `evr1.eval.api.evaluate` on the same fixtures.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evr1.errors import ConfigError
from evr1.eval.api import evaluate
from evr1.eval.fixtures import write_fixtures
from evr1.eval.lmms.model import ScriptedChat
from evr1.eval.lmms.scoring import doc_record, doc_to_messages, doc_to_text, process_results, router
from evr1.eval.lmms.tasks import benchmark_docs, bind
from evr1.eval.responders import ScriptedResponder
from evr1.registry import BENCHMARKS
from evr1.specs import EvalSpec, JudgeSpec

from ..expected import CASES
from ..verdict_judge import candidate_of, verdict_requests
from .conftest import lmms_offline

OWN = ["vcrbench", "videoreasonbench", "longvideo_reason", "stvg", "odvbench", "livesports3k_qa"]


@pytest.fixture(scope="module")
def own_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("own-benchmarks")
    write_fixtures(root, OWN)
    return root


@pytest.fixture(scope="module")
def bound(own_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("own-tasks")
    assert [b.tasks for b in bind(own_root, out, OWN)] == [{f"evr1_{n}": len(CASES[n]["responses"])} for n in OWN]
    return out


@pytest.fixture
def offline(tmp_path: Path) -> Iterator[None]:
    """A fresh offline lmms-eval environment per test: the judge variables a test sets do not leak."""
    with lmms_offline(tmp_path):
        yield


def _table(root: Path, names: list[str]) -> dict[str, str]:
    table = {}
    for name in names:
        records = BENCHMARKS.get(name).load(root)
        table.update({r.id: text for r, text in zip(records, CASES[name]["responses"])})
    return table


def _run(bound: Path, chat: ScriptedChat, names: list[str]) -> dict[str, Any]:
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    out = simple_evaluate(model=chat, tasks=[f"evr1_{n}" for n in names], log_samples=True,
                          task_manager=TaskManager(include_path=[str(bound)], include_defaults=False))
    assert out is not None, "lmms-eval returned no results"
    return out


def test_lmms_numbers_equal_evr1_evaluator(own_root: Path, bound: Path, offline: None, verdict_judge,
                                          tmp_path: Path) -> None:
    judge = verdict_judge  # the verdicts of expected.py
    os.environ.update(EVR1_JUDGE_URL=judge.url, EVR1_JUDGE_MODEL="judge")
    table = _table(own_root, OWN)
    chat = ScriptedChat(table)
    out = _run(bound, chat, OWN)
    got = out["results"]
    assert sorted(chat.asked) == sorted(table)
    # Only non-empty open-ended answers reach evr1's verdict judge: vcrbench 1, videoreasonbench 1 (the official judge
    # steps ask too: VCR-Bench's extraction and scoring of both answers).
    assert sorted(candidate_of(b) for b in verdict_requests(judge)) == ["(a1, b2), (c2, b1), (a3, c1)",
                                                                          "It moves to the left."]
    ours = evaluate(EvalSpec(judge=JudgeSpec(base_url=judge.url, model="judge")), ScriptedResponder(table), tmp_path / "evr1",
                    benchmarks=OWN, data_root=own_root)["benchmarks"]
    for name in OWN:  # lmms-eval reports the official protocol; the strict numbers are expected.py's
        headline = got[f"evr1_{name}"][f"{name},none"]
        if name == "livesports3k_qa":  # its official answers are chosen by logits, which generated texts lack
            assert math.isnan(headline) and ours[name]["score"] is None, headline
            assert ours[name]["protocols"]["strict"]["score"] == pytest.approx(CASES[name]["score"], abs=1e-9)
            continue
        assert headline == pytest.approx(ours[name]["protocols"]["official"]["score"], abs=1e-9) and headline == ours[name]["score"], name
        assert ours[name]["protocols"]["strict"]["score"] == pytest.approx(CASES[name]["score"], abs=1e-9), name
    for metric in ("m_tIoU", "vIoU@0.3", "vIoU@0.5"):  # HC-STVG's sub-scores
        assert got["evr1_stvg"][f"{metric},none"] == pytest.approx(ours["stvg"]["protocols"]["official"]["metrics"][metric],
                                                                    abs=1e-9), metric
    for name in OWN:  # unparsed answers are scored 0 and kept: livesports3k_qa "A or D", videoreasonbench ""
        rows = [sample[name] for sample in out["samples"][f"evr1_{name}"]]
        assert len(rows) == len(CASES[name]["responses"]), name
        assert sum(r["parsed"] is None and not r["error"] for r in rows) == CASES[name].get("unparsed", 0), name
    assert set(got["evr1_vcrbench"]) == {"alias", *(f"vcrbench{s},none" for s in ("", "_stderr", "_stderr_clt", "_stderr_clustered"))}


def _doc(media: list[dict[str, Any]], **record: Any) -> dict[str, Any]:
    fields = {"id": "b/1", "problem": "What colour is the square?", "problem_type": "multiple_choice", "answer": "B",
              "options": ["red", "blue"], "meta": {"category": None}, **record}
    return {**fields, "evr1_record": fields, "evr1_id": "b/1", "evr1_benchmark": "longvideo_reason", "evr1_media": media}


def test_messages_carry_media_and_evr1_question() -> None:
    video = {"type": "video", "path": "/data/v.mp4"}
    assert doc_to_messages(_doc([video])) == [{"role": "user", "content": [
        {"type": "video", "url": "/data/v.mp4"},
        {"type": "text", "text": "What colour is the square?\nOptions:\nA. red\nB. blue\n"
                                 "Answer with the letter (A or B) of the correct option."},
    ]}]
    open_ended = _doc([video], problem="Describe the motion.", problem_type="open_ended", options=None)
    assert doc_to_messages(open_ended, {"prompt_mode": "reason"})[0]["content"][-1]["text"] == (
        "Describe the motion.\nAnswer the question briefly.\nThink about the question step by step inside"
        " <think> </think> tags, then give the final answer inside <answer> </answer> tags.")
    clip = _doc([{**video, "video_start": 1.0, "video_end": 3.5}, {"type": "image", "path": "/data/i.png", "video_start": None}])
    assert doc_to_messages(clip)[0]["content"][:2] == [{"type": "video", "url": "/data/v.mp4", "start_time": 1.0, "end_time": 3.5},
                                                       {"type": "image", "url": "/data/i.png"}]
    with pytest.raises(ConfigError, match="prompt_mode: 'cot' is not one of"):
        doc_to_messages(clip, {"prompt_mode": "cot"})


def test_documents_rebuild_the_evaluated_records(own_root: Path) -> None:
    """The prompt of every document is the one evr1's evaluator asks (the record survives the document)."""
    for name in OWN:
        records = BENCHMARKS.get(name).load(own_root)
        docs = benchmark_docs(name, own_root)
        assert [doc_record(d).model_dump(exclude={"media"}) for d in docs] == [r.model_dump(exclude={"media"}) for r in records]
        for doc, record in zip(docs, records):
            assert doc_to_text(doc) == ScriptedResponder({}).prepare(record).text


def test_missing_judge_is_a_clear_error_before_generation(own_root: Path, bound: Path, offline: None) -> None:
    chat = ScriptedChat(_table(own_root, ["vcrbench"]))
    with pytest.raises(ConfigError, match=r"'vcrbench' has an official scorer that judges every answer with an LLM judge:"
                                          r" set EVR1_JUDGE_URL .* and EVR1_JUDGE_MODEL"):
        _run(bound, chat, ["vcrbench"])
    assert chat.asked == []
    # Multiple-choice benchmarks need no judge.
    mc = ScriptedChat(_table(own_root, ["odvbench"]))
    assert _run(bound, mc, ["odvbench"])["results"]["evr1_odvbench"]["odvbench,none"] == 50.0


def test_routers_are_built_once_per_benchmark_judge_and_type(own_root: Path, offline: None, judge: Any) -> None:
    mc, _ = benchmark_docs("vcrbench", own_root)  # vcrbench/1: answer B
    router.cache_clear()
    # A missing judge is never cached: VCR-Bench's official scorer judges every answer, multiple choice too.
    with pytest.raises(ConfigError, match=r"'vcrbench' has an official scorer that judges every answer with an LLM judge:"
                                          r" set EVR1_JUDGE_URL"):
        process_results(mc, ["B"])
    assert router.cache_info().currsize == 0
    os.environ.update(EVR1_JUDGE_URL=judge.url, EVR1_JUDGE_MODEL="judge")
    assert [process_results(mc, [text])["vcrbench"]["score"] for text in ("B", "C", "(B)")] == [1.0, 0.0, 1.0]
    info = router.cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 2, 1)  # the failed build counts as a miss, keeps nothing
    os.environ.update(EVR1_JUDGE_MODEL="another")  # other judge settings: another router
    assert process_results(mc, ["B"])["vcrbench"]["score"] == 1.0  # evr1's strict score: read locally
    assert router.cache_info().currsize == 2
