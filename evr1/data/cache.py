"""The LMDB tensor cache: one entry per (media file, settings, processor), never a pickle.

An entry is `MAGIC | digest (16 bytes) | header length (u32 LE) | JSON header | zero padding to 64 |
raw tensor bytes`. The digest is the XXH3-128 of everything after it (header and bytes), checked on
every read (XXH3 runs at memory speed over the stored uint8 bytes, a quarter of the float32 output's:
a check costs about a sixth of a copy of the output); a damaged entry raises `DamagedEntryError`. The header names the dtype and shape of the bytes, the
media info (grid, frame indices, timestamps, fps), the source file, the spec and the processor
identity. The key is the SHA-256 of the source identity (path relative to the data root, size and
the XXH3-128 of the file's content), the clip, the full `VideoSpec`/`ImageSpec`, the processor
identity, the storage form and the schema version, so a changed file or setting can never return a
stale entry, and a file copied unchanged to another machine is still a hit.

Hashing a source file is avoided where a cheaper check decides: the `sources` table maps a stat
fingerprint (device, inode, size, mtime, ctime) to the content digest. A file rewritten in place
with its mtime restored (`cp -p`, `rsync -t`, `tar x`, `touch -r`) has a new ctime (which no tool
can set back) or a new inode, so its fingerprint is unknown and its content is hashed again.
`cache build` records the fingerprints of the files it hashed; readers hash a file whose
fingerprint is unknown once per process (`SourceDigests`).

A cache file that cannot be read safely (truncated below its last page, not an LMDB file,
unreadable, damaged B-tree) raises `CacheFileError`: LMDB maps the file into memory, so reading a
page past the end of a truncated file would kill the process with SIGBUS; opening checks the
file's size against the last page the environment uses, once per process.

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

import xxhash

from evr1.data.frame_sampling import Geometry, MediaError
from evr1.errors import Evr1Error

_log = logging.getLogger(__name__)
SCHEMA_VERSION = 4  # 4: XXH3 digest over header and bytes, source identity by content
MAGIC = b"EVR1C\x02"
_OLD_MAGIC = b"EVR1C\x01"  # schemas <= 3: `MAGIC | u32 | JSON header (with a BLAKE2b digest) | pad | bytes`
_DIGEST = 16
_ALIGN = 64
_ENTRIES, _BUILDS, _SOURCES = b"entries", b"builds", b"sources"
_HASH_CHUNK = 8 << 20


class CacheError(Evr1Error):
    """A cache that cannot be opened or an entry that cannot be read (readers in `prefer` mode decode live)."""


class DamagedEntryError(CacheError):
    """An entry whose bytes or header do not match its digest (or cannot be parsed)."""


class CacheFileError(Evr1Error):
    """The cache file itself cannot be read safely (truncated, not LMDB, unreadable): nothing is read from it,
    in any mode; `evr1 cache build --replace-damaged` starts a new one."""


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


def fingerprint(stat: os.stat_result) -> bytes:
    """What changes whenever a file's content can have changed on this machine (ctime cannot be set back)."""
    return canonical_json([stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns])


def file_digest(path: str | Path) -> str:
    """The XXH3-128 of a file's content (read in chunks into one buffer)."""
    hasher, buffer = xxhash.xxh3_128(), bytearray(_HASH_CHUNK)
    view = memoryview(buffer)
    try:
        with open(path, "rb", buffering=0) as file:
            while n := file.readinto(buffer):
                hasher.update(view[:n])
    except OSError as exc:
        raise MediaError(str(path), "missing", f"cannot read file: {exc.strerror}") from None
    return hasher.hexdigest()


