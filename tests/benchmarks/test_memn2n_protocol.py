"""The MemN2N benchmark's protocols: which run it keeps, and the paper's split."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import memn2n  # noqa: E402


def _run(seed, train_accuracy, validation_error):
    return {"seed": seed, "train_accuracy": train_accuracy,
            "validation": {"mean_error": validation_error}}


def test_the_paper_keeps_the_lowest_training_error_and_breaks_ties_on_validation():
    runs = [_run(0, 0.97, 0.05), _run(1, 1.0, 0.20), _run(2, 1.0, 0.10)]
    assert memn2n.PROTOCOLS["paper"] == {"runs": 10, "select": "training"}
    assert memn2n.best_run(runs, "training")["seed"] == 2  # 100 % train, then the lower val
    assert memn2n.best_run(runs, "validation")["seed"] == 0


def test_splits_hold_out_a_tenth_of_the_stories_and_keep_test_files(tmp_path):
    from keras_attn.training.tasks.memn2n import babi
    from keras_attn.training.tasks.memn2n.stories import generate_questions

    babi.write_babi(generate_questions(1, 300, seed=0),
                    str(tmp_path / "qa1_single-supporting-fact_train.txt"))
    babi.write_babi(generate_questions(1, 50, seed=1),
                    str(tmp_path / "qa1_single-supporting-fact_test.txt"))
    split = memn2n.task_splits(str(tmp_path), [1])[1]
    stories = {side: {q.story_id for q in split[side]} for side in ("train", "validation")}
    total = len(stories["train"]) + len(stories["validation"])
    assert len(stories["validation"]) == round(0.1 * total)
    assert not stories["train"] & stories["validation"]
    assert split["kind"] == "test" and len(split["test"]) == 50
