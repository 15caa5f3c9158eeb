"""Log-probs and entropy through the LM head in chunks against the whole logits: same numbers, less memory.

Float32 tiny models of every family. Acceptance: log-probs and entropy within 1e-5 of the
unchunked path, every parameter's gradient within 1e-4 relative (its norm), per row and through
the grouped forward (with HF gradient checkpointing too). Memory is counted by `PeakMemory`
(bytes of tensor storage alive at once): chunked, the peak stays under one `[tokens, vocab]`
float32 tensor; unchunked, it is at least that.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evr1.models import build_prompt, load_model
from evr1.models.forward import collate, gather_logprobs, response_hidden, response_logits, rope_positions
from evr1.models.grouped import shared_prefix_hidden
from evr1.models.logprobs import token_scores
from evr1.models.peak_memory import PeakMemory
from evr1.models.testing import process_video, random_frames, tiny_spec

TEMPERATURE = 0.7


def _rows(fam: str, processor) -> tuple[list, list[int], list[torch.Tensor]]:
    video = process_video(processor, random_frames(fam, 1, frames=4, cells=(2, 2)))
    prompts = [build_prompt(processor, "what happens", [video]), build_prompt(processor, "no media here", [])]
    g = torch.Generator().manual_seed(0)
    owner = [0, 0, 1]
    responses = [torch.randint(20, 300, (n,), generator=g) for n in (6, 2, 5)]
    return prompts, owner, responses


def _scores_and_grads(model, hidden, targets, mask, chunk: int) -> tuple[torch.Tensor, torch.Tensor, dict]:
    model.zero_grad(set_to_none=True)
    lp, ent = token_scores(
        model.lm_head, hidden, targets, mask, temperature=TEMPERATURE, chunk_tokens=chunk, entropy="grad"
    )
    weights = torch.randn(lp.shape, generator=torch.Generator().manual_seed(1))
    ((lp * weights).sum() + (ent * weights.flip(0)).sum()).backward()
    return lp.detach(), ent.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _close(got: tuple, want: tuple) -> None:
    assert (got[0] - want[0]).abs().max() <= 1e-5
    assert (got[1] - want[1]).abs().max() <= 1e-5
    assert got[2].keys() == want[2].keys() and want[2]
    for name, grad in want[2].items():
        assert (got[2][name] - grad).norm() <= 1e-4 * grad.norm() + 1e-12, name


def test_head_off_gives_the_states_the_head_reads(fam: str, model_cache: Path, processor) -> None:
    model = load_model(tiny_spec(fam, model_cache)).eval()
    prompts, owner, responses = _rows(fam, processor)
    rows = [prompts[o] for o in owner]
    with torch.no_grad():
        batch = collate(rows, 0, model.config, responses)
        positions, _ = rope_positions(model, batch)
        width = batch.input_ids.shape[1] - batch.prompt_length
        own = model(**batch.model_inputs(), position_ids=positions, logits_to_keep=width + 1).logits[:, :-1]
        logits, _, mask = response_logits(model, rows, responses, 0)
    assert isinstance(model.lm_head, torch.nn.Linear)  # put back after the forward
    assert (logits - own)[mask].abs().max() <= 1e-6


def test_chunked_scores_match_the_whole_logits(fam: str, model_cache: Path, processor) -> None:
    model = load_model(tiny_spec(fam, model_cache)).train()
    prompts, owner, responses = _rows(fam, processor)
    rows = [prompts[o] for o in owner]

    def run(chunk: int) -> tuple:
        return _scores_and_grads(model, *response_hidden(model, rows, responses, 0), chunk)

    want = run(0)
    logits, targets, mask = response_logits(model, rows, responses, 0, temperature=TEMPERATURE)
    today = gather_logprobs(logits, targets).masked_fill(~mask, 0.0)
    assert (want[0] - today).abs().max() <= 1e-6  # the unchunked path is today's log-probs
    for chunk in (1, 3, 64):
        _close(run(chunk), want)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_chunked_scores_through_the_grouped_forward(model_cache: Path, checkpointing: bool) -> None:
    from evr1.models import load_processor

    spec = tiny_spec("qwen3-vl", model_cache, gradient_checkpointing=checkpointing)
    model, processor = load_model(spec).train(), load_processor(spec)
    assert model.is_gradient_checkpointing == checkpointing
    prompts, owner, responses = _rows("qwen3-vl", processor)
    want = _scores_and_grads(model, *response_hidden(model, [prompts[o] for o in owner], responses, 0), 0)
    got = _scores_and_grads(model, *shared_prefix_hidden(model, prompts, owner, responses, 0), 4)
    _close(got, want)
    assert any(".visual." in n for n in got[2])


def test_metric_entropy_has_no_gradient_and_masked_positions_are_zero() -> None:
    head = torch.nn.Linear(8, 11)
    hidden = torch.randn(2, 3, 8, requires_grad=True)
    targets = torch.tensor([[1, 2, 0], [3, 0, 0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    lp, ent = token_scores(head, hidden, targets, mask, chunk_tokens=2, entropy="metric")
    assert lp.requires_grad and not ent.requires_grad
    assert lp[~mask].eq(0).all() and ent[~mask].eq(0).all()
    logits = head(hidden.detach())
    probs = logits.softmax(-1)
    assert torch.allclose(ent[mask], -(probs * probs.log()).sum(-1)[mask], atol=1e-6)  # H = -sum p log p
    assert torch.allclose(lp[mask], probs.gather(-1, targets[..., None])[..., 0].log()[mask], atol=1e-6)
    none, no_entropy = token_scores(head, hidden, targets, mask, chunk_tokens=5)
    assert no_entropy is None and torch.allclose(none, lp)
    with pytest.raises(ValueError, match="chunk_tokens must be >= 0"):
        token_scores(head, hidden, targets, mask, chunk_tokens=-1)


def test_chunked_peak_memory_stays_under_one_full_logits_tensor() -> None:
    tokens, width, vocab, chunk = 512, 32, 4096, 32
    torch.manual_seed(0)
    head = torch.nn.Linear(width, vocab, bias=False)
    full = tokens * vocab * 4  # one float32 [tokens, vocab] tensor: 8 MiB
    peaks = {}
    for c in (0, chunk):
        hidden = torch.randn(1, tokens, width, requires_grad=True)
        targets = torch.randint(0, vocab, (1, tokens))
        mask = torch.ones(1, tokens, dtype=torch.bool)
        with PeakMemory() as probe:
            lp, ent = token_scores(head, hidden, targets, mask, chunk_tokens=c, entropy="grad")
            (lp.sum() + ent.sum()).backward()
            del lp, ent
        peaks[c] = probe.peak
        head.weight.grad = None
    print(f"\npeak bytes: unchunked {peaks[0]:,} chunked({chunk}) {peaks[chunk]:,}; one full logits {full:,}")
    assert peaks[0] >= 2 * full  # the logits and their gradient at once
    # a chunk's backward holds ~6 [chunk, vocab] tensors (logits, their gradients; 0.5 MiB each) and the head's gradient
    assert peaks[chunk] < full / 2


def test_the_liger_kernel_is_refused_where_it_cannot_run(model_cache: Path) -> None:
    from evr1.errors import ConfigError
    from evr1.runner.learner.logprobs import LogprobModel

    model = load_model(tiny_spec("qwen2-vl", model_cache))
    with pytest.raises(ConfigError, match="logprob_kernel='liger' (needs liger-kernel|runs on CUDA only)"):
        LogprobModel(model, micro_batch_tokens=100, kernel="liger")
    with pytest.raises(ValueError, match="kernel must be 'torch' or 'liger'"):
        token_scores(model.lm_head, torch.zeros(1, 1, 64), torch.zeros(1, 1, dtype=torch.long),
                     torch.ones(1, 1, dtype=torch.bool), kernel="triton")


@pytest.mark.gpu
def test_the_liger_kernel_gives_the_torch_log_probs_and_gradients_on_cuda(model_cache: Path, processor) -> None:
    pytest.importorskip("liger_kernel")
    model = load_model(tiny_spec("qwen2.5-vl", model_cache), device="cuda").train()
    prompts, owner, responses = _rows("qwen2.5-vl", processor)
    rows = [prompts[o] for o in owner]
    results = []
    for kernel in ("torch", "liger"):
        model.zero_grad(set_to_none=True)
        hidden, targets, mask = response_hidden(model, rows, responses, 0)
        lp, ent = token_scores(model.lm_head, hidden, targets, mask, temperature=TEMPERATURE, chunk_tokens=4,
                               entropy="metric", kernel=kernel)
        lp.sum().backward()
        results.append((lp.detach(), ent, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (want_lp, want_ent, want), (got_lp, got_ent, got) = results
    assert (got_lp - want_lp).abs().max() <= 1e-4 and torch.equal(got_ent, want_ent)
    for name, grad in want.items():
        assert (got[name] - grad).norm() <= 1e-3 * grad.norm() + 1e-12, name
