"""OVO-Bench: online video understanding: backward, real-time and forward questions (1,468 multiple choice, 698
counting, 869 yes/no).

Offline protocol: each question sees the video up to its time; a forward question is one probe per `test_info` entry.
The official scorer is OVO-Bench's `OVOBenchScore.py` (offline): "Total Avg." is the mean over all the tasks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.aggregate import Aggregate
from evr1.eval.annotation_rows import mc, plain, video
from evr1.eval.definition import Benchmark, FieldError, Records, RowContext, renamed
from evr1.eval.lmms import scoring
from evr1.eval.lmms.doc_fields import answer_index, official_fields, option_texts, required, source_id
from evr1.eval.lmms.scoring import ItemRow, official_results
from evr1.eval.protocols import Official
from evr1.problem_types import ProblemType as PT

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


OVO_CATEGORIES = {
    "backward": ("EPM", "ASI", "HLD"),
    "realtime": ("STU", "OJR", "ATR", "ACR", "OCR", "FPD"),
    "forward": ("REC", "SSR", "CRR"),
}


_OVO_CATEGORY = {task: cat for cat, tasks in OVO_CATEGORIES.items() for task in tasks}


def ovo_question(task: str, text: str) -> str:
    """The question of a forward probe, worded with the official prompts' instructions (OVO-Bench `constant.py`:
    REC/SSR/CRR templates); `text` is the row's `activity` (REC), the probe's `step` (SSR) or the `question` (CRR).
    evr1's prompt adds the answer form."""
    if task == "REC":
        return (f"People in this video may perform this action repeatedly: {text.strip()}.\n"
                "Count how many times it has been performed in total so far, by anyone; one complete motion counts as one.")
    if task == "SSR":
        return ("This is a tutorial video made of a sequence of steps. One step of the procedure:\n"
                f"{text.strip()}\n"
                "Is the person in the video carrying out this step right now, at the end of the video?")
    if task == "CRR":
        return ("This question is about the latest frames, at the end of the video:\n"
                f"{text.strip()}\n"
                "Does what the video has shown so far, especially its latest frames, give enough information to answer it?")
    raise ValueError(f"{task!r} is not an OVO-Bench forward task; known: {list(OVO_CATEGORIES['forward'])}")


def _ovo_probe(task: str, row: Row, probe: Row) -> tuple[str, str, Any]:
    """(question, problem type, answer) of one forward probe."""
    if task == "REC":
        return ovo_question(task, str(row["activity"])), "numerical", int(probe["count"])
    text = str(probe["step"] if task == "SSR" else row["question"])
    return ovo_question(task, text), "boolean", "yes" if int(probe["type"]) == 1 else "no"


