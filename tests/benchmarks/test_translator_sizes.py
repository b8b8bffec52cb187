"""The learning-curve benchmark's systems: what each one trains."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import translator_sizes  # noqa: E402


def test_the_text_profile_system_turns_every_small_corpus_lever_off(tmp_path):
    from keras_attn.training import cli
    from keras_attn.training.tasks.translator.flags import PROFILES, SMALL_CORPUS

    data = tmp_path / "small.tsv"
    data.write_text("".join(f"go {i}.\tve {i}.\n" for i in range(100)), encoding="utf-8")
    flags = translator_sizes.parse_systems("rnn-text-profile")["rnn-text-profile"]
    resolved = cli.task_options(["train", "translator", "--data", str(data), *flags])
    default = cli.task_options(["train", "translator", "--data", str(data)])
    assert SMALL_CORPUS  # the profile has levers to turn off
    for name in SMALL_CORPUS:
        assert getattr(resolved, name) == PROFILES["text"][name], name
        assert getattr(default, name) == PROFILES["small-text"][name], name


def test_an_unknown_system_without_flags_is_named_in_the_error():
    with pytest.raises(SystemExit, match="--systems: 'rnn-large' is not one of"):
        translator_sizes.parse_systems("rnn,rnn-large")
    assert translator_sizes.parse_systems("mine=--dropout 0.2") == {
        "mine": ["--dropout", "0.2"]}
