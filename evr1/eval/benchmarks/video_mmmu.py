"""Video-MMMU: knowledge from lecture videos in three tracks, Perception, Comprehension and Adaptation (multiple
choice with 2-14 options, and numeric answers).

The official headline is the mean of the three track accuracies (the VideoMMMU leaderboard); answers are read as the
authors' own copy of the lmms-eval task reads them (the leaderboard's numbers come from it): multiple choice by the MMMU
parser (`video_mmmu_choice`), numeric answers by the MMMU open-answer parser, both restated here. lmms-eval 0.7.3's
stock task reads multiple choice otherwise (its shared `extract_mcq_answer`: "A or B" reads A, "" is wrong).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evr1.eval import aggregate as agg
from evr1.eval.annotation_rows import mc, mp4_file, option_list, plain, video
from evr1.eval.definition import Benchmark, FieldError, Records, RowContext, easyvideor1_record, full_id
from evr1.eval.lmms.doc_fields import answer_letter, is_mc, option_texts, required, source_id
from evr1.eval.lmms.scoring import official_results
from evr1.eval.protocols import Official
from evr1.eval.readers import visible
from evr1.problem_types import ProblemType as PT

if TYPE_CHECKING:
    from evr1.data.records import Record

Row = Mapping[str, Any]


# -- importer: official annotation rows --------------------------------------------------------------------------------


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
    media = [video(ctx, mp4_file(row["id"]))]
    if row.get("image"):
        media.append({"kind": "image", "path": ctx.media(row["image"])})
    rid = f"{track}/{row['id']}"
    subject = mmmu_subject(row["id"])
    domain = mmmu_domain(subject)
    meta = {"track": track, "track_subject": subject and f"{track}: {subject}", "track_domain": domain and f"{track}: {domain}"}
    if row.get("options"):
        return mc(rid, row["question"], option_list(row["options"]), row["answer"], media, **meta)
    return plain(rid, row["question"], "numerical", row["answer"], media, **meta)


# -- importer: EasyVideoR1 rows ----------------------------------------------------------------------------------------


# EasyVideoR1's videommmu.json / videommmu_with_image.json: problem ids 1-300, 301-600, 601-900 are the tracks in
# alphabetical order (the first block holds the question images and the numeric questions: Adaptation).
VIDEO_MMMU_BLOCKS = ("Adaptation", "Comprehension", "Perception")
VIDEO_MMMU_BLOCK = 300


def video_mmmu_easyvideor1(row: Row, ctx: RowContext) -> Records:
    """The question image (`image_path`) follows the video, as in the official Adaptation rows; the track comes
    from the problem id's block (none outside 1..900: no per-track table)."""
    image = {"videos": [row["path"]], "images": [row["image_path"]]} if row.get("image_path") and row.get("path") else {}
    record = easyvideor1_record({**row, **image}, ctx)
    pid = row.get("problem_id")
    if isinstance(pid, int) and 1 <= pid <= VIDEO_MMMU_BLOCK * len(VIDEO_MMMU_BLOCKS):
        track = VIDEO_MMMU_BLOCKS[(pid - 1) // VIDEO_MMMU_BLOCK]
        if row.get("image_path") and track != "Adaptation":
            raise FieldError("track", f"record {full_id(record, ctx)!r} has a question image, so it is an Adaptation question,"
                             f" but its problem_id {pid} places it in {track} (EasyVideoR1's blocks of {VIDEO_MMMU_BLOCK})")
        record["meta"].setdefault("track", track)
    return [record]


# -- official scorer ---------------------------------------------------------------------------------------------------


# The MMMU open-answer parser as lmms-eval's videommmu task (and the authors' copy of it) runs it.
MMMU_KEY_PHRASES = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ", "are ",
                    "in total ", "total ", "identify ", "recognize ", "calculated as ", "counted as ", "measured as ",
                    "observed as ", "concluded as ", "found to be ", "equals ", "determined to be ", "number of ",
                    "value is ", "adds up to ", "have ", "has ")


_MMMU_TRIVIAL = (":", ",", ".", "!", "?", ";", "'")
_GROUPED = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")  # 1,234,567
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")  # 1.5e3
_PLAIN = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")  # 12, 1.5, .5; not of the two above
MMMU_DROPPED = ("", "API Error")  # responses lmms-eval's aggregation leaves out (its parser returns "API Error")