class SourceDigests:
    """Content digests of source files by stat fingerprint: remembered in this process, else read from a
    cache's `sources` table, else computed (`hashed` keeps those, for a build to record)."""

    def __init__(self) -> None:
        self._known: dict[bytes, str] = {}
        self.hashed: dict[bytes, str] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:  # a copy in another process starts empty
        return {}

    def __setstate__(self, state: dict) -> None:
        self.__init__()

    def of(self, path: str | Path, stat: os.stat_result, store: TensorCache | None = None) -> str:
        key = fingerprint(stat)
        if (known := self._known.get(key)) is not None:
            return known
        known = store.source_digest(key) if store is not None and store.exists() else None
        if known is None:
            known = file_digest(path)
            if fingerprint(os.stat(path)) != key:
                raise MediaError(str(path), "changed", "file changed while its content was being hashed")
            with self._lock:
                self.hashed[key] = known
        with self._lock:
            self._known[key] = known
        return known


def source_identity(rel_path: str, stat: os.stat_result, content: str) -> dict[str, Any]:
    return {"path": Path(rel_path).as_posix(), "size": stat.st_size, "content": content}


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


def encode_entry(header: dict[str, Any], payload: bytes | memoryview) -> bytes:
    """Header and raw bytes as one cache value, with the digest of both."""
    head = canonical_json({**header, "schema": SCHEMA_VERSION, "nbytes": len(payload)})
    start = len(MAGIC) + _DIGEST + 4 + len(head)
    parts = [struct.pack("<I", len(head)), head, b"\0" * (-start % _ALIGN)]
    hasher = xxhash.xxh3_128()
    for part in (*parts, payload):
        hasher.update(part)
    return b"".join([MAGIC, hasher.digest(), *parts, payload])


def _header(view: memoryview) -> tuple[dict[str, Any], int]:
    """The JSON header of one cache value (either layout) and where its payload starts."""
    magic = bytes(view[: len(MAGIC)])
    if magic not in (MAGIC, _OLD_MAGIC):
        raise DamagedEntryError("unknown format (bad magic)")
    start = len(MAGIC) + (_DIGEST if magic == MAGIC else 0)
    (size,) = struct.unpack("<I", view[start : start + 4])
    start += 4
    try:
        header = json.loads(bytes(view[start : start + size]))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise DamagedEntryError(f"unreadable header ({exc})") from None
    if not isinstance(header, dict):
        raise DamagedEntryError("unreadable header (not a JSON object)")
    return header, start + size + (-(start + size) % _ALIGN)


def entry_schema(value: memoryview | bytes) -> Any:
    """The schema an encoded entry was written under (None when its header is unreadable)."""
    try:
        return _header(memoryview(value))[0].get("schema")
    except (CacheError, struct.error):
        return None


def _source_content(value: memoryview | bytes) -> str | None:
    """The source content digest an encoded entry's header names (None when it names none or is unreadable)."""
    try:
        source = _header(memoryview(value))[0].get("source")
    except (CacheError, struct.error):
        return None
    return source.get("content") if isinstance(source, dict) else None


