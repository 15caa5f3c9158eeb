"""Importers from each benchmark's official annotation format to evr1 records.

Field names follow the official releases as the lmms-eval 0.7.3 tasks read them (the Hugging Face
dataset rows, exported to JSON/JSONL where the release is Parquet); where the benchmark's own files
differ (MLVU `json/`, MMVU `validation.json`, Video-MMMU `data/<track>_video.json`), both shapes are
read. Each importer maps one row to record dicts (`id` without the benchmark prefix) with canonical
meta keys for the aggregation: `task`, `category` (a list where a question has several, as LVBench's),
`duration`, `format`, `dimension`, `track`, `setting`, `question_id`, ...
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from evr1.data.importers import strip_option_letters
from evr1.eval.benchmark import RowContext
from evr1.eval.official_formats import captioning_question, fine_aspect, mmmu_domain, mmmu_subject
from evr1.eval.official_videoreason import operation_start

logger = logging.getLogger("evr1.eval")

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# A letter answer: "(A)", "A", "A.", "A)" or "A:", then nothing or the option's text.
_LETTER_FORM = re.compile(r"\(([A-Z])\)\s*(.*)|([A-Z])(?:[.):]\s*(.*))?", re.DOTALL)
_EMBEDDED = re.compile(r"^\s*\(?([A-Z])[.)]\s*(.+?)\s*$")
# TempCompass caption matching: "Caption A: x", "Sentence A: x", "Option 1: x" (its three question templates).
_LABELLED = re.compile(r"^\s*(?:Caption|Sentence|Option)\s+([A-Z]|[1-9])\s*(?::\s*(.*?))?\s*$")

Row = Mapping[str, Any]


def option_list(value: Any) -> list[str]:
    """Option texts from a list ("A. x" or plain), a {"A": x} mapping, or "A. x\\nB. y" text."""
    if isinstance(value, Mapping):
        return [str(value[k]).strip() for k in sorted(value)]
    if isinstance(value, str):
        value = [line for line in value.splitlines() if line.strip()]
    if not isinstance(value, Sequence) or not value:
        raise ValueError(f"expected a list of options, got {value!r}")
    return strip_option_letters([str(o) for o in value])


def _normalised(text: str) -> str:
    """Option text compared loosely: case, inner spaces and trailing punctuation ignored."""
    return " ".join(text.casefold().split()).rstrip(" .。!?;")


def letter_of(answer: Any, options: Sequence[str]) -> str:
    """The option letter of an answer given as an index, the option text, or a letter form.

    Option text wins over a letter reading: first an exact match, then one after `_normalised`
    (so "A dog." is the option "A dog", never the letter A). A letter form is "A", "(A)", "A.",
    "A)" or "A:", alone or followed by that option's own text ("A. red"). An answer whose loose text
    match and letter reading name different options ("B" among options "b", "a") is an error.
    """
    if isinstance(answer, int) and not isinstance(answer, bool):
        if not 0 <= answer < len(options):
            raise ValueError(f"answer index {answer} is out of range for {len(options)} options")
        return LETTERS[answer]
    text = str(answer).strip()
    for i, option in enumerate(options):
        if text == str(option).strip():
            return LETTERS[i]
    loose = [i for i, option in enumerate(options) if _normalised(str(option)) == _normalised(text)]
    letter = _letter_reading(text, options)
    if len(loose) == 1 and letter not in (None, LETTERS[loose[0]]):
        raise ValueError(f"answer {answer!r} reads as option {LETTERS[loose[0]]} by its text but as the letter {letter}"
                         f" ({list(options)!r})")
    if len(loose) == 1:
        return LETTERS[loose[0]]
    if letter is not None and not loose:
        return letter
    raise ValueError(f"answer {answer!r} is not one of {len(options)} options ({list(options)!r}) nor a letter of one")


def _letter_reading(text: str, options: Sequence[str]) -> str | None:
    """The letter of a letter form naming one of `options` (see `letter_of`), else None."""
    form = _LETTER_FORM.fullmatch(text)
    if form is None:
        return None
    letter, rest = (form.group(1), form.group(2)) if form.group(1) else (form.group(3), form.group(4))
    index = LETTERS.index(letter)
    if index < len(options) and (not rest or _normalised(rest) == _normalised(str(options[index]))):
        return letter
    return None


def labelled_option(line: str) -> tuple[str, str] | None:
    """(letter, text) of an option line "A. x", "(A) x", "Caption A: x", "Sentence A: x" or "Option 1: x"
    (text "" for a bare label such as "Caption A"); None for any other line."""
    labelled = _LABELLED.match(line)
    if labelled:
        label = labelled.group(1)
        return (LETTERS[int(label) - 1] if label.isdigit() else label), labelled.group(2) or ""
    embedded = _EMBEDDED.match(line)
    return (embedded.group(1), embedded.group(2)) if embedded else None


def split_embedded(question: str) -> tuple[str, list[str]]:
    """A question whose options follow it as lines ("(A) x", "A. x", "Caption A: x", "Sentence A: x",
    "Option 1: x"; see `labelled_option`): (question, option texts)."""
    stem, options = [], []
    for line in question.splitlines():
        option = labelled_option(line)
        if option and option[1] and option[0] == LETTERS[len(options)]:
            options.append(option[1])
        elif not options:
            stem.append(line)
    if len(options) < 2:
        raise ValueError(f"question holds no lettered options: {question[:80]!r}")
    return "\n".join(stem).strip(), options


def video(ctx: RowContext, name: str, start: float | None = None, end: float | None = None) -> dict[str, Any]:
    media: dict[str, Any] = {"kind": "video", "path": ctx.media(name)}
    if start is not None:
        media["start"] = float(start)
    if end is not None:
        media["end"] = float(end)
    return media


def mc(rid: Any, question: str, options: list[str], answer: Any, media: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """A multiple-choice record dict."""
    return {
        "id": str(rid), "problem": str(question).strip(), "problem_type": "multiple_choice",
        "answer": letter_of(answer, options), "options": options, "media": media,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def plain(rid: Any, question: str, ptype: str, answer: Any, media: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """A non-choice record dict."""
    return {
        "id": str(rid), "problem": str(question).strip(), "problem_type": ptype, "answer": answer, "media": media,
        "meta": {k: v for k, v in meta.items() if v is not None},
    }


def _mp4(name: Any) -> str:
    name = str(name)
    return name if "." in name.rsplit("/", 1)[-1] else f"{name}.mp4"


# -- general video QA ---------------------------------------------------------------------------


def videomme(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"],
               [video(ctx, _mp4(row["videoID"]))], duration=row.get("duration"), task=row.get("task_type"),
               domain=row.get("domain"), category=row.get("sub_category"))]


def videomme_v2(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """`level`, `second_head` and `third_head` label the question; a group takes its last question's (the official rule)."""
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"],
               [video(ctx, _mp4(row["video_id"]))], group_id=str(row["video_id"]), question_id=str(row["question_id"]),
               group_type=row["group_type"], group_structure=row.get("group_structure"), level=row.get("level"),
               second_head=row.get("second_head"), third_head=row.get("third_head"))]


def mvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """One row of `json/<task>.json`: the task is the file name; `start`/`end` clip the video."""
    options = [str(c) for c in row["candidates"]]
    rid = row.get("id", f"{ctx.stem}/{ctx.item}")
    return [mc(rid, row["question"], options, row["answer"], [video(ctx, row["video"], row.get("start"), row.get("end"))],
               task=ctx.stem)]


def tempcompass(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Rows of `<format>.json` (multi-choice, yes_no, caption_matching, captioning): lmms-eval's flat rows (`video_id`,
    `dim`, `question`, `answer`), or the file as the authors release it (`questions/<format>.json` of
    github.com/llyx97/TempCompass): one object `{video_id: {dimension: [question, ...]}}`, ids
    `<format>/<video_id>/<dimension>_<n>`."""
    if "video_id" not in row and row and all(isinstance(v, Mapping) for v in row.values()):
        return [record for vid, dims in row.items() for dim, items in dims.items()
                for i, item in enumerate(items if isinstance(items, list) else [items])
                for record in _tempcompass_row({**item, "video_id": vid, "dim": dim, "id": f"{dim}_{i}"}, ctx, True)]
    return _tempcompass_row(row, ctx)


def _tempcompass_row(row: Row, ctx: RowContext, released: bool = False) -> list[dict[str, Any]]:
    """One question; `released`: from the authors' nested file, whose captioning question takes its multi-choice
    question from `multi-choice.json` beside it (lmms-eval's rows carry `mc_question` / `mc_answer`). The fine-grained
    aspect comes from the benchmark folder's `meta_info.json`, where there is one."""
    fmt, media, dim = ctx.stem, [video(ctx, _mp4(row["video_id"]))], row.get("dim")
    rid = f"{fmt}/{row['video_id']}/{row.get('id', ctx.item)}"
    meta = {"format": fmt, "dimension": dim, "fine_aspect": fine_aspect(ctx.file, str(row["video_id"]), str(dim))}
    if fmt != "captioning":  # the official matching rules and judge prompt read them as released
        meta |= {"released_question": str(row["question"]), "released_answer": str(row["answer"])}
    if fmt == "yes_no":
        return [plain(rid, row["question"], "boolean", str(row["answer"]).strip().lower().rstrip("."), media, **meta)]
    if fmt == "captioning":  # the official judge answers the video's first multi-choice question from the caption
        if released:
            meta |= captioning_question(ctx.file, str(row["video_id"]), str(dim))
        elif "mc_question" in row:
            meta |= {"mc_question": str(row["mc_question"]), "mc_answer": str(row["mc_answer"])}
        return [plain(rid, row["question"], "open_ended", row["answer"], media, **meta)]
    question, options = split_embedded(row["question"])
    label = labelled_option(str(row["answer"]))  # caption matching answers with its option line ("Option 2: x")
    return [mc(rid, question, options, label[0] if label else row["answer"], media, **meta)]


def motionbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    question, options = (row["question"], option_list(row["options"])) if row.get("options") else split_embedded(row["question"])
    return [mc(row.get("uid", row.get("id")), question, options, row["answer"], [video(ctx, row["video_path"])],
               category=row.get("question_type"))]


def lvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """`question_type` is a list: the question counts under each of its types, as in the official
    `compute_accuracy.py` of github.com/THUDM/LVBench (the overall counts it once)."""
    question, options = (row["question"], option_list(row["options"])) if row.get("options") else split_embedded(row["question"])
    qtype = row.get("question_type")
    return [mc(row["uid"], question, options, row["answer"], [video(ctx, row["video_path"])],
               category=[str(t) for t in qtype] if isinstance(qtype, list) and qtype else qtype or None)]


def longvideobench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["id"], row["question"], [str(c) for c in row["candidates"]], int(row["correct_choice"]),
               [video(ctx, row["video_path"])], duration=row.get("duration_group"), category=row.get("question_category"))]