def mmmu_key_parts(text: str) -> list[str]:
    """The parts of a response that may hold the answer: the text stripped, "." stripped, lower case, cut into lines
    (the official split also at ". " before a capital, which never fires on lower-case text); of each line, the
    shortest tail after one of the key phrases ("=" too on the last line), unless it is empty or one punctuation mark;
    with none, the whole text."""
    text = text.strip().strip(".").lower()
    lines = text.split("\n")
    parts = []
    for i, line in enumerate(lines):
        best: str | None = None
        for phrase in MMMU_KEY_PHRASES + (("=",) if i == len(lines) - 1 else ()):
            if phrase in line:
                tail = line.split(phrase)[-1].strip()
                if not best or len(tail) < len(best):
                    best = tail
        if best and best.strip() not in _MMMU_TRIVIAL:
            parts.append(best)
    return parts or [text]


def mmmu_numbers(text: str) -> list[str]:
    """The numbers written in `text`: comma-grouped ones, then scientific ones, then plain ones."""
    return _GROUPED.findall(text) + _SCIENTIFIC.findall(text) + _PLAIN.findall(text)


def mmmu_normalised(text: str) -> list[float | str]:
    """A number (commas removed; anything `float` reads, "inf" too) as a float rounded to 2 decimals; other text lower
    case, a single character padded to " x" and "x " (so that it matches only as a word's edge)."""
    text = text.strip()
    try:
        return [round(float(text.replace(",", "")), 2)]
    except ValueError:
        text = text.lower()
        return [" " + text, text + " "] if len(text) == 1 else [text]


def mmmu_open_right(response: str, answer: Any) -> bool:
    """Right when a normalised prediction (each key part, and each number in one) is a float equal to the normalised
    answer, or text containing it."""
    parts = mmmu_key_parts(response)
    preds = [v for p in parts + [n for part in parts for n in mmmu_numbers(part)] for v in mmmu_normalised(p)]
    gold = mmmu_normalised(str(answer))
    return any(any(isinstance(g, str) and g in p for g in gold) if isinstance(p, str) else p in gold for p in preds)


MMMU_NO_ANSWER = "No Answere Found"  # sic: what the authors' copy reads when it finds no letter (wrong, counted)


def video_mmmu_choice(response: str, options: Sequence[str]) -> str | None:
    """The letter the authors' copy (`parse_multi_choice_response`) reads among the options' letters; None for "" (its
    "API Error", left out of the aggregation; a response "API Error" too). The response, its ends stripped of , . ! ? ; : ' (each in turn),
    padded with a space each side, is searched for "X." and "X:"; if neither, "(X)"; if none, "X "; if none and it
    has over 5 words, an option's text (any case). One find wins; of several, the last one written (by "X." if any was
    found so, else "X:", else "(X)", else " X ", or by its text); none reads `MMMU_NO_ANSWER`. So "A or B" reads B."""
    if response in MMMU_DROPPED:
        return None
    for mark in ",.!?;:'":
        response = response.strip(mark)
    text = f" {response} "
    letters = [chr(ord("A") + i) for i in range(len(options))]
    found = [c for c in letters if f"{c}." in text] + [c for c in letters if f"{c}:" in text]
    pattern = "{}." if any(f"{c}." in text for c in letters) else "{}:"
    if not found:
        found, pattern = [c for c in letters if f"({c})" in text], "({})"
    if not found:
        found, pattern = [c for c in letters if f"{c} " in text], " {} "
    by_text = not found and len(text.split()) > 5
    if by_text:
        found = [c for c, option in zip(letters, options) if str(option).lower() in text.lower()]
    if not found:
        return MMMU_NO_ANSWER
    if by_text:
        where = [text.lower().rfind(str(options[letters.index(c)]).lower()) for c in found]
    else:
        where = [text.rfind(pattern.format(c)) for c in found]
    return found[where.index(max(where))]


