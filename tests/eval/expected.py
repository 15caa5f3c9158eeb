"""Scripted responses for every fixture benchmark (in record order) and the hand-computed results.

Each entry: responses in the order the benchmark's records load, the expected headline score and
metrics (percent), selected breakdowns, and how many samples are unparsed. The LLM judge (see
verdict_judge.py) replies to each non-empty open-ended answer with its verdict in `VERDICTS`, scored
1 (correct) or 0 (incorrect).
"""

from __future__ import annotations

from typing import Any

STVG_ST1 = '{"time": [1, 3], "boxes": {"1": [10, 10, 30, 30], "2": [10, 10, 30, 30], "3": [10, 10, 30, 30]}}'
STVG_ST2 = '{"time": [0, 1], "boxes": {"0": [0, 0, 32, 24], "1": [0, 0, 32, 24]}}'

# The judge's reply to each open-ended answer of CASES (the only ones it is sent).
VERDICTS = {"It moves to the left.": "incorrect", "(a1, b2), (c2, b1), (a3, c1)": "Correct.", "combustion": "**correct**"}

CASES: dict[str, dict[str, Any]] = {
    # 001-1 right, 001-2 wrong, 002-1 empty (unparsed): 1/3.
    "videomme": {"responses": ["A", "The answer is B", ""], "score": 100 / 3, "unparsed": 1,
                 "breakdowns": {"duration": {"short": (50.0, 2), "long": (0.0, 1)},
                                "task": {"Counting Problem": (50.0, 2), "Object Recognition": (0.0, 1)}}},
    # relevance group 3/4 right -> 9/16; logic [1,[2,3],4] right = [T, F, T, T] -> chain 2 -> 4/12.
    "videomme_v2": {"responses": ["A", "B", "C", "A", "E", "A", "G", "H"], "score": 100 * (9 / 16 + 4 / 12) / 2,
                    "metrics": {"accuracy": 75.0, "relevance_score": 56.25, "logic_score": 100 * 4 / 12}},
    # action_sequence 1/2, object_shuffle 2/3 ("Z" is out of range: unparsed): mean of tasks 7/12, items 3/5.
    "mvbench": {"responses": ["A", "B", "B", "(A)", "Z"], "score": 100 * (1 / 2 + 2 / 3) / 2, "unparsed": 1,
                "metrics": {"accuracy": 60.0}, "breakdowns": {"task": {"action_sequence": (50.0, 2), "object_shuffle": (200 / 3, 3)}}},
    # files: caption_matching (A), multi-choice (B, A), yes_no (yes, no).
    "tempcompass": {"responses": ["A", "B", "B", "yes", "yes"], "score": 60.0,
                    "breakdowns": {"format": {"caption_matching": (100.0, 1), "multi-choice": (50.0, 2), "yes_no": (50.0, 2)},
                                   "dimension": {"direction": (100.0, 2), "order": (100.0, 1), "speed": (0.0, 2)}}},
    "motionbench": {"responses": ["C", "B"], "score": 50.0},
    # 102 is typed ["entity recognition", "reasoning"]: it counts under both types (the official per-type rule), once overall.
    "lvbench": {"responses": ["D", "<answer>B</answer>", "C"], "score": 200 / 3,
                "breakdowns": {"category": {"entity recognition": (100.0, 1), "event understanding": (100.0, 1),
                                            "key information retrieval": (0.0, 1), "reasoning": (100.0, 1)}}},
    # lvb2 has four options: "E" is out of range (unparsed).
    "longvideobench": {"responses": ["E", "E"], "score": 50.0, "unparsed": 1},
    # plotQA 1/2, count 1/1: M-Avg 75, items 2/3.
    "mlvu": {"responses": ["B", "A", "F"], "score": 75.0, "metrics": {"accuracy": 200 / 3}},
    "video_holmes": {"responses": ["F", "F"], "score": 50.0},
    "minerva": {"responses": ["D", "A"], "score": 100.0},
    # MC right (1) + open-ended judged incorrect (0).
    "vcrbench": {"responses": ["B", "It moves to the left."], "score": 50.0,
                 "breakdowns": {"question_kind": {"multiple-choice": (100.0, 1), "open-ended": (0.0, 1)}}},
    # judged correct (1), and an empty answer scores 0 without asking the judge.
    "videoreasonbench": {"responses": ["(a1, b2), (c2, b1), (a3, c1)", ""], "score": 50.0, "unparsed": 1},
    "longvideo_reason": {"responses": ["E", "D"], "score": 50.0},
    # MC right (1) + open-ended judged correct (1).
    "mmvu": {"responses": ["B", "combustion"], "score": 100.0},
    # 10 options (J is valid), a numeric answer, and a wrong one on Adaptation.
    "video_mmmu": {"responses": ["J", "42.0", "B"], "score": 200 / 3,
                   "breakdowns": {"track": {"Adaptation": (0.0, 1), "Comprehension": (100.0, 1), "Perception": (100.0, 1)}}},
    # mcq: q1 right, q2 wrong; mbin: q1 both pairs right, q2 one wrong -> MBin 1/2.
    "videomathqa": {"responses": ["E", "B", "A", "B", "A", "A"], "score": 50.0, "metrics": {"MBin": 50.0, "MCQ": 50.0}},
    # counting exact (MRA 1), distance 2.5 vs 2.0 (rel. err 0.25 <= 1 - θ for θ = 0.50..0.75 -> 6/10), route planning 1/2;
    # object_rel_direction: easy 2/2, medium 0/1 (A for C), hard 1/1 -> its levels' mean (1 + 0 + 1) / 3 = 2/3 (its item mean would be 3/4).
    # Score: mean of the 4 tasks (1 + 0.6 + 0.5 + 2/3) / 4; accuracy: item mean (1 + 0.6 + 1 + 0 + 1 + 1 + 0 + 1) / 8.
    "vsibench": {"responses": ["4", "2.5", "B", "A", "A", "B", "A", "A"], "score": 100 * (1 + 0.6 + 0.5 + 2 / 3) / 4,
                 "metrics": {"accuracy": 100 * 5.6 / 8},
                 "breakdowns": {"task": {"object_abs_distance": (60.0, 1), "object_counting": (100.0, 1), "route_planning": (50.0, 2),
                                         "object_rel_direction": (75.0, 4)},
                                "difficulty": {"easy": (100.0, 2), "medium": (0.0, 1), "hard": (100.0, 1),
                                               "unknown": (100 * 2.6 / 4, 4)}}},  # 1 + 0.6 + 1 + 0
    # IoUs 1, 0.5, 0.25.
    "charades_sta": {"responses": ["[1.0, 3.0]", "[1, 2]", "[0, 3]"], "score": 175 / 3,
                     "metrics": {"R@0.3": 200 / 3, "R@0.5": 200 / 3, "R@0.7": 100 / 3}},
    # st1 exact; st2: tIoU 1/2, box IoU over 3 reference + 2 predicted seconds, 2 shared -> 2/3.
    "stvg": {"responses": [STVG_ST1, STVG_ST2], "score": 100 * (1 + 0.25 + 1 / 3) / 2,
             "metrics": {"tIoU": 75.0, "box_IoU": 100 * (1 + 2 / 3) / 2}},
    # backward EPM 1, ASI 0 -> 50; realtime STU 1 -> 100; forward REC 1/2, SSR 1/2 -> 50.
    "ovobench": {"responses": ["B", "B", "A", "1", "3", "no", "no"], "score": 200 / 3,
                 "metrics": {"backward": 50.0, "realtime": 100.0, "forward": 50.0}},
    "odvbench": {"responses": ["B", "C"], "score": 50.0},
    # "A or D" hedges: unparsed.
    "livesports3k_qa": {"responses": ["C", "A or D"], "score": 50.0, "unparsed": 1},
}