MLVU_GENERATION = {"subPlot": "sub-scene captioning", "summary": "video summary"}  # question_type -> G-Avg task


def mlvu(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row of the official `json/<n>_<task>.json` (`video` under `video/<n>_<task>/`, `question_type` the task),
    or of lmms-eval's MLVU_dev export (`video_name` under `video/`, `task_type`). The open-ended generation
    tasks (`8_sub_scene.json`, `9_summary.json`: MLVU's G-Avg, judged by GPT-4 officially) are not scored:
    their rows are skipped, with one warning per file."""
    if "video_name" in row:
        rid = row.get("question_id", f"{row['task_type']}/{row['video_name']}/{ctx.item}")
        return [mc(rid, row["question"], [str(c) for c in row["candidates"]], row["answer"], [video(ctx, row["video_name"])],
                   task=row["task_type"])]
    task = row["question_type"]
    if task in MLVU_GENERATION and not row.get("candidates"):
        if ctx.item == 1:
            logger.warning("MLVU %s: skipping its open-ended %s rows (G-Avg); evr1 scores MLVU's multiple-choice M-Avg only",
                           ctx.file.name, MLVU_GENERATION[task])
        return []
    return [mc(f"{ctx.stem}/{ctx.item}", row["question"], [str(c) for c in row["candidates"]], row["answer"],
               [video(ctx, f"{ctx.stem}/{row['video']}")], task=task, duration=row.get("duration"))]


def video_holmes(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    return [mc(row["Question ID"], row["Question"], option_list(row["Options"]), row["Answer"],
               [video(ctx, _mp4(row["video ID"]))], category=row.get("Question Type"))]


def minerva(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    options = [str(row[f"answer_choice_{i}"]) for i in range(10) if f"answer_choice_{i}" in row]
    return [mc(row["key"], row["question"], options, int(row["answer_id"]), [video(ctx, _mp4(row["video_id"]))],
               category=row.get("question_type") or row.get("category"))]


def longvideo_reason(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row of LongVideo-Reason's `test.jsonl`: options inside `problem`, `answer` as `<answer>X</answer>`,
    `videos` relative to the folder holding `longvila_videos/`, `problem_type` the category (e.g. "goal")."""
    question, options = split_embedded(row["problem"])
    answer = re.sub(r"</?answer>", "", str(row["answer"])).strip()
    return [mc(row["problem_id"], question, options, answer, [video(ctx, row["videos"])], category=row.get("problem_type"))]


def odvbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row as the authors' lmms-eval task reads it (MCG-NJU/StreamForest `lmms_eval/tasks/odvbench/utils.py`):
    `candidates` (option texts), `answer` (the right one's text), `video` (clipped to `start`-`end` when given),
    `task`, `subtask`, `subsubtask`; or the assumed form `options` ("A. x") with a letter `answer`. Without an `id`
    the row's position names it."""
    options = [str(c) for c in row["candidates"]] if "candidates" in row else option_list(row["options"])
    clip = video(ctx, row["video"], row.get("start"), row.get("end"))
    return [mc(row.get("id", ctx.item), row["question"], options, row["answer"], [clip], task=row.get("task"),
               subtask=row.get("subtask"), subsubtask=row.get("subsubtask"))]


def livesports(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A LiveSports-3K QA row as the LiveCC evaluation code reads it: four "A. x" options, a letter answer,
    `q_type`, `OCR` (0/1), and the question's span `video_start`/`video_end` of the full video `<video_id>.mp4`."""
    media = [video(ctx, _mp4(row["video_id"]), row.get("video_start"), row.get("video_end"))]
    return [mc(row["question_id"], row["question"], option_list(row["options"]), row["answer"], media,
               category=row.get("q_type"), ocr=row.get("OCR"))]


# -- reasoning, knowledge, math -----------------------------------------------------------------


def _mc_or_open(rid: Any, question: str, choices: Any, answer: Any, media: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    if choices:
        return mc(rid, question, option_list(choices), answer, media, **meta)
    return plain(rid, question, "open_ended", answer, media, **meta)


def _without_choices(question: str, options: Sequence[str]) -> str:
    """The question stem, where VCR-Bench repeats the choices after it ("...?A. x\nB. y")."""
    at = question.find(f"A. {options[0]}")
    return question[:at] if at > 0 else question


def vcrbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A VCR-Bench row: `multiple-choice` flag, `choices` {"A".."D"} (empty strings when open-ended), `answer`
    a letter or free text, `dimension`, `duration`, `reasoning` (the annotated steps, kept as released for the official
    CoT score); the question is kept as released in meta `released_question`, for the official judge prompts (the MC
    question text repeats the choices)."""
    media = [video(ctx, row["video_path"])]
    meta = {"category": row.get("dimension"), "duration": row.get("duration"), "reasoning": row.get("reasoning"),
            "released_question": str(row["question"])}
    if row["multiple-choice"]:
        choices = row["choices"]
        options = [str(choices[k]).strip() for k in sorted(choices) if str(choices[k]).strip()]
        return [mc(row["id"], _without_choices(str(row["question"]), options), options, row["answer"], media,
                   question_kind="multiple-choice", **meta)]
    return [plain(row["id"], row["question"], "open_ended", row["answer"], media, question_kind="open-ended", **meta)]


VIDEOREASON_SKILLS = {  # `dim` -> (skill, level), as in the VideoReasonBench paper and its utils/show_results.py
    "order_operation": ("Recall Order", 1), "counting_operation": ("Recall Count", 1),
    "order_state": ("Infer State", 2), "counting_state": ("Infer State", 2), "comparison_state": ("Compare State", 2),
    "prediction_state": ("Predict State", 3), "prediction_operation": ("Predict Operation", 3),
}


def videoreasonbench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """One `questions/<demo>.json` object (question key -> row), or several merged with `<demo>_<key>` keys as
    the official loader does; `video` is "videos/<demo>/<name>.mp4" (the media folder holds `<demo>/`). A Predict
    Operation row keeps the state its question starts from (`op_state`, `op_coord`) for the official simulation."""
    out = []
    for key, item in row.items():
        if item["dim"] not in VIDEOREASON_SKILLS:
            raise ValueError(f"question {key!r}: unknown VideoReasonBench dim {item['dim']!r}; known: {sorted(VIDEOREASON_SKILLS)}")
        path = str(item["video"]).removeprefix("videos/")
        demo = PurePath(path).parent.name
        skill, level = VIDEOREASON_SKILLS[item["dim"]]
        rid = key if key.startswith(f"{demo}_") else f"{demo}_{key}"
        try:
            start = operation_start(demo, item) if item["dim"] == "prediction_operation" else {}
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ValueError(f"question {key!r}: a prediction_operation row needs its released 'states' (and the"
                             f" grid's 'coords', 'num_state'): {exc!r}") from None
        out.append(plain(rid, item["question"], "open_ended", item["answer"], [video(ctx, path)],
                         category=skill, level=level, demo=demo, num_operation=item.get("num_operation"),
                         num_state=item.get("num_state"), **start))
    return out


def _dataset_file(name: str, ctx: RowContext) -> str:
    """A media name relative to the media folder: the path inside the dataset of a Hugging Face URL
    (".../resolve/main/videos/Art/0.mp4" -> "Art/0.mp4"), without a leading media-folder name."""
    found = re.search(r"/resolve/[^/]+/(.+)$", name)
    return (found.group(1) if found else name).removeprefix(f"{ctx.benchmark.media_dir}/")


def mmvu(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """A row of the official `validation.json` (`video`: the dataset URL of `videos/<Subject>/<n>.mp4`) or of
    lmms-eval's MMVU export (`video_path`)."""
    kind = row.get("question_type", "multiple-choice")
    meta = row.get("metadata") or {}
    if "video" not in row and "video_path" not in row:
        raise KeyError("video (official validation.json) or video_path (lmms-eval rows)")
    name = _dataset_file(str(row.get("video", row.get("video_path"))), ctx)
    return [_mc_or_open(row["id"], row["question"], row.get("choices") if kind == "multiple-choice" else None,
                        row["answer"], [video(ctx, name)], question_kind=kind, category=meta.get("subject"))]


VIDEO_MMMU_TRACKS = ("Perception", "Comprehension", "Adaptation")


def video_mmmu(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Rows of `<Track>.json` as lmms-eval's VideoMMMU splits (the track is the file name; Adaptation may add an
    `image`), or the official `data/<track>_video.json` saved as `<Track>.json`: one object `{"<Track>": {index: row}}`
    (no `image`: the video's last frame shows it). Ids are `<Track>/<id>` (the tracks share their ids)."""
    nested = [key for key in row if key in VIDEO_MMMU_TRACKS and isinstance(row[key], Mapping)]
    if nested and len(row) == 1:
        return [_video_mmmu_item(item, ctx, nested[0]) for item in row[nested[0]].values()]
    if "id" not in row:
        raise KeyError(f"id (a row of lmms-eval's Video-MMMU split, or one object {{\"{ctx.stem}\": {{index: row}}}} "
                       "as the official data/<track>_video.json)")
    return [_video_mmmu_item(row, ctx, ctx.stem)]


def _video_mmmu_item(row: Row, ctx: RowContext, track: str) -> dict[str, Any]:
    media = [video(ctx, _mp4(row["id"]))]
    if row.get("image"):
        media.append({"kind": "image", "path": ctx.media(row["image"])})
    rid = f"{track}/{row['id']}"
    subject = mmmu_subject(row["id"])
    domain = mmmu_domain(subject)
    meta = {"track": track, "track_subject": subject and f"{track}: {subject}", "track_domain": domain and f"{track}: {domain}"}
    if row.get("options"):
        return mc(rid, row["question"], option_list(row["options"]), row["answer"], media, **meta)
    return plain(rid, row["question"], "numerical", row["answer"], media, **meta)


def videomathqa(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """Rows of `mcq.json` (5 options) and `mbin.json` (binary pairs sharing a `question_id`)."""
    setting = ctx.stem
    rid = f"{setting}/{row['question_id']}" + (f"/{row['pair']}" if setting == "mbin" else "")
    return [mc(rid, row["question"], option_list(row["options"]), row["answer"], [video(ctx, _mp4(row["videoID"]))],
               setting=setting, question_id=str(row["question_id"]), category=row.get("category"), duration=row.get("duration"))]


def vsibench(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    media = [video(ctx, f"{row['dataset']}/{row['scene_name']}.mp4")]
    task, _, level = str(row["question_type"]).partition("object_rel_direction_")
    meta = {"task": "object_rel_direction", "difficulty": level} if level else {"task": task}
    meta["dataset"] = row.get("dataset")
    if row.get("options"):
        return [mc(row["id"], row["question"], option_list(row["options"]), row["ground_truth"], media, **meta)]
    return [plain(row["id"], row["question"], "regression", float(row["ground_truth"]), media, **meta)]


# -- grounding ----------------------------------------------------------------------------------


def charades_question(caption: str) -> str:
    """The grounding question of a Charades-STA sentence."""
    return f'Find the moment in the video that matches: "{caption.strip()}"'


def charades_sta(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    start, end = (float(t) for t in row["timestamp"])
    rid = row.get("id", f"{PurePath(row['video']).stem}/{ctx.item}")
    question = charades_question(str(row["caption"]))
    meta = {"duration": row.get("duration"), "video": str(row["video"]), "caption": str(row["caption"])}
    return [plain(rid, question, "temporal_grounding", {"time": [start, end]}, [video(ctx, row["video"])], **meta)]


HCSTVG_SECONDS = 20.0  # every HC-STVG clip lasts 20 s; `img_num` = fps * 20 (the HC-STVG README)


def stvg(row: Row, ctx: RowContext) -> list[dict[str, Any]]:
    """An HC-STVG (v1/v2) file: one object keyed by video file; `bbox` holds `[x, y, w, h]` for each frame from
    `st_frame` (1-based) on; one reference box per whole second of the span is kept, as `[x1, y1, x2, y2]`."""
    out = []
    for name, ann in row.items():
        fps = float(ann["img_num"]) / HCSTVG_SECONDS
        boxes: dict[str, list[float]] = {}
        for offset, (x, y, w, h) in enumerate(ann["bbox"]):
            second = (int(ann["st_frame"]) - 1 + offset) / fps
            if abs(second - round(second)) < 0.5 / fps:
                boxes[f"{round(second):g}"] = [x, y, x + w, y + h]
        answer = {"time": [float(ann["st_time"]), float(ann["ed_time"])], "boxes": boxes}
        caption = str(ann.get("caption", ann.get("English", ""))).strip()
        question = f'Find when and where this happens, and track the person: "{caption}"'
        height, width = ann["img_size"] if "img_size" in ann else (ann.get("height"), ann.get("width"))
        out.append(plain(PurePath(name).stem, question, "spatial_temporal_grounding", answer, [video(ctx, name)],
                         height=height, width=width))
    return out


# -- streaming ------------------------------------------------------------------------------------

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
