"""`evr1 data check`: every problem of a dataset, each naming its file and line.

Errors: records that break the schema (`scan_records`), reference answers their reward cannot read
(`evr1.rewards.reference_check`), temporal answers that are reversed or end after their clip,
record files that do not exist; media files that are missing or cannot be opened (the probe
opens each video's container, reads its frame count and rate and decodes its first frame with the
decoder given, PyAV by default as in training (`VideoSpec.decoder`), and decodes each image with
Pillow, as training does). Warnings: a multiple-choice question with no options anywhere, a curated
`offline_response` its reward scores below 1 — for the types whose reward is right or wrong
(multiple_choice, numerical, math, boolean, preference) only: the others are scored by similarity
(ROUGE, IoU, edit distance, tests passed), where a correct paraphrase or a slightly different box
scores below 1, so a score below 1 says nothing about whether the curated answer is right — and,
given an experiment's tokenizer and prompt settings, a prompt whose text alone is over
`rollout.max_prompt_tokens` (a run drops such a record as a data failure).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from evr1.data.decode import VideoInfo, probe_video, read_frames, read_image
from evr1.data.frame_sampling import FRAME_FACTOR, MediaError
from evr1.data.records import Located, MediaRef, Record, RecordError, record_files, scan_records
from evr1.errors import ConfigError, Evr1Error
from evr1.problem_types import ProblemType

Severity = Literal["error", "warning"]
_TIMED = (ProblemType.TEMPORAL_GROUNDING, ProblemType.SPATIAL_TEMPORAL_GROUNDING)
# Types whose default reward scores right (1) or wrong (0): only there a curated answer below 1 is wrong.
EXACT_TYPES = frozenset({ProblemType.MULTIPLE_CHOICE, ProblemType.NUMERICAL, ProblemType.MATH, ProblemType.BOOLEAN,
                         ProblemType.PREFERENCE})
REPORT_SUFFIXES = (".json", ".md")
_LISTED_OPTION = r"(?<![A-Za-z0-9])\(?{}[.):]\s*\S"


@dataclass(frozen=True)
class Problem:
    """One problem of a record file (line None: of the whole file)."""

    severity: Severity
    file: str
    line: int | None
    field: str | None
    message: str
    record: str | None = None

    def __str__(self) -> str:
        return str(RecordError(self.file, self.line, self.field, self.message))


@dataclass(frozen=True)
class MediaProblem:
    """A media file that is missing (`reason` "missing") or cannot be opened (a `MediaError` reason)."""

    path: str
    reason: str
    detail: str
    where: str  # records file:line of the first record that uses it
    record: str
    records: int  # how many records use it

    def __str__(self) -> str:
        what = "missing" if self.reason == "missing" else f"unreadable ({self.reason}: {self.detail})"
        more = f" and {self.records - 1} more records" if self.records > 1 else ""
        return f"{what}: {self.path}  <- {self.where} (record {self.record!r}){more}"


@dataclass
class CheckResult:
    files: list[str] = field(default_factory=list)
    records: int = 0
    valid: int = 0
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    problems: list[Problem] = field(default_factory=list)
    media: list[MediaProblem] = field(default_factory=list)
    probed: bool = True

    def of(self, severity: Severity) -> list[Problem]:
        return [p for p in self.problems if p.severity == severity]

    def media_of(self, missing: bool) -> list[MediaProblem]:
        return [m for m in self.media if (m.reason == "missing") == missing]


def probe_media(path: Path, kind: str, decoder: str = "pyav") -> VideoInfo | None:
    """Open a media file as training would, without decoding all of it; a video's info (None for an image).
    Raises `MediaError` (reasons as `evr1.data.decode`)."""
    if kind == "image":
        read_image(path)
        return None
    info = probe_video(path, decoder)
    if info.total_frames < FRAME_FACTOR:
        raise MediaError(str(path), "too_few_frames", f"video has {info.total_frames} frame(s); at least {FRAME_FACTOR} are needed")
    if not info.fps > 0:
        raise MediaError(str(path), "corrupt", f"video reports a frame rate of {info.fps}")
    read_frames(path, [0], decoder)
    return info


def clip_seconds(ref: MediaRef, video: VideoInfo | None) -> float | None:
    """The length of the clip a video reference shows (None: unknown without the video's own length)."""
    length = video.total_frames / video.fps if video is not None else None
    end = ref.end if length is None else min(ref.end, length) if ref.end is not None else length
    return end - (ref.start or 0.0) if end is not None else None


def answer_problems(record: Record, videos: dict[Path, VideoInfo], root: Path) -> list[tuple[Severity, str, str]]:
    """(severity, field, message) of a record's answer and options that are readable but wrong for their media."""
    from evr1.rewards.contract import RewardInput
    from evr1.rewards.grounding_parse import parse_interval

    found: list[tuple[Severity, str, str]] = []
    rid = f"(record {record.id!r})"
    if record.problem_type == ProblemType.MULTIPLE_CHOICE and not record.options and not _lists_options(record.problem):
        found.append(("warning", "options", ("multiple_choice record without options, and its problem lists none (A. ..., B. ...):"
                      f" the model is shown no choices and the reward takes any letter A-Z {rid}")))
    if record.problem_type not in _TIMED:
        return found
    pair = parse_interval(record.answer)
    if pair is None:
        return found  # unreadable: a reference error
    if pair[0] > pair[1]:
        found.append(("error", "answer", f"interval [{pair[0]:g}, {pair[1]:g}] s is reversed (start after end) {rid}"))
    ref = next((m for m in record.media if m.kind == "video"), None)
    video = videos.get(root / ref.path) if ref is not None else None
    length = clip_seconds(ref, video) if ref is not None else None
    if length is None:
        length = RewardInput.from_record(record, "").duration
    slack = 1 / video.fps if video is not None else 0.0  # one frame
    if length is not None and max(pair) > length + slack:
        found.append(("error", "answer", (f"interval [{pair[0]:g}, {pair[1]:g}] s ends after the clip, which is {length:g} s long"
                      f" (times count from the clip's start) {rid}")))
    return found


def _lists_options(problem: str) -> bool:
    return all(re.search(_LISTED_OPTION.format(letter), problem) for letter in "AB")


def _files(paths: Sequence[Path], result: CheckResult) -> list[Path]:
    """The record files of `paths`; a path that names none is a problem (an error when none is left)."""
    files: list[Path] = []
    first: Evr1Error | None = None
    for path in paths:
        try:
            files.extend(record_files(path))
        except Evr1Error as exc:
            first = first or exc
            result.problems.append(Problem("error", str(path), None, None, str(exc).removeprefix(f"{path}: ")))
    if not files and first is not None:
        raise first
    return files


def check_data(
    paths: Sequence[Path], data_root: Path | None = None, *, probe: bool = True, workers: int = 4,
    progress: Callable[[int], Any] | None = None, decoder: str = "pyav",
    prompt_tokens: Callable[[Record], int] | None = None, max_prompt_tokens: int | None = None,
    columns: dict[str, str] | None = None,
) -> CheckResult:
    """Every problem of the record files (or folders) `paths`, in file and line order; see the module doc.

    `progress(total)` returns a tqdm-like bar (`update`, `close`) for the media probe; `decoder` opens the videos.
    With `prompt_tokens` (a record's prompt length without its media tokens) and `max_prompt_tokens`, a record
    over the limit is a warning: a run drops it as a data failure. `columns`: record field -> the files' column.
    """
    from evr1.rewards.reference_check import offline_warnings, reference_errors

    result = CheckResult(probed=probe)
    files = _files(paths, result)
    result.files = [str(f) for f in files]
    records: list[tuple[Located, Record]] = []
    for where, found in scan_records(files, columns):
        if isinstance(found, Record):
            records.append((where, found))
            result.counts[found.problem_type.value, found.modality] += 1
        else:
            result.problems += [Problem("error", str(e.file), e.line, e.field, e.message) for e in found]
    result.records = len(records)
    users: dict[tuple[Path, str], list[tuple[Located, Record]]] = {}
    for where, record in records:
        root = data_root if data_root is not None else where.file.parent
        for ref in record.media:
            users.setdefault((root / ref.path, ref.kind), []).append((where, record))
    videos = _check_media(users, result, probe, workers, progress, decoder)

    def add(severity: Severity, i: int, field_name: str, message: str | None) -> None:
        if message:
            where, record = records[i]
            result.problems.append(Problem(severity, str(where.file), where.line, field_name, message, record.id))

    unreadable = reference_errors([r for _, r in records])
    for i, message in enumerate(unreadable):
        add("error", i, "answer", message)
    readable = [i for i, message in enumerate(unreadable) if message is None]
    exact = [i for i in readable if records[i][1].problem_type in EXACT_TYPES]
    for i, message in zip(exact, offline_warnings([records[i][1] for i in exact])):
        add("warning", i, "offline_response", message)
    for i in readable:
        where, record = records[i]
        for severity, field_name, message in answer_problems(record, videos, data_root if data_root is not None else where.file.parent):
            add(severity, i, field_name, message)
    if prompt_tokens is not None and max_prompt_tokens is not None:
        for i, (_, record) in enumerate(records):
            add("warning", i, "problem", prompt_warning(record, prompt_tokens(record), max_prompt_tokens))
    order = {f: k for k, f in enumerate(dict.fromkeys([*map(str, paths), *result.files]))}
    result.problems.sort(key=lambda p: (order.get(p.file, len(order)), p.line or 0))
    bad = {p.record for p in result.problems if p.severity == "error" and p.record is not None}
    result.valid = len(records) - len(bad)
    return result


def prompt_warning(record: Record, length: int, limit: int) -> str | None:
    """Why a record whose prompt, less its media tokens, has `length` tokens is dropped by a run (None: it fits)."""
    if length <= limit:
        return None
    what = "its media tokens come on top" if record.media else "it has no media"
    return (f"the prompt has {length} tokens ({what}), over rollout.max_prompt_tokens={limit}: a run drops this record"
            f" as a data failure (record {record.id!r})")


def _check_media(users: dict[tuple[Path, str], list[tuple[Located, Record]]], result: CheckResult, probe: bool,
                 workers: int, progress: Callable[[int], Any] | None, decoder: str) -> dict[Path, VideoInfo]:
    """Record missing (and, probing, unreadable) media in `result`; returns the info of the videos probed."""
    present = [key for key in users if key[0].is_file()]
    failed: dict[tuple[Path, str], MediaError] = {
        key: MediaError(str(key[0]), "missing", "file not found") for key in users if not key[0].is_file()
    }
    videos: dict[Path, VideoInfo] = {}
    if probe and present:
        bar = progress(len(present)) if progress is not None else None
        with ThreadPoolExecutor(max(1, workers)) as pool:
            for key, outcome in zip(present, pool.map(lambda key: _probe_one(key, decoder), present)):
                if isinstance(outcome, MediaError):
                    failed[key] = outcome
                elif outcome is not None:
                    videos[key[0]] = outcome
                if bar is not None:
                    bar.update(1)
        if bar is not None:
            bar.close()
    for key, exc in sorted(failed.items(), key=lambda item: _first_use(users[item[0]])):
        where, record = users[key][0]
        result.media.append(MediaProblem(str(key[0]), exc.reason, exc.detail, f"{where.file}:{where.line}", record.id, len(users[key])))
    return videos


def _first_use(uses: list[tuple[Located, Record]]) -> tuple[str, int]:
    return str(uses[0][0].file), uses[0][0].line


def _probe_one(key: tuple[Path, str], decoder: str) -> VideoInfo | MediaError | None:
    try:
        return probe_media(*key, decoder)
    except MediaError as exc:
        return exc


def check_report_path(out: Path) -> None:
    """Refuse (`ConfigError`) a report path that cannot be written: not .json or .md, a folder, or under a file.
    Call it before checking, so that a bad `--out` does not wait for the whole probe."""
    if out.suffix not in REPORT_SUFFIXES:
        raise ConfigError(f"--out {out}: the report is .json or .md")
    if out.is_dir():
        raise ConfigError(f"--out {out}: is a folder; name a .json or .md file")
    parent = next(p for p in out.absolute().parents if p.exists())  # the root always exists
    if not parent.is_dir():
        raise ConfigError(f"--out {out}: {parent} is a file, not a folder")


def write_report(result: CheckResult, out: Path) -> Path:
    """Every problem, as JSON (`.json`) or Markdown (`.md`); missing folders of `out` are made."""
    check_report_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_report_text(result, out.suffix), encoding="utf-8")
    except OSError as exc:
        raise Evr1Error(f"--out {out}: cannot write the report ({exc.strerror or exc})") from None
    return out


def _report_text(result: CheckResult, suffix: str) -> str:
    summary = {"files": result.files, "records": result.records, "valid": result.valid, "media_probed": result.probed,
               "errors": len(result.of("error")), "warnings": len(result.of("warning")),
               "missing_media": len(result.media_of(True)), "unreadable_media": len(result.media_of(False))}
    if suffix == ".json":
        counts = [{"problem_type": p, "modality": m, "records": n} for (p, m), n in sorted(result.counts.items())]
        body = {**summary, "counts": counts, "problems": [asdict(p) for p in result.problems],
                "media": [asdict(m) for m in result.media]}
        return json.dumps(body, indent=1, ensure_ascii=False) + "\n"
    lines = ["# evr1 data check", "", *(f"- {k.replace('_', ' ')}: {v}" for k, v in summary.items() if k != "files"),
             "", "Files: " + ", ".join(f"`{f}`" for f in result.files)]
    for title, items in (("Errors", result.of("error")), ("Warnings", result.of("warning")), ("Media", result.media)):
        if items:
            lines += ["", f"## {title} ({len(items)})", "", *(f"- {item}" for item in items)]
    return "\n".join(lines) + "\n"
