"""The LMDB tensor cache: one entry per (media file, settings, processor), never a pickle.

An entry is `MAGIC | header length (u32 LE) | JSON header | zero padding to 64 | raw tensor bytes`.
The header names the dtype and shape of the bytes, the media info (grid, frame indices,
timestamps, fps), the source file, the spec, the processor identity and a BLAKE2b digest of the
bytes. The key is the SHA-256 of the source identity (path relative to the data root, size,
mtime), the clip, the full `VideoSpec`/`ImageSpec`, the processor identity, the storage form and
the schema version, so a changed file or setting can never return a stale entry.

LMDB gives one writer and any number of concurrent readers (processes and threads); every entry
is written in its own transaction, so a half-written entry is never visible, even after a kill.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evr1.data.media import Geometry
from evr1.errors import Evr1Error

_log = logging.getLogger(__name__)
SCHEMA_VERSION = 3  # 3: clip-clock timestamps, clip start frame and source size in `MediaInfo`
MAGIC = b"EVR1C\x01"
_ALIGN = 64
_ENTRIES, _BUILDS = b"entries", b"builds"


class CacheError(Evr1Error):
    """A cache that cannot be opened or an entry that cannot be read."""


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def processor_identity(processor: object) -> dict[str, Any]:
    """What the cached pixels depend on in a processor: its class, patch geometry and pixel arithmetic."""
    from evr1.data.patches import Normaliser

    return {
        "class": type(processor).__name__,
        "geometry": asdict(Geometry.of(processor)),
        "arithmetic": Normaliser.of(processor).identity(),
    }


def source_identity(rel_path: str, stat: os.stat_result) -> dict[str, Any]:
    return {"path": Path(rel_path).as_posix(), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def entry_key(
    kind: str, source: dict[str, Any], clip: tuple[float | None, float | None], spec: dict[str, Any],
    processor: dict[str, Any], storage: str,
) -> bytes:
    """The SHA-256 key of one prepared media file under given settings."""
    ident = {
        "schema": SCHEMA_VERSION, "kind": kind, "source": source, "clip": list(clip), "spec": spec,
        "processor": processor, "storage": storage,
    }
    return hashlib.sha256(canonical_json(ident)).hexdigest().encode()


def digest(payload: bytes | memoryview) -> str:
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def encode_entry(header: dict[str, Any], payload: bytes | memoryview) -> bytes:
    """Header (with the payload digest added) and raw bytes as one cache value."""
    head = canonical_json({**header, "schema": SCHEMA_VERSION, "nbytes": len(payload), "digest": digest(payload)})
    start = len(MAGIC) + 4 + len(head)
    pad = -start % _ALIGN
    return b"".join([MAGIC, struct.pack("<I", len(head)), head, b"\0" * pad, payload])


def _header(view: memoryview) -> tuple[dict[str, Any], int]:
    """The JSON header of one cache value and where its payload starts."""
    if bytes(view[: len(MAGIC)]) != MAGIC:
        raise CacheError("cache entry has an unknown format (bad magic)")
    (size,) = struct.unpack("<I", view[len(MAGIC) : len(MAGIC) + 4])
    start = len(MAGIC) + 4
    header = json.loads(bytes(view[start : start + size]))
    return header, start + size + (-(start + size) % _ALIGN)


def entry_schema(value: memoryview | bytes) -> Any:
    """The schema an encoded entry was written under (None when its header is unreadable)."""
    try:
        return _header(memoryview(value))[0].get("schema")
    except (CacheError, ValueError, struct.error):
        return None


def decode_entry(value: memoryview | bytes) -> tuple[dict[str, Any], memoryview]:
    """The header and a zero-copy view of the raw bytes of one cache value."""
    view = memoryview(value)
    header, offset = _header(view)
    payload = view[offset:]
    if header.get("schema") != SCHEMA_VERSION:
        raise CacheError(
            f"cache entry has schema {header.get('schema')}, this evr1 reads schema {SCHEMA_VERSION}: rebuild with `evr1 cache build`"
        )
    if len(payload) != header.get("nbytes"):
        raise CacheError(f"cache entry is truncated ({len(payload)} bytes, header says {header.get('nbytes')})")
    return header, payload


def _gb(size: int) -> str:
    return f"{size / 2**30:.3g} GB"


@dataclass(frozen=True)
class CacheStats:
    entries: int
    payload_bytes: int  # pages used by entries
    file_bytes: int  # size of data.mdb on disk


_OPEN: dict[tuple[int, str], list] = {}  # (pid, real path) -> [env, dbs, users]: py-lmdb allows one env per path
_OPEN_LOCK = threading.Lock()


def _drop_inherited(real_path: str) -> None:
    """In a forked child, release the parent's handle on the path: py-lmdb would refuse a second open,
    and the child holds none of the parent's locks or reader slots, so closing the copy is safe."""
    pid = os.getpid()
    for slot in [s for s in _OPEN if s[1] == real_path and s[0] != pid]:
        _OPEN.pop(slot)[0].close()


