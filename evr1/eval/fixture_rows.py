"""Tiny annotation rows (2-5 items) for every benchmark, in its official annotation format.

`FIXTURES[name]` maps annotation files (relative to the benchmark folder) to their JSON content;
`fixture_videos(name)` lists the video files (relative to the media folder) the rows refer to.
Every video is a 4-second clip (see `evr1.eval.fixtures`).
"""

from __future__ import annotations

from typing import Any

ABCD = ["A. red", "B. green", "C. blue", "D. yellow"]


def _mvbench(task: str, answer: str, vid: str) -> dict[str, Any]:
    return {"video": vid, "question": f"{task}: what colour is the square?", "candidates": ["red", "green", "blue"], "answer": answer}


FIXTURES: dict[str, dict[str, Any]] = {
    "videomme": {"videomme.json": [
        {"videoID": "v1", "question_id": "001-1", "duration": "short", "domain": "Sports", "sub_category": "Football",
         "task_type": "Counting Problem", "question": "How many squares?", "options": ["A. 1", "B. 2", "C. 3", "D. 4"], "answer": "A"},
        {"videoID": "v1", "question_id": "001-2", "duration": "short", "domain": "Sports", "sub_category": "Football",
         "task_type": "Object Recognition", "question": "What colour?", "options": ABCD, "answer": "C"},
        {"videoID": "v2", "question_id": "002-1", "duration": "long", "domain": "Film", "sub_category": "Drama",
         "task_type": "Counting Problem", "question": "How many people?", "options": ["A. 0", "B. 1", "C. 2", "D. 5"], "answer": "B"},
    ]},
    "videomme_v2": {"videomme_v2.json": [
        *({"video_id": "g1", "question_id": f"g1-{i}", "question": f"Relevance question {i}?",
           "options": "\n".join(f"{c}. option {c}" for c in "ABCDEFGH"), "answer": "ABCD"[i - 1],
           "group_type": "relevance", "group_structure": "[1, 2, 3, 4]", "level": 1} for i in range(1, 5)),
        *({"video_id": "g2", "question_id": f"g2-{i}", "question": f"Logic question {i}?",
           "options": "\n".join(f"{c}. option {c}" for c in "ABCDEFGH"), "answer": "EFGH"[i - 1],
           "group_type": "logic", "group_structure": "[1, [2, 3], 4]", "level": 2} for i in range(1, 5)),
    ]},
    "mvbench": {
        "json/action_sequence.json": [_mvbench("action_sequence", "red", "clip1.mp4"), _mvbench("action_sequence", "blue", "clip2.mp4")],
        "json/object_shuffle.json": [
            {**_mvbench("object_shuffle", "green", "clip1.mp4"), "start": 0.5, "end": 3.5},
            _mvbench("object_shuffle", "red", "clip2.mp4"), _mvbench("object_shuffle", "blue", "clip1.mp4"),
        ],
    },
    "tempcompass": {
        "questions/multi-choice.json": [
            {"video_id": "t1", "dim": "direction", "question": "Which way does it move?\nA. left\nB. right\nC. up", "answer": "B. right"},
            {"video_id": "t1", "dim": "speed", "question": "How fast?\nA. slow\nB. fast", "answer": "A. slow"},
        ],
        "questions/yes_no.json": [
            {"video_id": "t1", "dim": "direction", "question": "Does it move right?", "answer": "yes"},
            {"video_id": "t1", "dim": "speed", "question": "Is it fast?", "answer": "no"},
        ],
        "questions/caption_matching.json": [
            {"video_id": "t1", "dim": "order", "answer": "Caption A: first red then blue",
             "question": "Which caption matches the video better?\nCaption A: first red then blue\nCaption B: first blue then red"},
        ],
    },
    "motionbench": {"motionbench.json": [
        {"uid": "m1", "video_path": "m1.mp4", "question": "What motion?", "options": ["A. wave", "B. jump", "C. spin"],
         "answer": "C", "question_type": "Motion Recognition"},
        {"uid": "m2", "video_path": "m1.mp4", "question": "Which direction?\n(A) left\n(B) right", "answer": "A",
         "question_type": "Location-related Motion"},
    ]},
    "lvbench": {"lvbench.json": [
        {"uid": 101, "video_path": "lv1.mp4", "question": "What happens first?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "D",
         "question_type": ["event understanding"]},
        {"uid": 102, "video_path": "lv1.mp4", "question": "Who speaks?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "B",
         "question_type": ["entity recognition", "reasoning"]},
        {"uid": 103, "video_path": "lv1.mp4", "question": "Key info?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "A",
         "question_type": ["key information retrieval"]},
    ]},
    "longvideobench": {"lvb_val.json": [
        {"id": "lvb1", "video_path": "lvb1.mp4", "question": "What is shown?", "candidates": ["a", "b", "c", "d", "e"],
         "correct_choice": 4, "duration_group": 15, "question_category": "E2O"},
        {"id": "lvb2", "video_path": "lvb1.mp4", "question": "What next?", "candidates": ["a", "b", "c", "d"],
         "correct_choice": 0, "duration_group": 60, "question_category": "O2E"},
    ]},
    "mlvu": {  # the official json/<n>_<task>.json (github.com/JUNJIE99/MLVU data/); videos under video/<n>_<task>/
        "json/1_plotQA.json": [
            {"video": "ml1.mp4", "duration": 4, "question": "What is the plot?", "candidates": ["x", "y", "z", "w"], "answer": "y",
             "question_type": "plotQA"},
            {"video": "ml1.mp4", "duration": 4, "question": "Who acts?", "candidates": ["x", "y", "z", "w"], "answer": "w",
             "question_type": "plotQA"},
        ],
        "json/4_count.json": [
            {"video": "ml1.mp4", "duration": 4, "question": "How many?", "candidates": ["1", "2", "3", "4", "5", "6"], "answer": "6",
             "question_type": "count"},
        ],
        "json/8_sub_scene.json": [  # open-ended (G-Avg): skipped by the importer
            {"video": "ml2.mp4", "duration": 4, "question": "Please describe the scene when the square turns.",
             "answer": "The square turns red.", "question_type": "subPlot", "scoring_points": ["the square turns red"]},
        ],
    },
    "video_holmes": {"test_Video-Holmes.json": [
        {"video ID": "h1", "Question ID": "h1-1", "Question Type": "SR", "Question": "Why?",
         "Options": {"A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f"}, "Answer": "F"},
        {"video ID": "h1", "Question ID": "h1-2", "Question Type": "IMC", "Question": "Who?",
         "Options": {"A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f"}, "Answer": "A"},
    ]},
    "minerva": {"minerva.json": [
        {"key": "mi1", "video_id": "mi", "question": "Which step?", **{f"answer_choice_{i}": f"step {i}" for i in range(5)},
         "answer_id": 3, "answer": "step 3", "question_type": "Temporal Reasoning"},
        {"key": "mi2", "video_id": "mi", "question": "What count?", **{f"answer_choice_{i}": f"{i}" for i in range(5)},
         "answer_id": 0, "answer": "0", "question_type": "Counting"},
    ]},
    "vcrbench": {"vcrbench.json": [  # VCR-Bench rows (github.com/zhishuifeiqian/VCR-Bench eval_code/input.json)
        {"id": 1, "video_path": "video/sample/vc1.mp4", "duration": 4, "dimension": "Video Plot Analysis",
         "question": "What colour is the square?A. red\nB. blue\nC. green\nD. yellow\n", "multiple-choice": True,
         "choices": {"A": "red", "B": "blue", "C": "green", "D": "yellow"}, "answer": "B",
         "reasoning": ["1. 0:00-0:04, a blue square is shown."]},
        {"id": 2, "video_path": "video/sample/vc1.mp4", "duration": 4, "dimension": "Temporal Spatial Reasoning",
         "question": "Describe the motion.", "multiple-choice": False, "choices": {"A": "", "B": "", "C": "", "D": ""},
         "answer": "The square moves to the right.", "reasoning": ["1. 0:00-0:04, the square moves to the right."]},
    ]},
    "videoreasonbench": {"videoreasonbench.json": {  # questions/<demo>.json of github.com/llyx97/video_reason_bench
        "state1_op5_order_operation_start": {
            "video": "videos/cup/state1_op5_start.mp4", "question": "What are the 1st to 3rd moves?",
            "answer": "1st: (a1, b2)\n2nd: (c2, b1)\n3rd: (a3, c1)", "dim": "order_operation", "num_state": 1,
            "num_operation": 5, "visible_time": "start"},
        "state1_op5_comparison_state_start": {
            "video": "videos/cup/state1_op5_start.mp4", "question": "How many coins differ from the start?",
            "answer": "2", "dim": "comparison_state", "num_state": 1, "num_operation": 5, "visible_time": "start"},
    }},
    # test.jsonl of huggingface.co/datasets/LongVideo-Reason/longvideo-reason (`problem_type` is its category).
    "longvideo_reason": {"longvideo_reason.json": [
        {"problem_id": 0, "problem_type": "goal", "data_type": "video", "videos": "longvila_videos/lr1.mp4", "reasoning": "Checking the video...",
         "problem": "Why does it stop?\nA. a\nB. b\nC. c\nD. d\nE. e", "answer": "<answer>E</answer>"},
        {"problem_id": 1, "problem_type": "plot", "data_type": "video", "videos": "longvila_videos/lr1.mp4", "reasoning": "Analyzing the scene...",
         "problem": "What comes next?\nA. a\nB. b\nC. c\nD. d", "answer": "<answer>C</answer>"},
    ]},
    "mmvu": {"validation.json": [
        {"id": "mu1", "video_path": "mu1.mp4", "question": "Which law applies?", "question_type": "multiple-choice",
         "choices": {"A": "Ohm", "B": "Newton", "C": "Hooke", "D": "Snell", "E": "Boyle"}, "answer": "B",
         "metadata": {"subject": "Physics"}},
        {"id": "mu2", "video_path": "mu1.mp4", "question": "What reaction is shown?", "question_type": "open-ended",
         "choices": {}, "answer": "combustion", "metadata": {"subject": "Chemistry"}},
    ]},
    "video_mmmu": {
        "Perception.json": [{"id": "p1", "question": "What is written?", "options": [f"opt {i}" for i in range(10)], "answer": "J"}],
        "Comprehension.json": [{"id": "c1", "question": "Compute the value.", "options": [], "answer": "42"}],
        "Adaptation.json": [{"id": "a1", "question": "Apply it to the image.", "options": ["x", "y"], "answer": "A",
                             "image": "a1.png"}],
    },
    "videomathqa": {
        "mcq.json": [
            {"question_id": "q1", "videoID": "vm1", "question": "Area?", "options": ["A. 1", "B. 2", "C. 3", "D. 4", "E. 5"],
             "answer": "E", "category": "Geometry", "duration": "short"},
            {"question_id": "q2", "videoID": "vm1", "question": "Sum?", "options": ["A. 1", "B. 2", "C. 3", "D. 4", "E. 5"],
             "answer": "A", "category": "Arithmetic", "duration": "short"},
        ],
        "mbin.json": [
            {"question_id": "q1", "pair": 0, "videoID": "vm1", "question": "Area?", "options": ["A. 5", "B. 1"], "answer": "A",
             "category": "Geometry", "duration": "short"},
            {"question_id": "q1", "pair": 1, "videoID": "vm1", "question": "Area?", "options": ["A. 2", "B. 5"], "answer": "B",
             "category": "Geometry", "duration": "short"},
            {"question_id": "q2", "pair": 0, "videoID": "vm1", "question": "Sum?", "options": ["A. 1", "B. 3"], "answer": "A",
             "category": "Arithmetic", "duration": "short"},
            {"question_id": "q2", "pair": 1, "videoID": "vm1", "question": "Sum?", "options": ["A. 4", "B. 1"], "answer": "B",
             "category": "Arithmetic", "duration": "short"},
        ],
    },
    "vsibench": {"test.json": [
        {"id": 1, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_counting",
         "question": "How many chairs?", "options": None, "ground_truth": "4"},
        {"id": 2, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_abs_distance",
         "question": "Distance between table and bed (m)?", "options": None, "ground_truth": "2.0"},
        {"id": 3, "dataset": "scannet", "scene_name": "scene0", "question_type": "route_planning",
         "question": "Which turn?", "options": ["A. left", "B. right", "C. back", "D. forward"], "ground_truth": "B"},
        {"id": 4, "dataset": "scannet", "scene_name": "scene0", "question_type": "route_planning",
         "question": "Then?", "options": ["A. left", "B. right", "C. back", "D. forward"], "ground_truth": "D"},
        # object_rel_direction is one task scored as the mean of its three levels (two easy items here).
        {"id": 5, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_easy",
         "question": "Standing by the bed facing the door, is the chair left or right?", "options": ["A. left", "B. right"],
         "ground_truth": "A"},
        {"id": 6, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_easy",
         "question": "Standing by the door facing the bed, is the lamp left or right?", "options": ["A. left", "B. right"],
         "ground_truth": "B"},
        {"id": 7, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_medium",
         "question": "Standing by the sofa facing the tv, where is the table?", "options": ["A. left", "B. right", "C. back"],
         "ground_truth": "C"},
        {"id": 8, "dataset": "scannet", "scene_name": "scene0", "question_type": "object_rel_direction_hard",
         "question": "Standing by the sink facing the stove, where is the fridge?",
         "options": ["A. front-left", "B. front-right", "C. back-left", "D. back-right"], "ground_truth": "A"},
    ]},
    "charades_sta": {"charades_test.json": [
        {"id": "c1", "video": "ch1.mp4", "caption": "a person opens a door", "timestamp": [1.0, 3.0]},
        {"id": "c2", "video": "ch1.mp4", "caption": "a person sits down", "timestamp": [0.0, 2.0]},
        {"id": "c3", "video": "ch1.mp4", "caption": "a person laughs", "timestamp": [2.0, 4.0]},
    ]},
    "stvg": {"test.json": {  # HC-STVG: img_num = fps * 20 (here 4 fps), st_frame 1-based, bbox [x, y, w, h] per frame
        "st1.mp4": {"st_frame": 5, "img_num": 80, "st_time": 1.0, "ed_time": 3.0, "width": 64, "height": 48,
                    "caption": "the man walks", "bbox": [[10, 10, 20, 20]] * 9},
        "st2.mp4": {"st_frame": 1, "img_num": 80, "st_time": 0.0, "ed_time": 2.0, "width": 64, "height": 48,
                    "caption": "the woman sits", "bbox": [[0, 0, 32, 24]] * 9},
    }},
    "ovobench": {"ovo_bench_new.json": [  # the shapes of data/ovo_bench_new.json of github.com/JoeLeelyf/OVO-Bench
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
    ]},
    "odvbench": {"odvbench.json": [
        {"id": "d1", "video": "d1.mp4", "question": "Is the light red?", "options": ["A. yes", "B. no", "C. unclear"], "answer": "B",
         "task": "perception", "subtask": "traffic light"},
        {"id": "d2", "video": "d1.mp4", "question": "What next?", "options": ["A. stop", "B. go", "C. turn"], "answer": "A",
         "task": "prediction", "subtask": "ego action"},
    ]},
    "livesports3k_qa": {"qa.json": [  # fields read by LiveCC's evaluation/livesports3kqa script
        {"video_id": "s1", "question_id": "s1_e1_q1", "q_type": "Who", "OCR": 0, "question": "Who scores?",
         "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "C", "video_start": 0.5, "video_end": 3.5},
        {"video_id": "s1", "question_id": "s1_e2_q1", "q_type": "When", "OCR": 1, "question": "When?",
         "options": ["A. a", "B. b", "C. c", "D. d"], "answer": "D", "video_start": 1.0, "video_end": 4.0},
    ]},
}
