"""Subword regularisation (MaxMatch-dropout): sampled cuts of the training text, a new one
every epoch, while translating, exporting and serving keep the one greedy cut."""

import numpy as np
import pytest

from keras_attn.models import Translator, TranslatorPreprocessor
from keras_attn.models.batching import BucketedBatches
from keras_attn.models.text import SPECIALS, Vocabulary
from tests.models.test_translator_text import learns_reloads_and_serves, number_pairs

WORDS = ["translation", "translating", "translated", "transport", "national", "nation",
         "rational", "ration", "lating", "transit", "notation", "rotation"] * 20


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.build(WORDS, "subword", max_size=60)


def test_no_dropout_is_the_greedy_cut(vocabulary):
    rng = np.random.default_rng(0)
    for word in set(WORDS):
        assert vocabulary.encode(word, dropout=0.0, rng=rng) == vocabulary.encode(word)


def test_sampled_cuts_vary_spell_the_same_word_and_repeat_with_the_seed(vocabulary):
    greedy = vocabulary.encode("translating")
    rng = np.random.default_rng(0)
    cuts = [tuple(vocabulary.encode("translating", dropout=0.5, rng=rng)) for _ in range(200)]
    assert len(set(cuts)) >= 5, set(cuts)  # many segmentations of one word
    assert tuple(greedy) in cuts
    for cut in set(cuts):
        assert all(i >= len(SPECIALS) for i in cut)  # never [UNK] or another special
        assert vocabulary.decode(list(cut)) == "translating"
    # The sampled cut is never shorter than the greedy one (it only gives up matches).
    assert min(map(len, cuts)) == len(greedy)
    again = np.random.default_rng(0)
    assert [tuple(vocabulary.encode("translating", dropout=0.5, rng=again))
            for _ in range(200)] == cuts


def test_full_dropout_spells_every_word_in_characters(vocabulary):
    rng = np.random.default_rng(1)
    for word in set(WORDS):
        ids = vocabulary.encode(word, dropout=1.0, rng=rng)
        assert len(ids) == len(word) and vocabulary.decode(ids) == word


def test_the_preprocessor_samples_each_epoch_and_keeps_the_greedy_cut_elsewhere():
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets, subword_dropout=0.3,
                                                     max_vocabulary=40)
    sample = preprocessor.training_samples(sources, targets, seed=5)
    first, again = sample(1), sample(1)
    assert first == again  # one cut per seed and epoch
    assert sample(2) != first  # and a new one the next epoch
    greedy = preprocessor.encode_sources(sources), preprocessor.encode_targets(targets)
    assert first != greedy
    # Each sampled target spells its greedy text again.
    assert [preprocessor.target.decode(ids) for ids in first[1]] == \
        [preprocessor.target.decode(ids) for ids in greedy[1]]
    assert TranslatorPreprocessor.from_texts(sources, targets).training_samples(
        sources, targets) is None


@pytest.mark.parametrize("value, message", [
    (1.0, "`subword_dropout` must be"), (-0.1, "`subword_dropout` must be"),
    ("0.1", "`subword_dropout` must be")])
def test_the_preprocessor_refuses_a_bad_rate(value, message):
    with pytest.raises(ValueError, match=message):
        TranslatorPreprocessor(["a"], ["b"], subword_dropout=value)


def test_the_preprocessor_refuses_subword_dropout_at_word_level():
    with pytest.raises(ValueError, match="`subword_dropout` needs `level='subword'`; received "
                                         "level 'word'"):
        TranslatorPreprocessor(["a"], ["b"], level="word", subword_dropout=0.1)


def _epoch_sources(batches):
    """Every source of the epoch's batches, padding stripped, in example order."""
    rows = {}
    for index in range(len(batches)):
        source = batches[index][0]["source"]
        for example, row in zip(batches.batch_indices(index), source, strict=True):
            rows[int(example)] = [int(i) for i in row if i]
    return [rows[i] for i in sorted(rows)]


def test_bucketed_batches_take_each_epochs_resample():
    sources = [[4, 5], [6], [7, 8, 9], [5]]
    targets = [[4], [5, 6], [7], [8]]
    asked = []

    def resample(epoch):
        asked.append(epoch)
        return [s + [10] * epoch for s in sources], targets

    batches = BucketedBatches(sources, targets, batch_size=2, pad_to_multiple=4,
                              resample=resample)
    assert _epoch_sources(batches) == sources
    batches.on_epoch_end()
    batches.on_epoch_end()
    assert asked == [1, 2]
    assert _epoch_sources(batches) == [s + [10, 10] for s in sources]
    # The first batch is one multiple longer than its own longest on each side, so the
    # first two batches differ in every length (what Keras reads the signature from).
    first, second = batches[0][0], batches[1][0]
    assert all(first[key].shape[1] != second[key].shape[1] for key in first)
    short = BucketedBatches(sources, targets, batch_size=2, resample=lambda e: ([[4]], [[4]]))
    with pytest.raises(ValueError, match="`resample` must return the 4 examples given; "
                                         "received 1 sources and 1 targets"):
        short.on_epoch_end()
    one_batch = BucketedBatches(sources, targets, batch_size=4, resample=resample)
    assert len(one_batch) == 2 and sorted(map(len, map(one_batch.batch_indices, (0, 1)))) == [2, 2]
    first, second = one_batch[0][0]["source"], one_batch[1][0]["source"]
    assert first.shape[1] != second.shape[1]  # every length left free for the next epochs
    with pytest.raises(ValueError, match="`resample` needs at least 2 examples .two batches "
                                         "an epoch.; received 1"):
        BucketedBatches(sources[:1], targets[:1], batch_size=4,
                        resample=lambda epoch: (sources[:1], targets[:1]))


def test_a_translator_with_subword_dropout_learns_reloads_and_exports(tmp_path):
    sources, targets = number_pairs()
    preprocessor = TranslatorPreprocessor.from_texts(sources, targets, subword_dropout=0.1)
    model = Translator(preprocessor=preprocessor)
    model.compile()
    # Passes at seeds 0–9 with oneDNN on and off (test_seeds_subword_dropout.json).
    reloaded = learns_reloads_and_serves(model, sources, targets, tmp_path)
    assert reloaded.preprocessor.subword_dropout == 0.1


def test_a_dataset_of_strings_is_refused_rather_than_cut_greedily():
    tf = pytest.importorskip("tensorflow")
    sources, targets = number_pairs()
    model = Translator(preprocessor=TranslatorPreprocessor.from_texts(sources, targets,
                                                                      subword_dropout=0.1))
    model.compile()
    dataset = tf.data.Dataset.from_tensor_slices((sources, targets)).batch(10)
    with pytest.raises(ValueError, match="Give `x` and `y` as lists, or a preprocessor with "
                                         "subword_dropout=0; received a dataset with "
                                         "subword_dropout 0.1"):
        model.fit(dataset, epochs=1, verbose=0)