def decode_entry(value: memoryview | bytes) -> tuple[dict[str, Any], memoryview]:
    """The header and a zero-copy view of the raw bytes of one cache value, checked against its digest."""
    view = memoryview(value)
    if len(view) < len(MAGIC) + _DIGEST + 4:
        raise DamagedEntryError(f"truncated ({len(view)} bytes)")
    if bytes(view[: len(MAGIC)]) == MAGIC and xxhash.xxh3_128_digest(view[len(MAGIC) + _DIGEST :]) != bytes(
        view[len(MAGIC) : len(MAGIC) + _DIGEST]
    ):
        raise DamagedEntryError("its bytes do not match their digest")
    header, offset = _header(view)
    if header.get("schema") != SCHEMA_VERSION:
        raise CacheError(
            f"cache entry has schema {header.get('schema')}, this evr1 reads schema {SCHEMA_VERSION}: rebuild with `evr1 cache build`"
        )
    payload = view[offset:]
    if len(payload) != header.get("nbytes"):
        raise DamagedEntryError(f"truncated ({len(payload)} bytes, header says {header.get('nbytes')})")
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
        elif not self.exists():
            raise CacheError(f"no cache at {self.path} (build it with `evr1 cache build`)")
        readonly = not os.access(self.path, os.W_OK)
        if readonly and self.write:
            raise CacheError(f"cannot write the cache at {self.path}: the folder is read-only")
        if self.exists() and (size := self.file.stat().st_size) < 2 * 4096:  # LMDB's two meta pages
            raise self._damaged(f"truncated to {size} bytes")
        try:
            env = self._lmdb_open(readonly, lock=True)
        except lmdb.Error as exc:
            if not readonly:
                raise self._damaged(str(exc)) from None
            _log.warning("cache %s: cannot use its lock file (%s); reading without it, so nobody may write it meanwhile",
                         self.path, exc)
            env = self._lmdb_open(readonly, lock=False)
        try:
            self._check_size(env)
            dbs = {name: env.open_db(name, create=self.write) for name in (_ENTRIES, _BUILDS)}
            try:
                dbs[_SOURCES] = env.open_db(_SOURCES, create=self.write)
            except lmdb.NotFoundError:  # a cache of an older schema, opened read-only
                dbs[_SOURCES] = None
        except lmdb.Error as exc:
            env.close()
            raise CacheError(f"cannot open the cache at {self.path}: {exc}") from None
        except CacheFileError:
            env.close()
            raise
        return env, dbs

    @property
    def file(self) -> Path:
        return self.path / "data.mdb"

    def _damaged(self, why: str) -> CacheFileError:
        return CacheFileError(
            f"the cache file {self.file} is damaged ({why}): nothing is read from it; "
            "start a new one with `evr1 cache build ... --replace-damaged`"
        )

    def _check_size(self, env: Any) -> None:
        """LMDB maps the file: a page past its end would kill the reader with SIGBUS, so the file must hold
        every page up to the last one the environment uses."""
        need = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
        size = self.file.stat().st_size
        if size < need:
            raise self._damaged(f"truncated: {size} bytes, its pages need {need}")

    def _lmdb_open(self, readonly: bool, *, lock: bool):
        import lmdb

        try:
            return lmdb.open(str(self.path), map_size=self.map_size, max_dbs=4, readonly=readonly, lock=lock,
                             max_readers=2048, readahead=False, meminit=False)
        except lmdb.Error as exc:
            if lock:
                raise
            raise self._damaged(str(exc)) from None

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
        return self.file.is_file()

    def check(self) -> None:
        """Open the cache when its file exists: a damaged file raises `CacheFileError` now, not at a read."""
        if self.exists():
            self._open()

    @contextmanager
    def _txn(self, db: bytes | None = _ENTRIES, *, write: bool = False, buffers: bool = False) -> Iterator[Any]:
        """A transaction on one table; LMDB's own errors there (a damaged B-tree) mean a damaged file."""
        import lmdb

        env = self._open()
        try:
            with env.begin(db=self._dbs[db] if db else None, write=write, buffers=buffers) as txn:
                yield txn
        except lmdb.MapFullError:
            raise
        except lmdb.Error as exc:
            raise self._damaged(f"{type(exc).__name__}: {exc}") from None

    @contextmanager
    def read(self, key: bytes) -> Iterator[tuple[dict[str, Any], memoryview] | None]:
        """`(header, payload view)` of an entry, or None; the view is valid only inside the `with`. The entry is
        checked against its digest: a damaged one raises `DamagedEntryError` naming it and the cache file."""
        with self._txn(buffers=True) as txn:
            value = txn.get(key)
            yield None if value is None else self._decode(key, value)

    def _decode(self, key: bytes, value: memoryview) -> tuple[dict[str, Any], memoryview]:
        try:
            return decode_entry(value)
        except DamagedEntryError as exc:
            raise DamagedEntryError(f"cache entry {key.decode()[:16]} in {self.file} is damaged: {exc}") from None

    def intact(self, key: bytes) -> bool | None:
        """Whether the entry is present and matches its digest (None: absent)."""
        try:
            with self.read(key) as entry:
                return None if entry is None else True
        except CacheError:
            return False

    def raw(self, key: bytes) -> bytes | None:
        """A copy of an encoded entry (for tools; readers use `read`)."""
        with self._txn() as txn:
            return txn.get(key)

    def __contains__(self, key: bytes) -> bool:
        with self._txn() as txn:
            return txn.get(key) is not None

    def put(self, key: bytes, value: bytes) -> None:
        """Write one encoded entry in its own transaction (all of it is visible, or none)."""
        import lmdb

        try:
            with self._txn(write=True) as txn:
                txn.put(key, value)
        except lmdb.MapFullError:
            size = _gb(self._open().info()["map_size"])
            raise CacheError(
                f"the cache at {self.path} is full ({size} map): raise data.cache.map_size_gb and build again"
            ) from None

    def source_digest(self, fingerprint: bytes) -> str | None:
        """The content digest recorded for a source file's stat fingerprint (see `SourceDigests`)."""
        self._open()
        if self._dbs[_SOURCES] is None:
            return None
        with self._txn(_SOURCES) as txn:
            value = txn.get(fingerprint)
        return None if value is None else value.decode()

    def record_sources(self, digests: dict[bytes, str]) -> None:
        """Record content digests by stat fingerprint, in one transaction."""
        with self._txn(_SOURCES, write=True) as txn:
            for key, value in digests.items():
                txn.put(key, value.encode())

    def prune_sources(self) -> tuple[int, int]:
        """Remove the `sources` rows whose content digest no entry's header names, in one transaction; returns
        (removed, rows before). An entry with an unreadable header names none (a rebuild records its source again)."""
        with self._txn(buffers=True) as txn:
            named = {_source_content(v) for _, v in txn.cursor()}
        self._open()
        if self._dbs[_SOURCES] is None:
            return 0, 0
        with self._txn(_SOURCES, write=True) as txn:
            rows = [(bytes(k), bytes(v).decode()) for k, v in txn.cursor()]
            unused = [key for key, content in rows if content not in named]
            for key in unused:
                txn.delete(key)
        return len(unused), len(rows)

    def schemas(self) -> dict[bytes, Any]:
        """The schema of every entry, read from the headers (payloads are not copied)."""
        with self._txn(buffers=True) as txn:
            return {bytes(k): entry_schema(v) for k, v in txn.cursor()}

    def delete(self, keys: list[bytes]) -> None:
        """Remove entries, in one transaction (their pages are reused by later entries; the file does not shrink)."""
        with self._txn(write=True) as txn:
            for key in keys:
                txn.delete(key)

    def log_build(self, name: str, summary: dict[str, Any]) -> None:
        with self._txn(_BUILDS, write=True) as txn:
            txn.put(name.encode(), canonical_json(summary))

    def builds(self) -> list[dict[str, Any]]:
        with self._txn(_BUILDS) as txn:
            return [{"name": k.decode(), **json.loads(v)} for k, v in txn.cursor()]

    def keys(self) -> list[bytes]:
        with self._txn() as txn:
            return [bytes(k) for k in txn.cursor().iternext(keys=True, values=False)]

    def stats(self) -> CacheStats:
        self._open()
        with self._txn(None) as txn:
            st = txn.stat(self._dbs[_ENTRIES])
        pages = st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]
        return CacheStats(st["entries"], pages * st["psize"], self.file.stat().st_size)

    def close(self) -> None:
        """Release this handle; the environment closes with its last user in this process."""
        slot, self._slot = self._slot, None
        with _OPEN_LOCK:
            if slot is None or slot[0] != os.getpid() or slot not in _OPEN:
                return
            _OPEN[slot][2] -= 1
            if _OPEN[slot][2] == 0:
                _OPEN.pop(slot)[0].close()
