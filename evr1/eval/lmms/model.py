"""The `evr1` model for lmms-eval: answers with our engines, media through our pipeline.

    lmms-eval --model evr1 --model_args model=runs/exp/export,fps=2,max_frames=64 --tasks evr1_videomme ...
    simple_evaluate(model=Evr1Chat(model="tiny-qwen2.5-vl"), tasks=[...], task_manager=...)

`model` is a registered model, an HF checkpoint directory or an experiment (whose `eval` spec
gives the frame settings, pixel budgets, cache and prompt length). Videos and images are prepared
by evr1's media pipeline (the same `VideoSpec`, processor and chat template as training, read
from the tensor cache when `cache=DIR`), not by lmms-eval's frames-as-images path. Media for
upcoming requests are prepared in a thread pool while the engine generates.

The settings (model, engine, frames, pixel budgets, decoder) are the `model` of an in-process
run's results and are written with every row of the response log. With `responses=FILE`, each
response is appended to FILE (JSONL) as soon as it is produced and a rerun answers from it: resume by task, split and document id (a request whose messages or
settings changed is generated again). A request whose media or prompt fails is answered with ""
(scored wrong, never dropped), logged and listed in `failures`.

Multi-round tasks (`generate_until_multi_round`) run round by round, each round's messages made by
the task from the answers so far. `ScriptedChat` answers from a table `{evr1_id: response}`: it
tests tasks and scoring exactly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms
from lmms_eval.protocol import ChatMessages
from pydantic import ValidationError

from evr1.errors import ConfigError, Evr1Error

logger = logging.getLogger("evr1.eval.lmms")

@dataclass
class Request:
    """One lmms-eval request: where it comes from, its chat, and how to sample."""

    key: str  # task/split/doc_id
    doc: Mapping[str, Any]
    chat: ChatMessages
    gen_kwargs: dict[str, Any]
    prompt: Any = None  # evr1.models.Prompt, once prepared
    error: str | None = None

    @property
    def digest(self) -> str:
        """What the answer depends on besides the model settings: messages (images by content) and sampling."""
        messages = [[[item.type, _content_id(getattr(item, "url", None) or getattr(item, "text", "")),
                      getattr(item, "start_time", None), getattr(item, "end_time", None)] for item in m.content]
                    for m in self.chat.messages]
        roles = [m.role for m in self.chat.messages]
        payload = json.dumps([roles, messages, self.gen_kwargs], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _content_id(value: Any) -> Any:
    """A JSON-able identity of message content: text and paths as they are, an in-memory image by its pixels."""
    if hasattr(value, "tobytes") and hasattr(value, "mode"):
        return "image:" + hashlib.sha256(value.tobytes() + str((value.mode, value.size)).encode()).hexdigest()[:20]
    return value


def read_requests(model: lmms, requests: Sequence[Instance]) -> list[Request]:
    """Documents and chat messages of chat-style `generate_until` requests."""
    out = []
    for instance in requests:
        _ctx, doc_to_messages, gen_kwargs, doc_id, task, split = instance.args
        doc = model.task_dict[task][split][doc_id]
        chat = ChatMessages(messages=doc_to_messages(doc))
        out.append(Request(f"{task}/{split}/{doc_id}", doc, chat, dict(gen_kwargs or {})))
    return out


def cut_at_stops(text: str, until: Any) -> str:
    """`text` up to the first of the task's stop strings (`until`), if any."""
    stops = [until] if isinstance(until, str) else list(until or [])
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=len(text))
    return text[:cut]


