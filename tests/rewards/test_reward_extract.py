"""Answer extraction: tags, statements, boxed, think handling, strictness, hostile input."""

from __future__ import annotations

import time

import pytest

from evr1.rewards.extract import extract_answer

CASES = [
    # (response, expected text, expected source)
    ("<answer>B</answer>", "B", "tag"),
    ("<ANSWER> B </Answer>", "B", "tag"),
    ("< answer >7</ answer >", "7", "tag"),
    ("<answer>A</answer> then <answer>C</answer>", "C", "tag"),
    ("<answer>A</answer> then <answer>C", "A", "tag"),  # the last *complete* tag
    ("<answer>A<answer>D</answer>", "D", "tag"),
    ("<think><answer>A</answer></think><answer>B</answer>", "B", "tag"),
    ("<think>so <answer>A</answer></think>The answer is C", "C", "statement"),
    ("Reasoning...\nThe final answer is 42.", "42", "statement"),
    ("**Answer:** B", "B", "statement"),
    ("Answer:\n\n  yes", "yes", "statement"),
    ("so we get \\boxed{\\frac{1}{2}} in the end", "\\frac{1}{2}", "boxed"),
    ("\\boxed{1} and later \\boxed{2}", "2", "boxed"),
    ("\\boxed{3} then \\boxed{4", "3", "boxed"),
    ("<think>long thought</think>  Paris ", "Paris", "after_think"),
    ("reasoning without open tag</think>B", "B", "after_think"),  # Qwen3: <think> in the prompt
    ("just text", "just text", "whole"),
    ("<think>unfinished thinking, answer is A", None, None),
    ("<think>a<think>b</think>c</think>final", "final", "after_think"),
    ("", None, None),
    ("<answer>   </answer>", None, "tag"),
    ("东京 <answer>東京</answer>", "東京", "tag"),
]


@pytest.mark.parametrize(("response", "text", "source"), CASES)
def test_extraction_table(response: str, text: str | None, source: str | None) -> None:
    found = extract_answer(response)
    assert found.text == text
    assert found.source == source


def test_strict_mode_only_counts_tags() -> None:
    assert extract_answer("The answer is B", strict=True).text is None
    assert extract_answer("<think>x</think><answer>B</answer>", strict=True).text == "B"
    assert extract_answer("\\boxed{5}", strict=True).text is None


def test_tagged_flag() -> None:
    assert extract_answer("<answer>B</answer>").tagged
    assert not extract_answer("Answer: B").tagged
    assert extract_answer("<answer> </answer>").tagged  # a tag, but empty


HOSTILE = [
    "<answer>" * 20_000,
    "<" + " " * 50_000 + "answer",
    "\\boxed{" * 20_000,
    "{" * 50_000 + "\\boxed{x",
    "answer " * 20_000,
    "answer is" * 20_000,
    "<think>" * 20_000 + "</think>" * 5,
    "</think>" * 20_000,
    "<answer>" + "a" * 100_000,
]


@pytest.mark.parametrize("response", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_responses_are_linear(response: str) -> None:
    start = time.perf_counter()
    extract_answer(response + "x")  # bypass the cache of earlier tests
    assert time.perf_counter() - start < 1.0