def video_mmmu_item(row: Row) -> float | None:
    """Multiple choice: the letter the authors' copy reads (`video_mmmu_choice`; none: wrong, counted); numeric: the
    MMMU open-answer parser (`mmmu_open_right`); an empty response (a failed generation too) of either kind is dropped,
    as the authors' aggregation drops its "API Error"."""
    text = visible(row)
    if text in MMMU_DROPPED:
        return None
    if row.get("problem_type") != "multiple_choice":
        return float(mmmu_open_right(text, row["answer"]))
    return 1.0 if video_mmmu_choice(text, row.get("options") or []) == row["answer"] else 0.0


# The domains of the MMMU subjects, as lmms-eval 0.7.3's videommmu task groups its per-subject accuracies.
MMMU_DOMAINS = {
    "Art and Design": ("Art", "Art_Theory", "Design", "Music"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Health and Medicine": ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                            "Pharmacy", "Public_Health"),
    "Humanities and Social Science": ("History", "Literature", "Sociology", "Psychology"),
    "Tech and Engineering": ("Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
                             "Energy_and_Power", "Materials", "Mechanical_Engineering"),
}


_MMMU_DOMAIN_OF = {subject: domain for domain, subjects in MMMU_DOMAINS.items() for subject in subjects}


def mmmu_subject(rid: Any) -> str | None:
    """The subject an MMMU id names between its first segment and its final number ("dev_Art_Theory_12" ->
    "Art_Theory"), as lmms-eval's task reads it; None for an id of another form."""
    parts = str(rid).split("_")
    return "_".join(parts[1:-1]) if len(parts) >= 3 and parts[-1].isdigit() else None


def mmmu_domain(subject: str | None) -> str | None:
    """The domain of an MMMU subject; None for a subject outside the task's six domains."""
    return _MMMU_DOMAIN_OF.get(subject or "")


VIDEO_MMMU = Official(
    "Overall: mean of the Perception, Comprehension and Adaptation accuracies (answers read as the authors' copy of"
    " the lmms-eval task reads them: the MMMU multiple-choice and open-answer parsers, an empty answer dropped); tables"
    " by track, and within each track by domain and subject (the task's per-subject tables)",
    agg.macro("track", "track_domain", "track_subject", name="overall"), video_mmmu_item,
    source="EvolvingLMMs-Lab/VideoMMMU (HEAD 88b4ac3: README leaderboard, Overall = mean of the three tracks;"
           " lmms_eval/tasks/videommmu/utils.py, unchanged since cde7e56: parse_multi_choice_response l. 408-505,"
           " parse_open_response, eval_open, the API Error filter l. 240)",
)


# -- lmms-eval ---------------------------------------------------------------------------------------------------------


def lmms_doc(record: Record, row: Row) -> dict[str, Any]:
    doc = {"evr1_subset": required(record, "track"), "id": source_id(record).split("/", 1)[-1], "question": record.problem}  # official id, without our track prefix
    if is_mc(record):
        return {**doc, "options": option_texts(record), "answer": answer_letter(record), "question_type": "multiple-choice"}
    return {**doc, "options": [], "answer": str(record.answer), "question_type": "open"}


video_mmmu_process_results = official_results("mmmu_acc")


# -- fixtures ----------------------------------------------------------------------------------------------------------


FIXTURES: dict[str, Any] = {
    "Perception.json": [{"id": "p1", "question": "What is written?", "options": [f"opt {i}" for i in range(10)], "answer": "J"}],
    "Comprehension.json": [{"id": "c1", "question": "Compute the value.", "options": [], "answer": "42"}],
    "Adaptation.json": [{"id": "a1", "question": "Apply it to the image.", "options": ["x", "y"], "answer": "A",
                         "image": "a1.png"}],
}


BENCHMARK = Benchmark(
    name="video_mmmu",
    title="Video-MMMU",
    folder="video_mmmu",
    annotations=("Perception.json", "Comprehension.json", "Adaptation.json"),
    media_dir="videos",
    question_types=(PT.MULTIPLE_CHOICE, PT.NUMERICAL),
    metric="accuracy over all items, per track",
    aggregate=agg.accuracy("track"),
    importer=video_mmmu,
    lmms_task="video_mmmu",
    easyvideor1=video_mmmu_easyvideor1,
    official=VIDEO_MMMU,
    lmms_doc=lmms_doc,
    fixtures=FIXTURES,
)
