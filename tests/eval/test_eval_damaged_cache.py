"""`evr1 eval` on a damaged cache, run as a user would: a damaged entry is decoded live and named (as training
does in `prefer` mode), a truncated `data.mdb` stops the command in one line with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_inproc import evr1

from evr1.data.cache import TensorCache
from evr1.data.cache_build import build_cache
from evr1.data.loader import MediaLoader
from evr1.eval.api import load_benchmarks
from evr1.eval.fixtures import write_fixtures
from evr1.experiment import build_experiment
from evr1.experiment_files import load_config
from evr1.models import load_processor

EXPERIMENT = """
import fiddle as fdl
from evr1.experiment import Experiment
from evr1.specs import CacheSpec, EvalSpec, ModelSpec, VideoSpec

def experiment():
    return fdl.Config(
        Experiment,
        model=fdl.Config(ModelSpec, name="tiny-qwen2.5-vl", cache_dir={models!r}),
        eval=fdl.Config(EvalSpec, benchmarks=("mvbench",), data_root={root!r}, limit=1, max_response_tokens=2,
                        video=fdl.Config(VideoSpec, fps=2.0, max_frames=4, min_pixels=3136, max_pixels=3136),
                        cache=fdl.Config(CacheSpec, path={cache!r})),
    )
"""


def _eval(exp: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evr1", "eval", "run", str(exp), "--out", str(out)], cwd=out.parent,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


@pytest.mark.slow
def test_eval_decodes_a_damaged_entry_live_and_refuses_a_truncated_file(model_cache: Path, tmp_path: Path) -> None:
    root, cache = tmp_path / "fx", tmp_path / "cache"
    write_fixtures(root, ["mvbench"])
    exp_file = tmp_path / "exp_eval_cache.py"
    exp_file.write_text(EXPERIMENT.format(models=str(model_cache), root=str(root), cache=str(cache)))
    exp = build_experiment(load_config(str(exp_file))[0])
    processor = load_processor(exp.model)
    [loaded] = load_benchmarks(exp.eval)
    [record] = loaded.records
    spec = exp.eval
    build_cache([record], video=spec.video, image=spec.image, cache=spec.cache, processor=processor, data_root=root,
                workers=0, progress=False)  # fmt: skip
    [ref] = record.media
    assert MediaLoader(spec.video, spec.image, spec.cache, processor, root).load_media(ref).cache_hit  # eval's key

    store = TensorCache(spec.cache.path, write=True)
    [key] = store.keys()
    value = bytearray(store.raw(key))
    value[-1] ^= 0x01  # one flipped bit in the pixels
    store.put(key, bytes(value))
    store.close()
    done = evr1("eval", "run", exp_file, "--out", tmp_path / "damaged", cwd=tmp_path)  # in this process: its output
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"cache entry {key.decode()[:16]} in {cache / 'data.mdb'} is damaged" in done.stderr
    [row] = [json.loads(line) for line in (tmp_path / "damaged" / "mvbench" / "samples.jsonl").read_text().splitlines()]
    assert (row["id"], row["error"], row["cache_hits"]) == (record.id, None, 0)  # answered on live-decoded media

    file = cache / "data.mdb"
    with open(file, "r+b") as f:
        f.truncate(file.stat().st_size // 2)
    done = _eval(exp_file, tmp_path / "truncated")  # a process: it must exit, not die of SIGBUS
    assert done.returncode == 2, done.stderr[-3000:]  # not -7 (SIGBUS)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert errors[0].startswith(f"error: the cache file {file} is damaged (truncated: "), errors[0]
