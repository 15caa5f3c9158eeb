"""Building the cache: every media file of a dataset prepared once, in parallel worker processes.

Workers decode, sample, resize and lay out pixels (and encode the entry); the calling process is
the only writer. Entries already present are skipped, so an interrupted build resumes where it
stopped. A media file that cannot be prepared (missing, empty, corrupt, unsupported codec, one
frame, ...) never stops the build: each record that uses it gets a line in the failure report
(JSONL: `record`, `file`, `kind`, `reason`, `detail`, and `split` when the build names one).
A build that built or failed something is logged in the cache with its settings and counts
(`evr1 cache info` lists them); one that found every entry present is not.

Every present entry is checked against its digest first (XXH3, at memory speed: the build reads the
cache once); a damaged one is built again. A damaged cache file stops the build (`CacheFileError`)
unless `replace_damaged` starts a new one. Workers die with the build (`die_with_parent`); a build
of little data (under `INLINE_BYTES` of source files) runs in this process, since starting the
workers (seconds each: they import torch and receive the processor) would cost more than the work.
"""

from __future__ import annotations

import ctypes
import json
import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evr1.data.cache import CacheFileError, TensorCache, encode_entry, entry_key, fingerprint
from evr1.data.decode import check_file
from evr1.data.frame_sampling import MediaError
from evr1.data.loader import MediaLoader
from evr1.data.records import MediaRef, Record
from evr1.specs import CacheSpec, ImageSpec, VideoSpec

_log = logging.getLogger(__name__)
AUTO_WORKERS = 2
INLINE_BYTES = 64 << 20  # below this much source data a build prepares in this process (no worker start-up)


@dataclass
class _Task:
    key: bytes
    ref: MediaRef
    source: dict[str, Any]
    fingerprint: bytes  # the file's stat fingerprint when its content was hashed
    records: list[str] = field(default_factory=list)


@dataclass
class BuildReport:
    """What a build did; `failures` lists one dict per (record, media file) that could not be cached."""

    media: int = 0
    built: int = 0
    skipped: int = 0
    failed: int = 0
    damaged: int = 0  # present entries that did not match their digest, built again
    workers: int = 0  # worker processes used (0: this process)
    seconds: float = 0.0
    failures: list[dict[str, Any]] = field(default_factory=list)
    failures_path: str | None = None


