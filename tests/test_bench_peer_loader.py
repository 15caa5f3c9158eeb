"""The step benchmark compares equal work: its model of the peer's cache (`benchmarks/peer_loader.py`) gives
the model the same inputs as evr1's tensor cache and live path, bit for bit, in every reader (rollout and
learner prompts, and the dataset pass's prompt ids and pixels)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from evr1.data.cache_build import build_cache
from evr1.data.loader import MediaLoader
from evr1.data.prompting import RecordPrompter, training_question_text
from evr1.data.records import MediaRef, Record
from evr1.data.testclips import write_clip
from evr1.models import load_processor
from evr1.models.prompts import chat_messages
from evr1.models.testing import tiny_spec
from evr1.specs import CacheSpec, ImageSpec, PromptSpec, VideoSpec

_spec = importlib.util.spec_from_file_location("peer_loader", Path(__file__).parents[1] / "benchmarks" / "peer_loader.py")
peer_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer_loader)

VIDEO = VideoSpec(fps=2.0, max_frames=8, min_pixels=28 * 28, max_pixels=56 * 112)


# 6 frames sampled; Qwen2.5-VL: 56x112 px in 14 px patches; Qwen3-VL: 32x96 px in 16 px patches (32 px aligned)
@pytest.mark.parametrize(("family", "grid"), [("qwen2.5-vl", (3, 4, 8)), ("qwen3-vl", (3, 2, 6))])
def test_peer_loader_gives_the_model_what_evr1_gives_it(family: str, grid: tuple, model_cache: Path, tmp_path: Path) -> None:
    processor = load_processor(tiny_spec(family, model_cache))
    write_clip(tmp_path / "clip.mp4", 112, 64, 10, 30, seed=3)  # 3 s at 10 fps: 6 frames sampled at 2 fps
    record = Record(id="r0", problem="Which colour?", problem_type="multiple_choice", answer="A",
                    options=["red", "blue"], media=[MediaRef(kind="video", path="clip.mp4")])
    cache = CacheSpec(path=str(tmp_path / "cache.lmdb"), mode="only")
    build_cache([record], video=VIDEO, image=ImageSpec(), cache=cache, processor=processor, data_root=tmp_path,
                workers=0, progress=False)
    assert peer_loader.build_peer_cache([record], VIDEO, processor, tmp_path, tmp_path / "peer") == 1
    assert peer_loader.build_peer_cache([record], VIDEO, processor, tmp_path, tmp_path / "peer") == 0  # kept

    loaders = {mode: MediaLoader(VIDEO, ImageSpec(), cache.model_copy(update={"mode": mode}), processor, tmp_path)
               for mode in ("only", "bypass")}
    loaders["peer"] = peer_loader.PeerLoader(VIDEO, processor, tmp_path / "peer", loaders["only"].clock)
    media = {name: loader.load_media(record.media[0], record.id) for name, loader in loaders.items()}
    assert media["only"].cache_hit and not media["bypass"].cache_hit
    assert tuple(media["only"].grid_thw[0].tolist()) == grid
    for name in ("bypass", "peer"):
        assert torch.equal(media[name].pixel_values, media["only"].pixel_values), name
        assert torch.equal(media[name].grid_thw, media["only"].grid_thw), name
        assert media[name].info == media["only"].info and media[name].video_metadata() == media["only"].video_metadata()

    prompts = {name: RecordPrompter(processor, loader, PromptSpec())(record) for name, loader in loaders.items()}
    for name in ("bypass", "peer"):
        assert torch.equal(prompts[name].input_ids, prompts["only"].input_ids), name
        assert prompts[name].mm.keys() == prompts["only"].mm.keys(), name
        assert all(torch.equal(prompts[name].mm[k], v) for k, v in prompts["only"].mm.items()), name

    spec = PromptSpec()
    messages = chat_messages(training_question_text(record, spec), ["video"], spec.system)
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    read = peer_loader.PeerDataset(VIDEO, processor, tmp_path / "peer").read(record, text)
    assert torch.equal(read["pixel_values_videos"], media["only"].pixel_values)
    if family != "qwen3-vl":  # evr1 writes Qwen3-VL's per-patch timestamps itself; the benchmark runs Qwen2.5-VL
        assert torch.equal(read["input_ids"][0], prompts["only"].input_ids)


def test_peer_cache_holds_videos_only(model_cache: Path, tmp_path: Path) -> None:
    processor = load_processor(tiny_spec("qwen2.5-vl", model_cache))
    loader = peer_loader.PeerLoader(VIDEO, processor, tmp_path)
    with pytest.raises(ValueError, match="videos only, not image 'a.png'"):
        loader.load_media(MediaRef(kind="image", path="a.png"))
