"""`keras-attn train memn2n` on bAbI files written here (any backend, no export)."""

import os

import pytest

from keras_attn.models.memn2n.preprocessor import normalize_answer
from keras_attn.training import cli
from keras_attn.training.errors import UsageError
from keras_attn.training.tasks.memn2n import babi
from keras_attn.training.tasks.memn2n import task as task_module
from keras_attn.training.tasks.memn2n.stories import generate_questions


def _write_task(folder, task, name, questions, split):
    babi.write_babi(questions, os.path.join(folder, f"qa{task}_{name}_{split}.txt"))


def test_trains_on_a_data_dir_with_a_test_file_beside_the_train_file(tmp_path, capsys):
    data = tmp_path / "babi"
    data.mkdir()
    _write_task(data, 1, "single-supporting-fact", generate_questions(1, 400, seed=0), "train")
    _write_task(data, 1, "single-supporting-fact", generate_questions(1, 100, seed=1), "test")
    _write_task(data, 6, "yes-no-questions", generate_questions(6, 200, seed=0), "train")
    work = str(tmp_path / "work")
    results = cli.main(["train", "memn2n", "--data-dir", str(data), "--tasks", "1",
                        "--epochs", "12", "--work-dir", work, "--no-export",
                        "--no-tensorboard", "--quiet"])
    assert results == 0
    printed = capsys.readouterr().out
    assert "data: babi [1]" in printed and "test:" in printed
    assert os.path.exists(os.path.join(work, "test", "qa1_single-supporting-fact_test.txt"))
    # Only a train file: validation is split from it, and the figure is on validation.
    work2 = str(tmp_path / "work2")
    cli.main(["train", "memn2n", "--data-dir", str(data), "--tasks", "6", "--epochs", "2",
              "--work-dir", work2, "--no-export", "--no-tensorboard", "--quiet"])
    printed = capsys.readouterr().out
    assert "6 yes-no-questions" in printed and "\ntest:" not in printed


@pytest.mark.parametrize("flags, message", [
    (["--data-dir", "/nonexistent/babi"], "is not a directory"),
    (["--tasks", "3"], "no qa3_"),
    (["--tasks", "one"], "`--tasks` must be numbers"),
])
def test_bad_data_arguments_stop_with_a_clear_message(tmp_path, flags, message):
    data = tmp_path / "babi"
    data.mkdir()
    _write_task(data, 1, "single-supporting-fact", generate_questions(1, 50, seed=0), "train")
    argv = ["train", "memn2n", "--data-dir", str(data), *flags, "--work-dir",
            str(tmp_path / "w"), "--no-export", "--quiet"]
    with pytest.raises(UsageError, match=message):
        cli.main(argv)


@pytest.mark.parametrize("flags, message", [
    # Without --data-dir, --tasks used to be ignored and every built-in kind trained.
    (["--tasks", "99"], r"`--tasks` picks bAbI files from `--data-dir`.*--kinds"),
    (["--kinds", "5"], r"`--kinds`: Unknown story kind '5'"),
])
def test_built_in_stories_are_picked_with_kinds_only(tmp_path, flags, message):
    argv = ["train", "memn2n", *flags, "--work-dir", str(tmp_path / "w"), "--no-export", "--quiet"]
    with pytest.raises(UsageError, match=message):
        cli.main(argv)


def test_kinds_with_a_data_dir_is_refused(tmp_path):
    data = tmp_path / "babi"
    data.mkdir()
    _write_task(data, 1, "single-supporting-fact", generate_questions(1, 50, seed=0), "train")
    with pytest.raises(UsageError, match=r"`--kinds` picks the built-in stories"):
        cli.main(["train", "memn2n", "--data-dir", str(data), "--kinds", "1",
                  "--work-dir", str(tmp_path / "w"), "--no-export", "--quiet"])


def test_the_default_split_trains_on_90_percent_of_each_tasks_stories(tmp_path):
    data = tmp_path / "babi"
    data.mkdir()
    for task, name in ((1, "single-supporting-fact"), (6, "yes-no-questions")):
        _write_task(data, task, name, generate_questions(task, 400, seed=task), "train")
    args = cli.task_options(["train", "memn2n", "--data-dir", str(data)])
    splits = task_module.load_questions(args)[0]
    for task in (1, 6):
        stories = {side: {q.story_id for q in splits[side] if q.task == task}
                   for side in ("train", "validation")}
        assert not stories["train"] & stories["validation"]
        total = len(stories["train"]) + len(stories["validation"])
        assert len(stories["validation"]) == round(0.1 * total)


@pytest.mark.parametrize("flags, whole_vocabulary, empty_slots", [
    ([], True, "zero"),  # the authors' code
    (["--answer-space", "seen", "--empty-slots", "masked"], False, "masked"),
])
def test_answer_space_and_empty_slots_reach_the_model(tmp_path, flags, whole_vocabulary,
                                                     empty_slots):
    data = tmp_path / "babi"
    data.mkdir()
    _write_task(data, 1, "single-supporting-fact", generate_questions(1, 60, seed=0), "train")
    args = cli.task_options(
        ["train", "memn2n", "--data-dir", str(data), "--tasks", "1", *flags])
    prepared = task_module.prepare(args)
    vocabulary = sorted(set(prepared.vocab.index.values()) - {0})
    answers = {prepared.vocab.index[normalize_answer(q.answer)]
               for q in prepared.splits["train"]}
    assert (list(prepared.answer_ids) == vocabulary) == whole_vocabulary
    assert answers <= set(prepared.answer_ids)
    model = task_module.new_model(args, prepared)
    assert model.empty_slots == empty_slots
    assert model.get_layer("memn2n").empty_slots == empty_slots


def test_five_percent_error_is_not_a_failed_task():
    # 5 wrong of 100 is 1 − 0.95 = 0.05000000000000004 in floating point.
    assert task_module.failed_tasks([1 - 0.95, 0.0, 0.0501, 0.9]) == 2
