"""LiveSports-3K QA.

LiveSports-3K's official choice by logits (`evr1.eval.logit_choice`): the rule of LiveCC's mcq_predict
(showlab/livecc evaluation/distributed_mcq_predictor.py) with a real tiny Qwen2.5-VL: its prompt, its candidate
tokens, the last position's logits; the official block scored from the choices; given responses leave it unavailable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from evr1.errors import ConfigError, Evr1Error
from evr1.eval.api import engine_responder, evaluate, evaluate_responses, require_choices
from evr1.eval.benchmarks.livesports3k_qa import LIVECC
from evr1.eval.protocols import block, blocks
from evr1.eval.responders import EngineResponder
from evr1.models.forward import collate, rope_positions
from evr1.models.testing import tiny_spec
from evr1.registry import BENCHMARKS, ENGINES
from evr1.specs import EvalSpec, VideoSpec

from ..rows import check_same, easyvideor1_row, sample_row, score_strict, write_files

NAME = "livesports3k_qa"


VIDEO = VideoSpec(fps=1.0, min_frames=2, max_frames=4, min_pixels=28 * 28, max_pixels=56 * 56)


@pytest.fixture(scope="module")
def processor(model_cache: Path) -> Any:
    from evr1.models import load_processor

    return load_processor(tiny_spec("qwen2.5-vl", model_cache))


def test_made_takes_the_first_maximum_and_candidates_are_the_last_token_of_colon_letter(processor: Any) -> None:
    assert LIVECC.made([0.5, 2.0, 2.0, -1.0]) == {"choice": "B", "logits": [0.5, 2.0, 2.0, -1.0]}
    assert LIVECC.made([3.0, 3.0, 3.0, 3.0])["choice"] == "A"
    tok = processor.tokenizer
    ids = LIVECC.candidates(processor)
    assert ids == [tok(f": {x}")["input_ids"][-1] for x in "ABCD"] and len(set(ids)) == 4


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-1.5, 0.0, 0.25, 2.0, float("-inf")]), min_size=4, max_size=4))
def test_made_agrees_with_torch_argmax_the_authors_rule(logits: list[float]) -> None:
    assert LIVECC.made(logits)["choice"] == "ABCD"[int(torch.tensor(logits).argmax())]


def _row(choice: str | None, answer: str, qtype: str, ocr: int, response: str | None = "A") -> dict[str, Any]:
    return {"id": f"{NAME}/{qtype}{ocr}{answer}{choice}", "response": response, "answer": answer, "score": 0.0,
            "parsed": response, "error": None, "components": {}, "meta": {"category": qtype, "ocr": ocr},
            **({"official": {"choice": choice}} if choice else {})}


def test_given_responses_leave_the_official_block_unavailable_and_strict_scored() -> None:
    rows = [_row(None, "A", "Who", 1), _row(None, "B", "When", 0)]
    both = blocks(BENCHMARKS.get(NAME), rows)
    assert both["official"]["score"] is None and "logits over the option letters" in both["official"]["unavailable"]
    assert "2 of 2 samples hold no such choice" in both["official"]["unavailable"]
    assert both["strict"]["n"] == 2 and both["strict"]["score"] == 0.0
    # a row that failed before it was answered (no response, no choice) does not stop the block: it scores 0
    done = blocks(BENCHMARKS.get(NAME), [_row("A", "A", "Who", 1), {**_row(None, "B", "Who", 0, None), "error": "x"}])
    assert done["official"]["score"] == 50.0 and done["official"]["failed"] == 1


@pytest.fixture(scope="module")
def chosen_run(bench_root: Path, model_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    spec = EvalSpec(video=VIDEO, max_response_tokens=3, batch_size=2, media_workers=1, prefetch=2)
    responder = engine_responder(tiny_spec("qwen2.5-vl", model_cache), spec, data_root=bench_root)
    out = tmp_path_factory.mktemp("livesports")
    results = evaluate(spec, responder, out, benchmarks=[NAME], data_root=bench_root)
    rows = [json.loads(line) for line in (out / NAME / "samples.jsonl").read_text().splitlines()]
    return {"spec": spec, "responder": responder, "out": out, "results": results, "rows": rows, "root": bench_root}


def _by_hand(responder: EngineResponder, prompt: Any) -> torch.Tensor:
    """The logits of the candidate tokens at the last position of `prompt` alone (no padding), all positions kept."""
    model = responder.engine.model
    batch = collate([prompt], 0, model.config)
    positions, _ = rope_positions(model, batch)
    with torch.no_grad():
        logits = model(**batch.model_inputs(model.dtype), position_ids=positions).logits
    tok = responder.processor.tokenizer
    return logits[0, -1, [tok(f": {x}")["input_ids"][-1] for x in "ABCD"]]


@pytest.mark.slow
def test_the_official_choice_is_the_arg_max_of_the_models_own_logits(chosen_run: dict[str, Any]) -> None:
    responder, rows = chosen_run["responder"], chosen_run["rows"]
    records = BENCHMARKS.get(NAME).load(chosen_run["root"])
    assert [r["id"] for r in rows] == [r.id for r in records] and len(rows) == 2
    for record, row in zip(records, rows):
        prompt = responder.prepare(record, choice=LIVECC).choice_prompt
        user = f"{record.problem}\nA. a\nB. b\nC. c\nD. d\nPlease select the correct answer.<|im_end|>\n"
        assert prompt.text.endswith(user + "<|im_start|>assistant\nAnswer:")
        expected = _by_hand(responder, prompt)
        assert row["official"]["logits"] == pytest.approx(expected.tolist(), abs=1e-4)  # batched, left-padded
        assert row["official"]["choice"] == "ABCD"[int(expected.argmax())]
        assert isinstance(row["response"], str)  # the strict block still reads the generated text


@pytest.mark.slow
def test_the_official_block_is_scored_from_the_choices(chosen_run: dict[str, Any]) -> None:
    got, rows = chosen_run["results"]["benchmarks"][NAME], chosen_run["rows"]
    right = [float(r["official"]["choice"] == r["answer"]) * 100 for r in rows]  # items: Who/OCR 0 (C), When/OCR 1 (D)
    official = got["protocols"]["official"]
    assert official["score"] == sum(right) / 2 and official["n"] == 2 and official["failed"] == 0
    assert official["breakdowns"]["category"] == {"Who": {"score": right[0], "n": 1}, "When": {"score": right[1], "n": 1}}
    assert official["breakdowns"]["ocr"] == {"0": {"score": right[0], "n": 1}, "1": {"score": right[1], "n": 1}}
    assert official["metrics"]["OCR"] == right[1] and official["metrics"]["non-OCR"] == right[0]
    assert got["protocols"]["strict"]["score"] == 100 * sum(r["score"] for r in rows) / 2


@pytest.mark.slow
def test_a_resume_keeps_the_choices_and_given_responses_do_not_make_them(chosen_run: dict[str, Any],
                                                                           tmp_path: Path) -> None:
    spec, out, root = chosen_run["spec"], chosen_run["out"], chosen_run["root"]
    again = evaluate(spec, chosen_run["responder"], out, benchmarks=[NAME], data_root=root)
    assert again["benchmarks"][NAME]["protocols"] == chosen_run["results"]["benchmarks"][NAME]["protocols"]
    responses = tmp_path / "responses.jsonl"
    responses.write_text("".join(json.dumps({"id": r["id"], "response": r["response"]}) + "\n" for r in chosen_run["rows"]))
    given = evaluate_responses(spec, responses, tmp_path / "run", benchmarks=[NAME], data_root=root)["benchmarks"][NAME]
    assert given["score"] is None and "hold no such choice" in given["protocols"]["official"]["unavailable"]
    assert given["protocols"]["strict"] == chosen_run["results"]["benchmarks"][NAME]["protocols"]["strict"]


class _NoLogits:
    """The vLLM edge: an engine that generates but gives no logits (`choice_logits`)."""

    max_prompt_tokens = None


def test_an_engine_without_logits_is_refused_under_the_official_headline(bench_root: Path, processor: Any) -> None:
    responder = EngineResponder(_NoLogits(), processor, None, None)
    with pytest.raises(ConfigError, match=r"livesports3k_qa.*logits.*_NoLogits engine.*--engine hf.*--protocol strict"):
        evaluate(EvalSpec(benchmarks=(NAME,)), responder, bench_root / "run", data_root=bench_root)
    benches = [BENCHMARKS.get(NAME), BENCHMARKS.get("mvbench")]
    with pytest.raises(ConfigError, match=r"livesports3k_qa"):
        require_choices(benches, _NoLogits(), "official")
    require_choices(benches, _NoLogits(), "strict")  # the strict headline runs; its official block is unavailable
    require_choices([BENCHMARKS.get("mvbench")], _NoLogits(), "official")  # no benchmark chooses by logits


def test_a_training_run_with_such_an_engine_is_refused_when_its_rollout_worker_starts(model_cache: Path) -> None:
    from evr1.experiment import Experiment
    from evr1.runner.ray.actors import RolloutWorker
    from evr1.specs import RolloutSpec

    class NoLogits(_NoLogits):  # the engine contract, without `choice_logits`
        version = 0

        @classmethod
        def from_spec(cls, model: Any, rollout: Any, *, device: str = "cpu") -> NoLogits:
            return cls()

        def generate(self, prompts: Any, params: Any) -> list[Any]:
            raise AssertionError("not reached")

        def load_weights(self, weights: Any) -> None:
            raise AssertionError("not reached")

    ENGINES.register("test/no_logits", NoLogits)
    try:
        exp = Experiment(model=tiny_spec("qwen2.5-vl", model_cache), rollout=RolloutSpec(engine="test/no_logits"),
                         eval=EvalSpec(benchmarks=(NAME, "mvbench"), every_steps=5))
        with pytest.raises(ConfigError, match=r"livesports3k_qa.*NoLogits engine.*rollout.engine='hf'"):
            RolloutWorker(exp, {})
        RolloutWorker(exp.model_copy(update={"eval": EvalSpec(benchmarks=(NAME,), every_steps=0)}), {})  # no eval
        RolloutWorker(exp.model_copy(update={"eval": EvalSpec(benchmarks=(NAME,), every_steps=5, protocol="strict")}), {})
    finally:
        ENGINES.unregister("test/no_logits")


def _responses(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_responses_file_may_carry_the_recorded_choices(bench_root: Path, tmp_path: Path) -> None:
    # fixture items: s1_e1_q1 (answer C, Who, OCR 0), s1_e2_q1 (answer D, When, OCR 1); the texts are both wrong
    first, second = f"{NAME}/s1_e1_q1", f"{NAME}/s1_e2_q1"
    given = [{"id": first, "response": "B", "official_choice": "C"}, {"id": second, "response": "B", "official_choice": "A"}]
    got = evaluate_responses(EvalSpec(), _responses(tmp_path / "r.jsonl", given), tmp_path / "run", benchmarks=[NAME],
                             data_root=bench_root)["benchmarks"][NAME]
    official, strict = got["protocols"]["official"], got["protocols"]["strict"]
    assert got["score"] == official["score"] == 50.0 and strict["score"] == 0.0
    assert official["breakdowns"]["category"] == {"Who": {"score": 100.0, "n": 1}, "When": {"score": 0.0, "n": 1}}
    assert (official["metrics"]["OCR"], official["metrics"]["non-OCR"]) == (0.0, 100.0)
    partly = _responses(tmp_path / "p.jsonl", [given[0], {"id": second, "response": "D"}])
    got = evaluate_responses(EvalSpec(), partly, tmp_path / "run2", benchmarks=[NAME], data_root=bench_root)
    assert "1 of 2 samples hold no such choice" in got["benchmarks"][NAME]["protocols"]["official"]["unavailable"]
    bad = _responses(tmp_path / "b.jsonl", [{**given[0], "official_choice": "c"}])
    with pytest.raises(Evr1Error, match=r"b.jsonl:1: official_choice must be one option letter .*'c'"):
        evaluate_responses(EvalSpec(), bad, tmp_path / "run3", benchmarks=[NAME], data_root=bench_root)


def test_livesports_ocr_sub_score() -> None:
    # the official item is the choice by logits (sample_row `official`), not the generated text: the texts here say otherwise
    rows = [{**sample_row("A", "B", 0, category="who", ocr=1), "official": {"choice": "A"}},
            {**sample_row("A", "A", 1, category="who", ocr=1), "official": {"choice": "C"}},
            {**sample_row("B", "D", 0, category="when", ocr=0), "official": {"choice": "B"}}]
    official = block(BENCHMARKS.get("livesports3k_qa"), rows, "official")
    assert official["metrics"] == pytest.approx({"accuracy": 200 / 3, "OCR": 50.0, "non-OCR": 100.0})
    assert official["breakdowns"]["ocr"] == {"0": {"score": 100.0, "n": 1}, "1": {"score": 50.0, "n": 2}}


def test_livesports_easyvideor1_rows_with_a_shared_problem_id_load_and_score(tmp_path: Path) -> None:
    """Who right, What wrong, When right: 66.67; by type Who 100, What 0, When 100."""
    items = [("Who", "Who spins?"), ("What", "What did the bullfighter do?"), ("When", "When is the bow explained?")]
    opts = ["A: x", "B: y", "C: z", "D: w"]
    official = [{"video_id": "zECsM6q9Nik", "question_id": f"q{i}", "q_type": t, "OCR": 0, "question": q, "options": opts,
                 "answer": "B", "video_start": 4.668, "video_end": 31.422} for i, (t, q) in enumerate(items)]
    pids = ["zECsM6q9Nik_e2_q1", "zECsM6q9Nik_e2_q1", "zECsM6q9Nik_e3_q1"]
    easy = [easyvideor1_row(pid, q, opts, "B", "ytb_zECsM6q9Nik_4.668_31.422.mp4", data_source="LiveSports-3K-QA",
                  q_type_livesports=t, ocr_livesports=0) for pid, (t, q) in zip(pids, items)]
    responses = ["B", "A", "B"]
    got_official = score_strict(write_files(tmp_path / "o", {"livesports3k/qa.json": official}), "livesports3k_qa",
                          {f"livesports3k_qa/q{i}": r for i, r in enumerate(responses)})
    got_easy = score_strict(write_files(tmp_path / "e", {"livesports3k/qa.json": easy}), "livesports3k_qa",
                      {f"livesports3k_qa/qa/{pid}/{t}": r for pid, (t, _), r in zip(pids, items, responses)})
    check_same(got_official, got_easy, 200 / 3)
    assert {k: v["score"] for k, v in got_easy["breakdowns"]["category"].items()} == {"Who": 100.0, "What": 0.0, "When": 100.0}