def ovobench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Backward/real-time rows: one question seeing the video up to `realtime`; forward rows (REC, SSR, CRR): one
    probe per `test_info` entry seeing the video up to its `realtime`, as the official offline protocol asks them."""
    task = row["task"]
    category = _OVO_CATEGORY.get(task)
    if category is None:
        raise ValueError(f"unknown OVO-Bench task {task!r}; known: {sorted(_OVO_CATEGORY)}")
    meta = {"category": category, "task": task}
    if category != "forward":
        media = [video(ctx, row["video"], 0.0, row["realtime"])]
        return [mc(row["id"], row["question"], [str(o) for o in row["options"]], int(row["gt"]), media, **meta)]
    out = []
    for i, probe in enumerate(row["test_info"]):
        question, ptype, answer = _ovo_probe(task, row, probe)
        out.append(plain(f"{row['id']}/{i}", question, ptype, answer, [video(ctx, row["video"], 0.0, probe["realtime"])], **meta))
    return out


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


OVO_FORWARD_TYPES = {"REC": "numerical", "SSR": "boolean", "CRR": "boolean"}
_REC_PROBLEM = re.compile(r"How many times did they (.+)\?")


def ovobench_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """EasyVideoR1's ovobench.json: a row per question and per forward probe, on a clip cut at its time. A probe's
    `problem_type` is its task (REC, SSR, CRR) and its problem the REC question "How many times did they <activity>?",
    the SSR step or the CRR question: worded here as the official importer words the probe."""
    task = row.get("problem_type")
    if task in OVO_FORWARD_TYPES:
        text = str(row.get("problem", ""))
        found = _REC_PROBLEM.fullmatch(text.strip()) if task == "REC" else None
        if task == "REC" and found is None:
            raise FieldError("problem", f"row {row.get('problem_id')!r}: an EasyVideoR1 REC problem reads"
                             f" \"How many times did they <activity>?\", got {text!r}")
        text = found.group(1) if found else text
        # meta `ovo_text`: the activity, step or question alone (lmms-eval's stock prompt words it itself)
        row = {**row, "problem_type": OVO_FORWARD_TYPES[task], "problem": ovo_question(task, text), "ovo_text": text}
    return renamed(category="ovo_category", task="ovo_task")(row, ctx)


# -- official scorer ---------------------------------------------------------------------------------------------------


def ovobench_item(row: Row) -> float:
    """Backward and real-time questions: right when the answer letter appears anywhere in the response; REC: all the
    digits of the response, joined, equal the count ("3 or 4" reads 34); SSR and CRR: a bare "Y" / "N", else
    "Yes" / "No" (capitalised) anywhere in the response. No response: 0."""
    response = row.get("response")
    if response is None:
        return 0.0
    kind, answer = row.get("problem_type"), row["answer"]
    if kind == "numerical":
        return float("".join(re.findall(r"\d+", response)) == str(int(float(answer))))
    if kind == "boolean":
        yes = str(answer).strip().lower() == "yes"
        if response == ("Y" if yes else "N"):
            return 1.0
        return float(("Yes" if yes else "No") in response)
    return float(str(answer) in response)


def ovobench_tasks(rows: Sequence[Row]) -> Aggregate:
    """Each task's accuracy; each category's mean of its tasks; the headline "Total Avg." the mean of the category
    means (the official script since f3911d7; a category without items is left out, where the script fails), and
    `task_mean`, the mean over all the tasks (the script's "Total Avg." before it), beside it."""
    cats = {label: agg.breakdown(members, "task") for label, members in agg.groups(rows, "category").items()}
    tasks = [s for per in cats.values() for s, _ in per.values()]
    means = {label: sum(s for s, _ in per.values()) / len(per) for label, per in cats.items()}
    total = sum(means.values()) / len(means) if means else 0.0
    metrics = {"Total Avg.": total, **means, "task_mean": sum(tasks) / len(tasks) if tasks else 0.0}
    return Aggregate(total, metrics, {k: agg.breakdown(rows, k) for k in ("category", "task")})


OVOBENCH = Official(
    "Total Avg.: mean of the backward, real-time and forward means of their tasks' accuracies (letter anywhere in the"
    " response; REC digits; SSR/CRR Yes/No), the mean over all tasks beside it",
    ovobench_tasks, ovobench_item,
    source="JoeLeelyf/OVO-Bench utils/OVOBenchScore.py (HEAD c34093f; last changed f3911d7, whose Total Avg. is the mean"
           " of the three category scores, l. 133; OVOBenchOfflineScore)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    """Backward/real-time: one question; forward: one probe of `test_info` (its own clip up to the probe's time)."""
    raw = official_fields(row)
    category, task = required(record, "category"), required(record, "task")
    text = str(record.meta.get("ovo_text", record.problem))  # EasyVideoR1 rows: the probe's text before our wording
    doc = {"evr1_subset": category, "id": source_id(record), "task": task, "question": str(raw.get("question", text))}
    if category != "forward":
        return {**doc, "options": option_texts(record), "gt": answer_index(record)}
    probes = raw.get("test_info") or []
    index = int(source_id(record).rsplit("/", 1)[-1]) if probes else 0
    probe = dict(probes[index]) if probes else {}
    probe.setdefault("step", doc["question"])  # the SSR prompt shows the step
    return {**doc, "activity": str(raw.get("activity", text)), "test_info": [probe]}


ovobench_process_results = official_results("ovobench_score")


def ovobench_category_score(rows: Sequence[ItemRow]) -> float:
    """The official block of one category's rows: the mean over its tasks (EPM, ASI, ...) of each task's accuracy,
    answers read by the official rules."""
    return float(scoring.official(scoring.benchmark_of(rows[0]["benchmark"]), rows)["score"])


def ovobench_total(scores: Sequence[float], sizes: Sequence[int], weight_by_size: bool) -> float:
    """The group's official "Total Avg.": the plain mean of the category scores (an lmms-eval group aggregation; the
    sample counts `sizes` and `weight_by_size` are not what the official script weighs by, so they are unused)."""
    del sizes, weight_by_size
    return sum(scores) / len(scores) if scores else 0.0


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {"ovo_bench_new.json": [  # the shapes of data/ovo_bench_new.json of github.com/JoeLeelyf/OVO-Bench
    {"id": 1, "task": "EPM", "video": "o1.mp4", "realtime": 3.0, "question": "What did I pick up?", "answer": "pen",
     "options": ["cup", "pen"], "gt": 1},
    {"id": 2, "task": "ASI", "video": "o1.mp4", "realtime": 2.0, "question": "What step?", "answer": "a", "options": ["a", "b", "c"], "gt": 0},
    {"id": 3, "task": "STU", "video": "o1.mp4", "realtime": 4.0, "question": "Where is it?", "answer": "left",
     "options": ["left", "right"], "gt": 0},
    {"id": 4, "task": "REC", "video": "o1.mp4", "activity": "bounce the square", "start_times": [1], "end_times": [2],
     "test_info": [{"realtime": 2.0, "count": 1}, {"realtime": 4.0, "count": 2}]},
    {"id": 5, "task": "SSR", "video": "o1.mp4", "tutorial": "PaintTheSquare", "all_steps": ["draw the square", "paint it red"],
     "start_time": [0, 3], "end_time": [2, 4],
     "test_info": [{"realtime": 2.0, "step": "paint it red", "type": 0}, {"realtime": 4.0, "step": "paint it red", "type": 1}]},
]}


BENCHMARK = Benchmark(
    name="ovobench",
    title="OVO-Bench",
    folder="ovobench",
    annotations=("ovo_bench_new.json",),
    media_dir="src_videos",
    question_types=(PT.MULTIPLE_CHOICE, PT.NUMERICAL, PT.BOOLEAN),
    metric="macro mean over tasks within backward/realtime/forward, then over the three",
    aggregate=agg.nested_macro("category", "task"),
    importer=ovobench,
    lmms_task="ovobench",
    meta_fields=("category", "task"),
    easyvideor1=ovobench_easyvideor1,
    easyvideor1_types=tuple(OVO_FORWARD_TYPES),
    official=OVOBENCH,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
