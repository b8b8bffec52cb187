"""The translators' presets: named configurations a script builds from, the command
line's profiles."""

import pytest

from keras_attn.models import TransformerTranslator, Translator, TranslatorPreprocessor
from keras_attn.models.translator.presets import PRESETS, preset
from tests.models.test_translator_text import number_pairs


def test_a_script_builds_the_command_lines_text_model_from_its_preset():
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_preset("text", sources, targets)
    assert (preprocessor.level, preprocessor.space_punctuation) == ("subword", True)
    model = Translator.from_preset("small-text", preprocessor=preprocessor)
    config = model.get_config()
    assert (config["attention"], config["input_feeding"], config["encoder_units"]) == (
        "luong-general", False, 256)
    assert (config["dropout"], config["word_dropout"]) == (0.3, 0.1)
    transformer = TransformerTranslator.from_preset("dates", preprocessor=preprocessor,
                                                    num_layers=2)
    assert (transformer.model_dim, transformer.num_layers) == (64, 2)  # overrides win
    model.compile(**preset("small-text")["compile"])
    assert model.loss.label_smoothing == 0.1


def test_the_command_lines_profiles_are_the_presets():
    from keras_attn.training.tasks.translator import flags

    for name in PRESETS:
        settings = preset(name)
        profile = flags.PROFILES[name]
        assert profile["level"] == settings["preprocessor"]["level"]
        assert profile["max_vocab"] == settings["preprocessor"]["max_vocabulary"]
        assert profile["encoder_units"] == settings["rnn"]["encoder_units"]
        assert profile["num_layers"] == settings["transformer"]["num_layers"]
        assert profile["label_smoothing"] == settings["compile"]["label_smoothing"]


def test_an_unknown_preset_is_named():
    with pytest.raises(ValueError, match=r"`preset` must be one of \('dates', 'text', "
                                         r"'small-text'\); received 'large'"):
        preset("large")
    preset("text")["rnn"]["dropout"] = 0.9  # a copy: the preset itself is unchanged
    assert PRESETS["text"]["rnn"]["dropout"] == 0.0
