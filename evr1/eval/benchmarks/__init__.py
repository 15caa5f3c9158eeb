"""The 22 built-in video benchmarks (registry `benchmarks`), one module each. Imported lazily by `BENCHMARKS`.

Each module `evr1.eval.benchmarks.<name>` holds everything about its benchmark, as lmms-eval keeps one folder per
task: its importers (the official annotation rows; EasyVideoR1's converted rows, brought to what the official importer
gives), its official scorer (item rule, aggregation, judge prompts and judge step where it has them), its lmms-eval
document converter and stock-task fixes, its fixture rows, and `BENCHMARK`, the `Benchmark` it registers. Open-ended
answers go to the LLM judge for a verdict, correct (1) or incorrect (0), as the official judges of MMVU, VCR-Bench and
VideoReasonBench count them (TempCompass captioning's official judge answers the multiple-choice question from the
caption instead; docs/benchmarks.md).

Adding a benchmark: one module with a `BENCHMARK`, listed in `MODULES`, and one test file
(`tests/eval/benchmarks/test_<name>.py`).
"""

from __future__ import annotations

from importlib import import_module

from evr1.registry import BENCHMARKS

MODULES = (
    "videomme", "videomme_v2", "mvbench", "tempcompass", "motionbench", "lvbench", "longvideobench", "mlvu",
    "video_holmes", "minerva", "vcrbench", "videoreasonbench", "longvideo_reason", "mmvu", "video_mmmu", "videomathqa",
    "vsibench", "charades_sta", "stvg", "ovobench", "odvbench", "livesports3k_qa",
)

for _name in MODULES:
    _bench = import_module(f"{__name__}.{_name}").BENCHMARK
    BENCHMARKS.register(_bench.name, _bench, module=f"{__name__}.{_name}")
