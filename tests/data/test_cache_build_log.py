"""`evr1 cache info` lists the builds that changed the cache, not every run that found it complete."""

from __future__ import annotations

import subprocess

from cli_inproc import evr1

SPEC_ARGS = ["--family", "qwen2.5-vl", "--fps", "2", "--min-pixels", str(16 * 28 * 28), "--max-pixels", str(48 * 28 * 28),
             "--image-min-pixels", str(8 * 28 * 28), "--image-max-pixels", str(48 * 28 * 28)]


def cache(*args: str) -> subprocess.CompletedProcess:
    return evr1("cache", *args)


def test_a_build_with_nothing_to_do_is_not_listed(media_root, tmp_path, good_rows, write_jsonl) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", good_rows[:2])
    store = tmp_path / "cache"
    build = ["build", "--data", str(data), "--data-root", str(media_root), "--cache", str(store), "--workers", "0", *SPEC_ARGS]
    first = cache(*build)
    assert first.returncode == 0, first.stderr
    again = cache(*build)
    assert again.returncode == 0 and " 0 built, " in again.stdout and " 0 failed" in again.stdout, again.stdout
    info = cache("info", str(store))
    assert info.returncode == 0, info.stderr
    builds = [line for line in info.stdout.splitlines() if line.startswith("build ")]
    assert len(builds) == 1 and " 0 already present, 0 failed" in builds[0], info.stdout
    assert info.stdout.count("  video: ") == 1