class ScriptedChat(lmms):
    """Answers each request from `responses[doc["evr1_id"]]` (`default` when absent)."""

    is_simple = False

    def __init__(self, responses: Mapping[str, str] | str | None = None, default: str = "", **_: Any) -> None:
        super().__init__()
        if isinstance(responses, str):  # a JSONL file of {"id", "response"} from the command line
            rows = [json.loads(line) for line in Path(responses).read_text(encoding="utf-8").splitlines() if line.strip()]
            responses = {str(r["id"]): str(r.get("response") or "") for r in rows}
        self.responses = dict(responses or {})
        self.default = default
        self.asked: list[str] = []

    def generate_until(self, requests: list[Instance]) -> list[str]:
        answers = []
        for request in read_requests(self, requests):
            rid = str(request.doc.get("evr1_id", request.key))
            self.asked.append(rid)
            answers.append(cut_at_stops(self.responses.get(rid, self.default), request.gen_kwargs.get("until")))
        return answers

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise Evr1Error("the evr1 models answer generation tasks only (no loglikelihood tasks)")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        raise Evr1Error("the evr1 models do not run multi-round tasks")


@dataclass
class ResponseLog:
    """Responses by request key, appended to a JSONL file as they come (resume)."""

    path: Path | None
    settings: Mapping[str, Any]  # written with every row; rows of other settings are not reused
    done: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from evr1.eval.samples import read_log

        settings = json.loads(json.dumps(self.settings))
        for _, row in read_log(self.path) if self.path is not None else []:
            if row.get("settings") == settings and not row.get("error"):  # a failed request is tried again
                self.done.setdefault(f"{row['key']}#{row['digest']}", row["response"])

    def get(self, request: Request) -> str | None:
        return self.done.get(f"{request.key}#{request.digest}")

    def add(self, request: Request, response: str) -> None:
        self.done[f"{request.key}#{request.digest}"] = response
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row = {"key": request.key, "digest": request.digest, "settings": self.settings, "response": response,
               "error": request.error}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


