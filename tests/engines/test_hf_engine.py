"""The HF rollout engine on tiny models of every family, with real video prompts."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from evr1.engines import RolloutEngine, SamplingParams
from evr1.engines.hf import HFEngine
from evr1.errors import Evr1Error
from evr1.models import build_prompt, load_model
from evr1.models.forward import response_logits, response_logprobs
from evr1.models.testing import process_image, random_frames, video_prompts
from evr1.registry import ENGINES
from evr1.runner.learner.batching import Sample
from evr1.runner.learner.logprobs import LogprobModel
from evr1.specs import RolloutSpec

QUESTIONS = ["What colour is the square?", "Which way does it move?", "How many dots?"]


@pytest.fixture(scope="module")
def prompts(processor, fam):
    return video_prompts(processor, fam, QUESTIONS)


def _teacher_forced(engine: HFEngine, prompts, results, temperature: float = 1.0) -> list[torch.Tensor]:
    """The learner's log-probs of the rollouts: its grouped pass (each prompt once, its responses on its cache)."""
    scorer = LogprobModel(engine.model, micro_batch_tokens=16_384, temperature=temperature, pad_id=engine.pad_id)
    return scorer.compute_logprobs(
        [Sample(prompts[r.prompt_index], r.token_ids, torch.zeros(len(r)), group_id=r.prompt_index) for r in results]
    )


def test_registered_as_hf_and_built_from_specs(spec) -> None:
    assert ENGINES.get("hf") is HFEngine
    engine = HFEngine.from_spec(spec, RolloutSpec(max_prompt_tokens=64))
    assert isinstance(engine, RolloutEngine) and engine.max_prompt_tokens == 64 and engine.version == 0


def test_n_responses_per_prompt_in_prompt_major_order(engine, prompts) -> None:
    results = engine.generate(prompts, SamplingParams(n=4, max_tokens=6, seed=0))
    assert [(r.prompt_index, r.sample_index) for r in results] == [(i, j) for i in range(3) for j in range(4)]
    for r in results:
        assert r.token_ids.dtype == torch.long and r.logprobs.dtype == torch.float32
        assert len(r.token_ids) == len(r.logprobs) <= 6
        assert r.finish_reason in ("stop", "length")
        assert (r.logprobs <= 0).all()


def test_samples_differ_within_a_group(spec, processor, prompts) -> None:
    flat = HFEngine(load_model(spec), processor)  # the random init: a near-uniform policy
    results = flat.generate(prompts[:1], SamplingParams(n=4, max_tokens=8, seed=0))
    assert len({tuple(r.token_ids.tolist()) for r in results}) == 4


def test_fixed_seed_is_reproducible(engine, prompts) -> None:
    params = SamplingParams(n=3, max_tokens=8, temperature=1.3, seed=123)
    first, again = engine.generate(prompts, params), engine.generate(prompts, params)
    for a, b in zip(first, again):
        assert torch.equal(a.token_ids, b.token_ids) and torch.equal(a.logprobs, b.logprobs)
    other = engine.generate(prompts, SamplingParams(n=3, max_tokens=8, temperature=1.3, seed=124))
    assert any(not torch.equal(a.token_ids, b.token_ids) for a, b in zip(first, other))


def test_global_seed_governs_unseeded_sampling(engine, prompts) -> None:
    params = SamplingParams(n=2, max_tokens=8, temperature=1.3)
    torch.manual_seed(5)
    first = engine.generate(prompts, params)
    torch.manual_seed(5)
    again = engine.generate(prompts, params)
    assert all(torch.equal(a.token_ids, b.token_ids) for a, b in zip(first, again))


@pytest.mark.parametrize(
    ("params", "temperature"),
    [
        (SamplingParams(n=3, max_tokens=8, seed=1), 1.0),
        (SamplingParams(n=2, max_tokens=8, seed=2, temperature=0.5), 0.5),
        (SamplingParams(n=2, max_tokens=8, seed=2, temperature=0.7, top_k=20, top_p=0.9), 0.7),
        (SamplingParams(greedy=True, max_tokens=8), 1.0),
        (SamplingParams(greedy=True, temperature=0.7, max_tokens=8), 1.0),  # greedy draws from no distribution
        (SamplingParams(temperature=0.0, max_tokens=8), 1.0),
    ],
    ids=["t1", "t0.5", "t0.7-topk-topp", "greedy", "greedy-t0.7", "t0"],
)
def test_logprobs_equal_teacher_forced_tempered_policy(engine, prompts, params, temperature) -> None:
    """Engine log-probs are log softmax(logits / T) over the whole vocabulary (top-k/top-p do not renormalise)."""
    results = engine.generate(prompts, params)
    for result, expected in zip(results, _teacher_forced(engine, prompts, results, temperature)):
        assert torch.allclose(result.logprobs, expected, atol=1e-4), (result.logprobs, expected)
    if temperature != 1.0:  # the peaked policy makes the temperature visible
        raw = _teacher_forced(engine, prompts, results)
        assert max(float((r.logprobs - e).abs().max()) for r, e in zip(results, raw)) > 0.1


