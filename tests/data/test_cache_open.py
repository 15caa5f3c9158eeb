"""Opening the cache: read-only folders and media, and one shared environment per path whose map grows."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evr1.data.cache import CacheError, TensorCache

READ = "from evr1.data.cache import TensorCache; print(TensorCache({path!r}).raw(b'k').decode())"


def _cache_with_entry(path: Path) -> Path:
    store = TensorCache(path, write=True)
    store.put(b"k", b"value")
    store.close()
    (path / "lock.mdb").unlink()  # as copied onto read-only media: the data file only
    return path


def _files(path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in path.iterdir()}


def test_a_folder_it_cannot_write_is_read_with_its_lock_when_usable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only, but with LMDB's lock (safe beside a writer of another account) when the lock file can be used."""
    path = _cache_with_entry(tmp_path / "cache")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if mode == os.W_OK and Path(p) == path else real(p, mode))
    reader = TensorCache(path)
    assert reader.raw(b"k") == b"value"
    flags = reader._open().flags()
    assert flags["readonly"] and flags["lock"]
    reader.close()
    with pytest.raises(CacheError, match="cannot write the cache at .*: the folder is read-only"):
        TensorCache(path, write=True).put(b"k2", b"x")


def test_a_folder_without_write_permission_reads(tmp_path: Path) -> None:
    """For real, in a child process without write permission on the folder (root ignores permissions,
    so as root the child runs as an unprivileged user in a user namespace, which does not)."""
    path = _cache_with_entry(tmp_path / "cache")
    TensorCache(path).close()  # a reader made the lock file, which the child may not write either
    read = [sys.executable, "-c", READ.format(path=str(path))]
    if os.geteuid() == 0:
        assert shutil.which("unshare"), "as root this test needs `unshare` (util-linux)"
        read = ["unshare", "--user", "--map-user=65534", *read]
    for item in path.iterdir():
        item.chmod(0o444)
    path.chmod(0o555)
    try:
        denied = subprocess.run([*read[:-2], "-c", f"open({str(path / 'probe')!r}, 'w')"], capture_output=True, text=True, timeout=60, check=False)
        assert denied.returncode != 0 and "Permission denied" in denied.stderr  # the child really cannot write there
        out = subprocess.run(read, capture_output=True, text=True, timeout=120, check=False)
    finally:
        path.chmod(0o755)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "value"
    assert "reading without it" in out.stderr  # the lock file could not be used: said, then read without it


def test_a_larger_map_grows_the_shared_environment(tmp_path: Path) -> None:
    small = TensorCache(tmp_path, write=True)
    small.map_size = 1 << 20  # 1 MiB: stands for a small map_size_gb opened first in this process
    small.put(b"k0", b"x" * 1000)
    big = TensorCache(tmp_path, write=True, map_size_gb=8)
    big.put(b"k1", b"y" * (4 << 20))  # 4 MiB: fits only in the grown map
    assert big._open().info()["map_size"] == 8 << 30
    smaller = TensorCache(tmp_path, write=True)
    smaller.map_size = 1 << 20  # never shrinks the shared map
    smaller.put(b"k2", b"z")
    assert smaller._open().info()["map_size"] == 8 << 30
    for store in (small, big, smaller):
        store.close()


def test_a_full_cache_reports_its_real_map(tmp_path: Path) -> None:
    first = TensorCache(tmp_path, write=True)
    first.map_size = 1 << 20
    first.put(b"k0", b"x")
    second = TensorCache(tmp_path, write=True)
    second.map_size = 1 << 19  # asks for less: the shared 1 MiB map stays
    with pytest.raises(CacheError, match=r"is full \(0.000977 GB map\): raise data.cache.map_size_gb"):
        second.put(b"k1", b"y" * (2 << 20))
    first.close()
    second.close()