class TensorCache:
    """An LMDB environment of cache entries, shared by every `TensorCache` of a path in a process.

    Readers and the one builder may live in the same process; after a fork the child opens its own
    environment on first use. A writer asking for a larger map than the shared environment has
    grows it. A cache in a folder this process cannot write (a read-only file system, or a folder
    without write permission) is opened read-only, with LMDB's lock file when it can be used (safe
    beside a writer), else without it (with a warning: nobody may write it meanwhile).
    """

    def __init__(self, path: str | Path, *, write: bool = False, map_size_gb: int = 256) -> None:
        self.path, self.write, self.map_size = Path(path), write, map_size_gb << 30
        self._slot: tuple[int, str] | None = None

    def _open(self):
        slot = (os.getpid(), os.path.realpath(self.path))
        if self._slot == slot:
            return _OPEN[slot][0]
        with _OPEN_LOCK:
            if slot not in _OPEN:
                _drop_inherited(slot[1])
                _OPEN[slot] = [*self._open_env(), 0]
            elif self.write:
                self._grow(_OPEN[slot][0])
            _OPEN[slot][2] += 1
            self._slot = slot
            return _OPEN[slot][0]

    def _open_env(self):
        import lmdb

        if self.write:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not (self.path / "data.mdb").is_file():
            raise CacheError(f"no cache at {self.path} (build it with `evr1 cache build`)")
        readonly = not os.access(self.path, os.W_OK)
        if readonly and self.write:
            raise CacheError(f"cannot write the cache at {self.path}: the folder is read-only")
        try:
            env = self._lmdb_open(readonly, lock=True)
        except lmdb.Error as exc:
            if not readonly:
                raise CacheError(f"cannot open the cache at {self.path}: {exc}") from None
            _log.warning("cache %s: cannot use its lock file (%s); reading without it, so nobody may write it meanwhile",
                         self.path, exc)
            env = self._lmdb_open(readonly, lock=False)
        try:
            dbs = {name: env.open_db(name, create=self.write) for name in (_ENTRIES, _BUILDS)}
        except lmdb.Error as exc:
            raise CacheError(f"cannot open the cache at {self.path}: {exc}") from None
        return env, dbs

    def _lmdb_open(self, readonly: bool, *, lock: bool):
        import lmdb

        try:
            return lmdb.open(str(self.path), map_size=self.map_size, max_dbs=4, readonly=readonly, lock=lock,
                             max_readers=2048, readahead=False, meminit=False)
        except lmdb.Error as exc:
            if lock:
                raise
            raise CacheError(f"cannot open the cache at {self.path}: {exc}") from None

    def _grow(self, env: Any) -> None:
        """Widen the shared environment's map to this handle's `map_size` (it never shrinks).

        LMDB allows this only while no transaction of this process is open: writers are opened
        before readers' threads start reading (as `build_cache` and the trainer do).
        """
        import lmdb

        if env.info()["map_size"] < self.map_size:
            try:
                env.set_mapsize(self.map_size)
            except lmdb.Error as exc:
                raise CacheError(f"cannot grow the map of the cache at {self.path} to {_gb(self.map_size)}: {exc}") from None

    @property
    def _dbs(self) -> dict[bytes, Any]:
        return _OPEN[self._slot][1]

    def exists(self) -> bool:
        return (self.path / "data.mdb").is_file()

    @contextmanager
    def read(self, key: bytes) -> Iterator[tuple[dict[str, Any], memoryview] | None]:
        """`(header, payload view)` of an entry, or None; the view is valid only inside the `with`."""
        env = self._open()
        with env.begin(db=self._dbs[_ENTRIES], buffers=True) as txn:
            value = txn.get(key)
            yield None if value is None else decode_entry(value)

    def raw(self, key: bytes) -> bytes | None:
        """A copy of an encoded entry (for tools; readers use `read`)."""
        env = self._open()
        with env.begin(db=self._dbs[_ENTRIES]) as txn:
            return txn.get(key)

    def __contains__(self, key: bytes) -> bool:
        env = self._open()
        with env.begin(db=self._dbs[_ENTRIES]) as txn:
            return txn.get(key) is not None

    def put(self, key: bytes, value: bytes) -> None:
        """Write one encoded entry in its own transaction (all of it is visible, or none)."""
        import lmdb

        env = self._open()
        try:
            with env.begin(write=True, db=self._dbs[_ENTRIES]) as txn:
                txn.put(key, value)
        except lmdb.MapFullError:
            raise CacheError(
                f"the cache at {self.path} is full ({_gb(env.info()['map_size'])} map): raise data.cache.map_size_gb and build again"
            ) from None

    def schemas(self) -> dict[bytes, Any]:
        """The schema of every entry, read from the headers (payloads are not copied)."""
        env = self._open()
        with env.begin(db=self._dbs[_ENTRIES], buffers=True) as txn:
            return {bytes(k): entry_schema(v) for k, v in txn.cursor()}

    def delete(self, keys: list[bytes]) -> None:
        """Remove entries, in one transaction (their pages are reused by later entries; the file does not shrink)."""
        env = self._open()
        with env.begin(write=True, db=self._dbs[_ENTRIES]) as txn:
            for key in keys:
                txn.delete(key)

    def log_build(self, name: str, summary: dict[str, Any]) -> None:
        env = self._open()
        with env.begin(write=True, db=self._dbs[_BUILDS]) as txn:
            txn.put(name.encode(), canonical_json(summary))

    def builds(self) -> list[dict[str, Any]]:
        env = self._open()
        with env.begin(db=self._dbs[_BUILDS]) as txn:
            return [{"name": k.decode(), **json.loads(v)} for k, v in txn.cursor()]

    def keys(self) -> list[bytes]:
        env = self._open()
        with env.begin(db=self._dbs[_ENTRIES]) as txn:
            return [bytes(k) for k in txn.cursor().iternext(keys=True, values=False)]

    def stats(self) -> CacheStats:
        env = self._open()
        with env.begin() as txn:
            st = txn.stat(self._dbs[_ENTRIES])
        pages = st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
        return CacheStats(st["entries"], pages * st["psize"], (self.path / "data.mdb").stat().st_size)

    def close(self) -> None:
        """Release this handle; the environment closes with its last user in this process."""
        slot, self._slot = self._slot, None
        with _OPEN_LOCK:
            if slot is None or slot[0] != os.getpid() or slot not in _OPEN:
                return
            _OPEN[slot][2] -= 1
            if _OPEN[slot][2] == 0:
                _OPEN.pop(slot)[0].close()