def test_greedy_takes_the_argmax(engine, prompts) -> None:
    results = engine.generate(prompts, SamplingParams(greedy=True, n=5, max_tokens=8))
    assert len(results) == len(prompts)  # greedy: one response per prompt
    logits, targets, mask = response_logits(engine.model, prompts, [r.token_ids for r in results], engine.pad_id)
    assert torch.equal(logits.argmax(-1)[mask], targets[mask])
    top1 = engine.generate(prompts, SamplingParams(top_k=1, max_tokens=8, seed=9))
    assert all(torch.equal(a.token_ids, b.token_ids) for a, b in zip(results, top1))


def test_left_padded_batch_equals_one_prompt_at_a_time(engine, processor, fam, prompts) -> None:
    image = process_image(processor, random_frames(fam, 11, frames=1, cells=(3, 2))[0])
    mixed = [*prompts, build_prompt(processor, "Just text, no media at all here?"),
             build_prompt(processor, "An image", [image])]
    assert len({len(p) for p in mixed}) > 1  # the batch really is padded
    params = SamplingParams(greedy=True, max_tokens=10)
    batched = engine.generate(mixed, params)
    for prompt, together in zip(mixed, batched):
        alone = engine.generate([prompt], params)[0]
        assert torch.equal(alone.token_ids, together.token_ids)
        assert torch.allclose(alone.logprobs, together.logprobs, atol=1e-4)


def test_batch_chunks_give_the_same_greedy_results(engine, prompts) -> None:
    params = SamplingParams(greedy=True, max_tokens=6)
    whole = engine.generate(prompts, params)
    chunked = HFEngine(engine.model, engine.tokenizer, max_batch_rows=1).generate(prompts, params)
    assert all(torch.equal(a.token_ids, b.token_ids) for a, b in zip(whole, chunked))


def test_stop_tokens_end_responses(engine, prompts) -> None:
    free = engine.generate(prompts, SamplingParams(greedy=True, max_tokens=6))
    unstopped = [r for r in free if not set(r.token_ids.tolist()) & set(engine.stop_ids)]
    assert unstopped and all(r.finish_reason == "length" and len(r) == 6 for r in unstopped)
    stop = int(free[0].token_ids[2])
    first = free[0].token_ids.tolist().index(stop)
    stopped = engine.generate(prompts, SamplingParams(greedy=True, max_tokens=6, stop_token_ids=(stop,)))
    assert stopped[0].finish_reason == "stop"
    assert stopped[0].token_ids.tolist() == free[0].token_ids.tolist()[: first + 1]  # the stop token is kept
    for free_r, stopped_r in zip(free[1:], stopped[1:]):
        ids = free_r.token_ids.tolist()
        expected = ids[: ids.index(stop) + 1] if stop in ids else ids
        assert stopped_r.token_ids.tolist() == expected
        assert stopped_r.finish_reason == ("stop" if stop in ids else "length")


def test_stop_strings_end_responses_after_the_token_that_completes_them(engine, prompts) -> None:
    params = SamplingParams(greedy=True, max_tokens=12, stop_token_ids=(-1,))  # no stop token: only the string
    free = engine.generate(prompts, params)

    def text(ids: list[int]) -> str:
        return engine.tokenizer.decode(ids, skip_special_tokens=True)

    # a word one token writes after the first, not yet in the text before it (random weights write bytes too)
    stop = next(word for r in free for k, t in enumerate(r.token_ids.tolist()) if k > 0
                if (word := text([t])).strip().isascii() and word.strip().isalpha() and word not in text(r.token_ids.tolist()[:k]))
    stopped = engine.generate(prompts, replace(params, stop=(stop,)))
    for free_r, stopped_r in zip(free, stopped):
        ids = free_r.token_ids.tolist()
        ends = [k + 1 for k in range(len(ids)) if stop in text(ids[: k + 1])]
        assert stopped_r.token_ids.tolist() == (ids[: ends[0]] if ends else ids)
        assert stopped_r.finish_reason == ("stop" if ends else "length")
        assert stopped_r.text == (free_r.text[: free_r.text.index(stop) + len(stop)] if ends else free_r.text)
    assert any(r.finish_reason == "stop" and len(r) < 12 for r in stopped)


