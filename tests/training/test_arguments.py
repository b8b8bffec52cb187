"""Numeric CLI flags are checked by the parser, which names the flag and the value."""

import argparse
import re

import pytest

from keras_attn.training import arguments, cli
from keras_attn.training.task import RunMeta


@pytest.mark.parametrize("parse, good, bad", [
    (arguments.positive_int, {"1": 1, "64": 64}, ["0", "-3", "2.5", "x"]),
    (arguments.non_negative_int, {"0": 0, "7": 7}, ["-1", "1e3"]),
    (arguments.positive_float, {"3e-4": 3e-4, "2": 2.0}, ["0", "-0.1", "nan", "inf", "x?"]),
    (arguments.non_negative_float, {"0": 0.0, "0.5": 0.5}, ["-1e-9"]),
    (arguments.fraction, {"0.1": 0.1}, ["0", "1", "1.5"]),
    (arguments.probability, {"0": 0.0, "0.999": 0.999}, ["1", "-0.5"]),
    (arguments.positive_int_or_auto, {"auto": "auto", "2000": 2000}, ["0", "Auto", "2.5"]),
])
def test_types_accept_and_refuse(parse, good, bad):
    for text, value in good.items():
        assert parse(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=rf"received '?{re.escape(text)}'?$"):
            parse(text)


@pytest.mark.parametrize("argv, message", [
    (["train", "translator", "--batch-size", "-3"], "--batch-size: must be an integer ≥ 1; received -3"),
    (["train", "translator", "--epochs", "0"], "--epochs: must be an integer ≥ 1; received 0"),
    (["train", "translator", "--learning-rate", "abc"], "--learning-rate: must be a finite number; received 'abc'"),
    (["train", "memn2n", "--validation-fraction", "1.5"], "--validation-fraction: must be a number strictly between 0 and 1"),
    (["train", "memn2n", "--random-noise", "-0.1"], "--random-noise: must be a number in [0, 1)"),
    (["train", "ntm-copy", "--sequences", "0"], "--sequences: must be an integer ≥ 1; received 0"),
    (["train", "dnc-copy", "--memory-size", "0"], "--memory-size: must be an integer ≥ 1"),
    (["train", "pointer-sort", "--warmup-steps", "-1"], "--warmup-steps: must be an integer ≥ 0"),
    (["train", "pointer-sort", "--validation-instances", "0"], "--validation-instances: must be an integer ≥ 1"),
    (["evaluate", "translator", "--run-dir", "x", "--beam-width", "0"], "--beam-width: must be an integer ≥ 1"),
    (["predict", "{exports}/pointer-sort", "--n", "0"], "--n: must be an integer ≥ 1; received 0"),
    (["predict", "{exports}/ntm-copy", "--length", "0"], "--length: must be an integer ≥ 1; received 0"),
])
def test_bad_numbers_stop_at_the_parser(argv, message, capsys, tmp_path):
    # `predict` reads the export's task from its meta.json before parsing that task's
    # flags; nothing else of the export is read before they are checked.
    for task in ("pointer-sort", "ntm-copy"):
        version = tmp_path / task / "1"
        (version / "assets.extra").mkdir(parents=True)
        (version / "saved_model.pb").write_bytes(b"")
        RunMeta(task=task, name=task, config={}, settings={}, data={}).save(
            version / "assets.extra" / "meta.json")
    with pytest.raises(SystemExit) as stopped:
        cli.main([arg.format(exports=tmp_path) for arg in argv])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def _parsers(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_no_flag_takes_an_unchecked_number():
    unchecked = [
        (parser.prog, action.option_strings)
        for parser in _parsers(cli.build_parser())
        for action in parser._actions
        if action.type in (int, float)
    ]
    assert not unchecked, f"use a type from training.arguments: {unchecked}"


def test_max_vocab_auto_is_accepted_as_the_guide_shows():
    args = cli.build_parser().parse_args(["train", "translator", "--data", "x.tsv",
                                          "--max-vocab", "auto"])
    assert args.max_vocab == "auto"
    assert cli.build_parser().parse_args(
        ["train", "translator", "--max-vocab", "500"]).max_vocab == 500
