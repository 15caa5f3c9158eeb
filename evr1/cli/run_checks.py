"""What a dry run of `evr1 run` warns about beyond the config itself.

`long_offline_answers` tells when curated answers are longer than `rollout.max_response_tokens`: the
mixer cuts them, so the policy learns answers without their end.
"""

from __future__ import annotations

from pathlib import Path


def long_offline_answers(experiment) -> str | None:
    """A warning when curated offline answers (the records' own, or `mixer.file`'s) are longer than
    `rollout.max_response_tokens` with their stop token: how many, and the first. None when all fit, when the
    experiment mixes none, or when the data or the model's tokenizer is not at hand (nothing is downloaded
    or generated)."""
    from evr1.models.loading import cached_hub_models

    mixer, data = experiment.mixer, experiment.data
    if mixer.name is None or not data.train or not all(Path(f).exists() for f in data.train):
        return None
    if mixer.file is not None and not Path(mixer.file).is_file():
        return None
    name = experiment.model.name
    if "/" in name and not Path(name).expanduser().is_dir() and name not in cached_hub_models():
        return None
    from evr1.data.mixers import offline_responses, over_budget
    from evr1.data.records import read_records
    from evr1.models import load_processor

    responses = offline_responses(mixer, read_records(list(data.train), data.columns))
    limit = experiment.rollout.max_response_tokens
    long = over_budget(responses, load_processor(experiment.model).tokenizer, limit)
    if not long:
        return None
    total = sum(map(len, responses.values()))
    first, length = long[0]
    return (f"{len(long)} of {total} curated offline answers are longer than rollout.max_response_tokens={limit} (with"
            f" the stop token) and are cut to it, e.g. {first.origin}: {length} tokens")