def _entry(loader: MediaLoader, task: _Task) -> bytes:
    """Prepare one media file and encode its cache entry (runs in a worker)."""
    import torch

    prepared = loader.prepare(task.ref)
    if fingerprint(check_file(loader.source(task.ref))) != task.fingerprint:
        raise MediaError(task.ref.path, "changed", "file changed while the cache was being built")
    mod = loader.modalities[task.ref.kind]
    if loader.cache_spec.storage == "uint8":
        tensor = prepared.patches.data
        extra = {"temporal_patch_size": prepared.patches.temporal_patch_size}
    else:
        tensor = mod.normaliser.apply(prepared.patches).to(torch.bfloat16)
        extra = {}
    header = {
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "out_shape": list(prepared.patches.out_shape),
        **extra,
        "info": prepared.info.to_json(),
        "source": {**task.source, "root": str(loader.data_root.resolve())},
        "clip": [task.ref.start, task.ref.end],
        "spec": mod.spec.model_dump(mode="json"),
        "processor": mod.identity,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    raw = tensor.contiguous().view(-1).view(torch.uint8).numpy()
    return encode_entry(header, memoryview(raw))


_WORKER_LOADER: MediaLoader | None = None


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent dies (Linux `PR_SET_PDEATHSIG`), and exit now if the
    parent (pid `parent`) is already gone, so a `kill -9` of the parent leaves no worker behind."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _init_worker(loader: MediaLoader, parent: int) -> None:
    import gc

    import torch

    global _WORKER_LOADER
    die_with_parent(parent)
    torch.set_num_threads(1)
    _WORKER_LOADER = loader
    gc.freeze()  # the imported modules are never garbage: no collection scans them, nor the last one at exit (seconds)


def _work(task: _Task) -> tuple[str, Any]:
    try:
        return "ok", _entry(_WORKER_LOADER, task)
    except MediaError as exc:
        return "fail", (exc.reason, exc.detail)
    except Exception as exc:  # noqa: BLE001 - a bad file must never stop the build; reported, not dropped
        return "fail", ("error", f"{type(exc).__name__}: {exc}")


def plan(records: Iterable[Record], loader: MediaLoader, cache: TensorCache) -> tuple[list[_Task], int, list[dict]]:
    """The media to build (one task per distinct entry: missing or damaged), the count already cached and
    intact, and early failures. The content digests it computed are in `loader.digests.hashed`."""
    tasks: dict[bytes, _Task] = {}
    present: set[bytes] = set()
    failures: list[dict] = []
    damaged: list[bytes] = []
    for record in records:
        for ref in record.media:
            try:
                stat = check_file(loader.source(ref))
                identity = loader.identity(ref, stat, cache)
            except MediaError as exc:
                failures.append(_failure(record.id, ref, exc.reason, exc.detail))
                continue
            key = entry_key(*identity)
            if key in present:
                continue
            if key not in tasks and cache.exists():
                intact = cache.intact(key)
                if intact:
                    present.add(key)
                    continue
                if intact is False:
                    damaged.append(key)
            task = tasks.setdefault(key, _Task(key, ref, identity[1], fingerprint(stat)))
            task.records.append(record.id)
    for key in damaged:
        _log.warning("cache %s: entry %s is damaged; building it again", cache.file, key.decode()[:16])
    return list(tasks.values()), len(present), failures, len(damaged)


def _failure(record_id: str, ref: MediaRef, reason: str, detail: str) -> dict[str, Any]:
    return {"record": record_id, "file": ref.path, "kind": ref.kind, "reason": reason, "detail": detail}


def build_cache(
    records: Iterable[Record], *, video: VideoSpec, image: ImageSpec, cache: CacheSpec, processor: Any,
    data_root: str | Path, workers: int | None = None, failures_path: str | Path | None = None, progress: bool = True,
    split: str | None = None, replace_damaged: bool = False,
) -> BuildReport:
    """Prepare every media file of `records` into the cache at `cache.path`; see the module doc.

    `split` names the records' split (e.g. `train`): its failure lines carry it, and the failure
    report (default `CACHE/failures.jsonl`) keeps the other splits' lines, so one report lists the
    latest failures of every split. `replace_damaged`: a damaged cache file is deleted and built anew.
    `workers`: processes preparing media (0: this process; None: `AUTO_WORKERS`, or this process when the
    files to prepare total under `INLINE_BYTES`).
    """
    from tqdm import tqdm

    if cache.path is None:
        from evr1.errors import ConfigError

        raise ConfigError("the cache has no path: set data.cache.path (or pass --cache)")
    started = time.perf_counter()
    loader = MediaLoader(video, image, cache.model_copy(update={"mode": "bypass"}), processor, data_root)
    store = _open_store(cache, replace_damaged)
    try:
        tasks, skipped, failures, damaged = plan(records, loader, store)
        store.record_sources(loader.digests.hashed)
        early = len({(f["file"], f["reason"]) for f in failures})
        report = BuildReport(media=len(tasks) + skipped + early, skipped=skipped, damaged=damaged)
        bar = tqdm(total=report.media, initial=skipped + early, unit="media", desc="cache build", disable=not progress,
                   dynamic_ncols=True)
        if workers is None:
            workers = 0 if sum(task.source["size"] for task in tasks) < INLINE_BYTES else AUTO_WORKERS
        report.workers = workers
        try:
            for task, (status, value) in _run(tasks, loader, workers):
                if status == "ok":
                    store.put(task.key, value)
                    report.built += 1
                else:
                    failures.extend(_failure(r, task.ref, *value) for r in task.records)
                bar.update(1)
        finally:
            bar.close()
        report.failures = [{**f, "split": split} for f in failures] if split is not None else failures
        report.failed = len({(f["file"], f["reason"]) for f in failures})
        report.seconds = time.perf_counter() - started
        report.failures_path = str(_write_failures(report.failures, failures_path or Path(cache.path) / "failures.jsonl", split))
        if report.built or report.failed:  # a build that found everything present changed nothing
            store.log_build(datetime.now(UTC).isoformat(timespec="microseconds"), {
                "video": video.model_dump(mode="json"), "image": image.model_dump(mode="json"),
                "processor": {k: m.identity for k, m in loader.modalities.items()}, "storage": cache.storage,
                "data_root": str(Path(data_root).resolve()), "split": split,
                **{k: v for k, v in asdict(report).items() if k != "failures"},
            })
    finally:
        store.close()
    return report


def _open_store(cache: CacheSpec, replace_damaged: bool) -> TensorCache:
    """The cache opened for writing; a damaged file raises `CacheFileError`, or with `replace_damaged` is deleted."""
    store = TensorCache(cache.path, write=True, map_size_gb=cache.map_size_gb)
    try:
        store.check()
    except CacheFileError as exc:
        if not replace_damaged:
            raise
        _log.warning("%s; deleting it and starting a new cache", exc)
        for name in ("data.mdb", "lock.mdb"):
            (Path(cache.path) / name).unlink(missing_ok=True)
    return store


def _write_failures(failures: list[dict], path: str | Path, split: str | None) -> Path:
    """Write this build's failures, keeping the lines of other splits (a split's new build replaces its old lines)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = []
    if path.is_file():
        kept = [line for line in path.read_text(encoding="utf-8").splitlines() if line and json.loads(line).get("split") != split]
    lines = kept + [json.dumps(item, ensure_ascii=False) for item in failures]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _run(tasks: list[_Task], loader: MediaLoader, workers: int, work=_work):
    """Yield `(task, result)` as workers finish; `workers=0` runs in this process.

    A worker process that dies (a decoder crash) breaks its pool: the tasks it had in flight are
    then run again one at a time, so the crash is reported against the file that caused it.
    """
    if workers <= 0:
        global _WORKER_LOADER
        _WORKER_LOADER = loader
        for task in tasks:
            yield task, work(task)
        return
    pending = list(reversed(tasks))
    while pending:
        for suspect in (yield from _pool(loader, workers, pending, work)):
            lost = yield from _pool(loader, 1, [suspect], work)
            for task in lost:
                yield task, ("fail", ("worker_crashed", "the worker process died while preparing this file"))


def _pool(loader: MediaLoader, workers: int, pending: list[_Task], work):
    """Run `pending` (consumed from the end) in a fresh pool; returns the tasks lost if a worker died."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(loader, os.getpid())) as pool:
        running: dict[Future, _Task] = {}
        try:
            while pending or running:
                while pending and len(running) < 2 * workers:
                    task = pending.pop()
                    running[pool.submit(work, task)] = task
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()  # raises BrokenProcessPool with the task still in `running`
                    yield running.pop(future), result
        except BrokenProcessPool:
            return list(running.values())
    return []
