"""`evr1 cache verify`: check every entry (or a sample) against its digest and its source file's content,
optionally re-decode them.
`evr1 cache prune`: remove the entries of older cache schemas, which this evr1 never reads."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from evr1.data.cache import SCHEMA_VERSION, CacheError, DamagedEntryError, SourceDigests, TensorCache, entry_schema
from evr1.data.frame_sampling import Geometry, MediaError


@dataclass
class VerifyResult:
    entries: int = 0
    checked: int = 0
    sampled: bool = False  # `checked` is a random sample of the entries
    problems: list[str] = field(default_factory=list)  # entries whose bytes are wrong: the cache is damaged
    stale: list[str] = field(default_factory=list)  # entries whose source changed or vanished: never hit again
    old_schema: list[str] = field(default_factory=list)  # entries of an older cache schema: never read, not damaged
    newer_schema: list[str] = field(default_factory=list)  # entries a newer evr1 wrote: kept, read by that evr1


def verify_cache(path: str | Path, sample: int = 0, decode: bool = False, seed: int = 0) -> VerifyResult:
    """Check every entry (`sample` random ones when > 0): digest, header, length, that the source file's
    content is the one the entry was built from, and (with `decode`) that preparing the source again
    gives the same bytes."""
    store = TensorCache(path)
    try:
        return _verify(store, sample, decode, seed)
    finally:
        store.close()


def _verify(store: TensorCache, sample: int, decode: bool, seed: int) -> VerifyResult:
    keys = store.keys()
    chosen = keys if sample <= 0 or sample >= len(keys) else random.Random(seed).sample(keys, sample)
    result = VerifyResult(entries=len(keys), checked=len(chosen), sampled=len(chosen) < len(keys))
    digests = SourceDigests()
    for key in chosen:
        name = key.decode()[:16]
        try:
            with store.read(key) as entry:
                header, payload = entry
                source = header["source"]
                where = f"{name} ({source['path']})"
                file = Path(source["root"]) / source["path"]
                try:
                    stat = os.stat(file)
                except OSError:
                    result.stale.append(f"{where}: source file is gone")
                    continue
                if stat.st_size != source["size"] or digests.of(file, stat, store) != source["content"]:
                    result.stale.append(f"{where}: source file changed since the entry was built")
                    continue
                if decode and header["dtype"] == "uint8":
                    fresh = _prepare_again(header, file)
                    if fresh != bytes(payload):
                        result.problems.append(f"{where}: preparing the source again gives different bytes")
        except DamagedEntryError as exc:
            result.problems.append(str(exc))
        except (CacheError, KeyError, ValueError, MediaError) as exc:
            schema = entry_schema(store.raw(key))
            if isinstance(schema, int) and schema < SCHEMA_VERSION:
                result.old_schema.append(f"{name}: schema {schema}")
            elif isinstance(schema, int) and schema > SCHEMA_VERSION:
                result.newer_schema.append(f"{name}: schema {schema}")
            else:
                result.problems.append(f"{name}: {exc}")
    return result


class Pruned(NamedTuple):
    entries_removed: int
    entries: int  # before
    sources_removed: int
    sources: int  # before


def prune_cache(path: str | Path) -> Pruned:
    """Remove every entry of an older cache schema (entries a newer evr1 wrote are kept), then every `sources`
    row (a source file's recorded fingerprint) that no remaining entry refers to."""
    store = TensorCache(path, write=True)
    try:
        schemas = store.schemas()
        old = [key for key, schema in schemas.items() if isinstance(schema, int) and schema < SCHEMA_VERSION]
        store.delete(old)
        sources_removed, sources = store.prune_sources()
    finally:
        store.close()
    return Pruned(len(old), len(schemas), sources_removed, sources)


def _prepare_again(header: dict, file: Path) -> bytes:
    from evr1.data.live import prepare_image, prepare_video
    from evr1.specs import ImageSpec, VideoSpec

    geometry = Geometry(**header["processor"]["geometry"])
    if header["info"]["kind"] == "video":
        start, end = header["clip"]
        prepared = prepare_video(file, VideoSpec(**header["spec"]), geometry, start, end)
    else:
        prepared = prepare_image(file, ImageSpec(**header["spec"]), geometry)
    return prepared.patches.data.numpy().tobytes()