def test_repetition_penalty_equals_transformers_generate(engine, processor) -> None:
    """The outside reference: HF `generate` with the same penalty, greedy, end tokens and banned placeholder
    tokens, on a text-only prompt."""
    prompt = build_prompt(processor, "Say something, and say it again and again and again")
    ids, config = prompt.input_ids[None], engine.model.config
    responses = []
    for penalty in (1.0, 1.8):
        ours = engine.generate([prompt], SamplingParams(greedy=True, max_tokens=12, repetition_penalty=penalty))[0]
        theirs = engine.model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False, repetition_penalty=penalty,
            eos_token_id=list(engine.stop_ids), pad_token_id=engine.pad_id,
            bad_words_ids=[[config.image_token_id], [config.video_token_id]],
        )
        assert ours.token_ids.tolist() == theirs[0, ids.shape[1]:].tolist()
        responses.append(ours.token_ids.tolist())
    plain = responses[0]
    if any(t in ids[0].tolist() + plain[:i] for i, t in enumerate(plain)):  # the greedy response picks a seen token
        assert plain != responses[1]  # the penalty changed it (tiny Qwen3.5's never does: nothing to change)


def test_placeholder_tokens_are_never_sampled(engine, prompts) -> None:
    model = engine.model
    banned = (model.config.image_token_id, model.config.video_token_id)
    saved = model.lm_head.weight[list(banned)].clone()
    with torch.no_grad():
        model.lm_head.weight[list(banned)] = model.lm_head.weight.abs().max(0).values * 10  # make them likely
    try:
        results = engine.generate(prompts, SamplingParams(n=4, max_tokens=8, seed=0))
    finally:
        with torch.no_grad():
            model.lm_head.weight[list(banned)] = saved
    assert not any(set(r.token_ids.tolist()) & set(banned) for r in results)


def test_prompt_over_budget_is_refused(engine, prompts) -> None:
    short = HFEngine(engine.model, engine.tokenizer, max_prompt_tokens=len(prompts[0]) - 1)
    with pytest.raises(Evr1Error, match="prompt 0 has"):
        short.generate(prompts, SamplingParams(max_tokens=2))


def _train_to_answer(model, prompt, target: list[int], steps: int = 15) -> None:
    """Supervised steps on one (prompt, response) pair; the vision tower stays fixed (speed)."""
    model.model.visual.requires_grad_(False)
    model.train()
    optim = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=2e-2)
    for _ in range(steps):
        logprobs, _ = response_logprobs(model, [prompt], [target], pad_id=0)
        optim.zero_grad()
        (-logprobs.sum()).backward()
        optim.step()
    model.eval()


def test_weight_sync_makes_the_engine_sample_the_new_policy(spec, processor, prompts) -> None:
    """A learner copy learns to answer `<answer>B</answer><|im_end|>`; after a sync the engine does too."""
    engine, learner = HFEngine(load_model(spec), processor), load_model(spec)
    target = processor.tokenizer("<answer>B</answer><|im_end|>")["input_ids"]
    greedy = SamplingParams(greedy=True, max_tokens=len(target) + 3)
    before = engine.generate(prompts[:1], greedy)[0]
    assert before.token_ids.tolist() != target

    _train_to_answer(learner, prompts[0], target)
    assert torch.equal(engine.generate(prompts[:1], greedy)[0].token_ids, before.token_ids)  # nothing shared
    engine.load_weights(learner.state_dict())
    after = engine.generate(prompts[:1], greedy)[0]
    assert engine.version == 1
    assert after.token_ids.tolist() == target and after.finish_reason == "stop"
    assert after.text == "<answer>B</answer>"
    expected, _ = response_logprobs(learner, prompts[:1], [after.token_ids], engine.pad_id)
    assert torch.allclose(after.logprobs, expected[0], atol=1e-4)

    engine.sync_from(load_model(spec))  # back to the initial weights
    assert torch.equal(engine.generate(prompts[:1], greedy)[0].token_ids, before.token_ids)
    assert engine.version == 2


def test_load_weights_accepts_wrapped_names_and_converts_dtype(spec, processor) -> None:
    engine, learner = HFEngine(load_model(spec, dtype=torch.bfloat16), processor), load_model(spec)
    with torch.no_grad():
        learner.lm_head.weight.add_(1.0)
    engine.load_weights(("module." + name, tensor) for name, tensor in learner.state_dict().items())
    assert engine.model.lm_head.weight.dtype == torch.bfloat16
    assert torch.equal(engine.model.lm_head.weight, learner.lm_head.weight.to(torch.bfloat16))


def test_load_weights_rejects_a_mismatched_state_dict(spec, processor) -> None:
    engine = HFEngine(load_model(spec), processor)
    state = dict(engine.model.state_dict())
    state.pop("lm_head.weight")
    with pytest.raises(Evr1Error, match="lm_head.weight"):
        engine.load_weights(state)
    state["lm_head.weight"] = torch.zeros(3, 3)
    with pytest.raises(Evr1Error, match="size mismatch"):
        engine.load_weights(state)
    assert engine.version == 0