class Evr1Chat(lmms):
    """An evr1 model (engine + media pipeline) as an lmms-eval chat model."""

    is_simple = False

    def __init__(
        self,
        model: str = "tiny-qwen2.5-vl",
        engine: str = "hf",
        device: str = "cpu",
        batch_size: int | str = 1,
        fps: float | None = None,
        max_frames: int | None = None,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        image_max_pixels: int | None = None,
        cache: str | None = None,
        max_new_tokens: int | None = None,
        max_prompt_tokens: int = 32768,
        media_workers: int = 2,
        prefetch: int = 8,
        responses: str | None = None,
        **unused: Any,
    ) -> None:
        super().__init__()
        from evr1.data.loader import MediaLoader
        from evr1.eval.api import resolve_target
        from evr1.models import load_processor
        from evr1.registry import ENGINES
        from evr1.specs import CacheSpec, EvalSpec, ImageSpec, RolloutSpec, VideoSpec

        if unused:
            logger.warning("evr1 model: ignoring unknown model_args %s", sorted(unused))
        model_spec, spec = resolve_target(str(model))
        spec = spec or EvalSpec()
        video = {"fps": fps, "max_frames": max_frames, "max_pixels": max_pixels, "min_pixels": min_pixels}
        try:
            self.video = VideoSpec.model_validate({**spec.video.model_dump(), **_given(video)})
            self.image = ImageSpec.model_validate({**spec.image.model_dump(), **_given({"max_pixels": image_max_pixels})})
            self.cache_spec = CacheSpec.model_validate({**spec.cache.model_dump(), **_given({"path": cache})})
        except ValidationError as exc:
            raise ConfigError(f"evr1 model_args: {exc.errors()[0]['msg']} (in {exc.title})") from None
        self.max_new_tokens = int(max_new_tokens or spec.max_response_tokens)
        self.batch_size = int(batch_size)
        self.media_workers, self.prefetch = int(media_workers), int(prefetch)
        rollout = RolloutSpec(engine=engine, n=1, max_response_tokens=self.max_new_tokens, max_prompt_tokens=int(max_prompt_tokens))
        self.engine = ENGINES.get(engine).from_spec(model_spec, rollout, device=device)
        self.max_prompt_tokens = int(max_prompt_tokens)
        self.processor = load_processor(model_spec)
        self.loader = MediaLoader(self.video, self.image, self.cache_spec, self.processor, data_root="/")
        self.settings = {
            "model": model_spec.model_dump(mode="json", exclude={"cache_dir"}), "engine": engine,
            "video": self.video.model_dump(mode="json"), "image": self.image.model_dump(mode="json"),
            "cache_storage": self.cache_spec.storage, "max_new_tokens": self.max_new_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
        }
        self.log = ResponseLog(Path(responses) if responses else None, self.settings)
        # lmms-eval records `config._name_or_path` as the model of an in-process run's results
        self.config = SimpleNamespace(_name_or_path=f"{model_spec.name} (evr1 {json.dumps(self.settings)})")
        self.failures: list[tuple[str, str]] = []
        self._images = Path(tempfile.mkdtemp(prefix="evr1-lmms-images-"))
        logger.info("evr1 model settings: %s", json.dumps(self.settings))

    # -- lmms-eval API ----------------------------------------------------------------------

    def generate_until(self, requests: list[Instance]) -> list[str]:
        from tqdm import tqdm

        from evr1.eval.samples import batched, prefetched

        todo = read_requests(self, requests)
        answers: dict[int, str] = {}
        fresh = []
        for i, request in enumerate(todo):
            logged = self.log.get(request)
            if logged is None:
                fresh.append(i)
            else:
                answers[i] = logged
        bar = tqdm(total=len(todo), initial=len(answers), desc="evr1 generating", unit="sample")
        prepared = prefetched(fresh, lambda i: (i, self._prepare(todo[i])), self.media_workers, self.prefetch)
        for batch in batched(prepared, self.batch_size):
            for i, text in self._answer([todo[i] for i, _ in batch], [i for i, _ in batch]):
                answers[i] = text
                self.log.add(todo[i], text)
                todo[i].prompt = None  # its pixels go back to the loader's pool
            bar.update(len(batch))
        bar.close()
        if self.failures:
            logger.warning("evr1 model: %d requests failed and were answered with '' (scored wrong): %s",
                           len(self.failures), "; ".join(f"{k}: {e}" for k, e in self.failures[:5]))
        return [answers[i] for i in range(len(todo))]

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise Evr1Error("the evr1 model answers generation tasks only (no loglikelihood tasks)")

    def generate_until_multi_round(self, requests: list[Instance]) -> list[list[str]]:
        """Each request's rounds in turn: the task gives the messages of round i (with the outputs so
        far) until it says stop; the answers of all rounds, per request. Rounds are logged like requests."""
        from tqdm import tqdm

        answers = []
        for instance in tqdm(requests, desc="evr1 multi-round", unit="sample"):
            _ctx, doc_to_messages, gen_kwargs, doc_id, task, split = instance.args
            doc = self.task_dict[task][split][doc_id]
            outputs: list[str] = []
            info, messages = None, doc_to_messages(doc)
            while messages is not None:
                request = Request(f"{task}/{split}/{doc_id}#{len(outputs)}", doc, ChatMessages(messages=messages),
                                  dict(gen_kwargs or {}))
                text = self.log.get(request)
                if text is None:
                    [(_, text)] = self._answer([self._prepare(request)], [0])
                    self.log.add(request, text)
                outputs.append(text)
                payload = doc_to_messages(doc, round_idx=len(outputs), previous_output=list(outputs), previous_round_info=info)
                messages, terminal, _, info = payload if isinstance(payload, tuple) and len(payload) == 4 else (None, True, None, None)
                messages = None if terminal else messages
            answers.append(outputs)
        return answers

    # -- internals --------------------------------------------------------------------------

    def _prepare(self, request: Request) -> Request:
        """Load the request's media (cache or live) and build its prompt; a failure is kept, not raised."""
        from evr1.eval.responders import media_prompt, too_long

        try:
            messages, refs = self._chat(request.chat)
            request.prompt, _ = media_prompt(self.processor, self.loader, messages, refs, request.key)
            request.error = too_long(request.prompt, self.max_prompt_tokens)
        except Exception as exc:  # noqa: BLE001 - a bad video or prompt fails this request; the run goes on
            request.error = f"{type(exc).__name__}: {exc}"
        return request

    def _chat(self, chat: ChatMessages) -> tuple[list[dict[str, Any]], list[Any]]:
        """HF chat messages with media placeholders, and the media they stand for, in order."""
        from evr1.data.records import MediaRef

        messages, refs = [], []
        for message in chat.messages:
            content: list[dict[str, Any]] = []
            for item in message.content:
                if item.type == "text":
                    content.append({"type": "text", "text": item.text})
                elif item.type == "video":
                    path, start, end = _video_source(item.url)
                    start = item.start_time if item.start_time is not None else start
                    end = item.end_time if item.end_time is not None else end
                    refs.append(MediaRef(kind="video", path=path, start=start, end=end))
                    content.append({"type": "video"})
                elif item.type == "image":
                    refs.append(MediaRef(kind="image", path=self._image_path(item.url)))
                    content.append({"type": "image"})
                else:
                    raise Evr1Error(f"the evr1 model takes text, images and videos, not {item.type}")
            messages.append({"role": message.role, "content": content})
        return messages, refs

    def _image_path(self, url: Any) -> str:
        """A path for an image given as a path or an in-memory PIL image (saved losslessly once)."""
        if isinstance(url, (str, Path)):
            return str(Path(url).resolve())
        if hasattr(url, "save") and hasattr(url, "tobytes"):
            path = self._images / f"{_content_id(url).removeprefix('image:')}.png"
            if not path.exists():  # written whole, then renamed: a prefetch thread never reads half a file
                part = path.with_suffix(f".{threading.get_ident()}.part")
                url.save(part, format="PNG")
                os.replace(part, path)
            return str(path)
        raise Evr1Error(f"unsupported image {type(url).__name__}: give a path or a PIL image")

    def _answer(self, batch: list[Request], indices: list[int]) -> list[tuple[int, str]]:
        """Generate for the prepared requests of `batch` (grouped by sampling settings); failed ones get ""."""
        out: list[tuple[int, str]] = []
        groups: dict[Any, list[tuple[int, Request]]] = {}
        for i, request in zip(indices, batch):
            if request.error is not None:
                self.failures.append((request.key, request.error))
                logger.warning("evr1 model: %s failed: %s", request.key, request.error)
                out.append((i, ""))
            else:
                groups.setdefault(self._params(request.gen_kwargs), []).append((i, request))
        for params, members in groups.items():
            results = sorted(self.engine.generate([r.prompt for _, r in members], params), key=lambda r: r.prompt_index)
            for (i, request), result in zip(members, results):
                out.append((i, cut_at_stops(result.text, request.gen_kwargs.get("until"))))
        return out

    def _params(self, gen_kwargs: Mapping[str, Any]) -> Any:
        """The engine's sampling parameters for a task's generation kwargs (greedy unless it samples)."""
        from evr1.engines.base import SamplingParams

        temperature = float(gen_kwargs.get("temperature") or 0.0)
        sample = bool(gen_kwargs.get("do_sample", temperature > 0)) and temperature > 0
        max_tokens = int(gen_kwargs.get("max_new_tokens") or self.max_new_tokens)
        if not sample:
            return SamplingParams(greedy=True, temperature=0.0, max_tokens=max_tokens, seed=0)
        top_p = gen_kwargs.get("top_p")
        return SamplingParams(temperature=temperature, top_p=float(top_p) if top_p else 1.0, max_tokens=max_tokens, seed=0)


def _given(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _video_source(url: Any) -> tuple[str, float | None, float | None]:
    """(absolute path, clip start, clip end) of a video given as a path or `{path|url|video, video_start, video_end}`."""
    if isinstance(url, Mapping):
        path = url.get("path") or url.get("url") or url.get("video")
        if not isinstance(path, (str, Path)):
            raise Evr1Error(f"video item {dict(url)!r} names no path")
        return str(Path(path).resolve()), url.get("video_start"), url.get("video_end")
    if isinstance(url, (str, Path)):
        if str(url).startswith(("http://", "https://")):
            raise ConfigError(f"video {url} is remote: the evr1 model reads local files (bind the task to local data)")
        return str(Path(url).resolve()), None, None
    raise Evr1Error(f"unsupported video {type(url).__name__}: give a path")
