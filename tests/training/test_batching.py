import numpy as np
import pytest

from keras_attn.models.batching import BucketedBatches
from keras_attn.models.text import END_ID, PAD_ID, START_ID


def _corpus(rng, n=530):
    """Pairs whose lengths go together, as translations' do."""
    lengths = rng.integers(1, 40, n)
    sources = [list(rng.integers(4, 50, k)) for k in lengths]
    targets = [list(rng.integers(4, 50, max(0, k + rng.integers(-3, 4)))) for k in lengths]
    return sources, targets


def _rows_of_epoch(batches, sources):
    """Every example of an epoch, recovered from the padded batches by its source."""
    seen = []
    for index in range(len(batches)):
        x, y, w = batches[index]
        for row in x["source"]:
            seen.append(tuple(int(i) for i in row[row != PAD_ID]))
    return seen


def test_every_example_once_an_epoch_and_reshuffled(rng):
    sources, targets = _corpus(rng)
    batches = BucketedBatches(sources, targets, batch_size=16, window=5, seed=3)
    first = [tuple(batches.batch_indices(i)) for i in range(len(batches))]
    for _ in range(3):
        indices = np.concatenate([batches.batch_indices(i) for i in range(len(batches))])
        assert sorted(indices) == list(range(len(sources)))  # none lost, none twice
        assert sorted(_rows_of_epoch(batches, sources)) == sorted(tuple(s) for s in sources)
        batches.on_epoch_end()
    assert [tuple(batches.batch_indices(i)) for i in range(len(batches))] != first
    assert len(batches) == sum(-(-min(80, 530 - s) // 16) for s in range(0, 530, 80))


def test_batches_pad_to_their_own_length_and_shift_the_targets(rng):
    sources, targets = _corpus(rng)
    batches = BucketedBatches(sources, targets, batch_size=16, pad_to_multiple=8)
    for index in range(len(batches)):
        rows = batches.batch_indices(index)
        x, y, w = batches[index]
        longest = max(len(sources[i]) for i in rows)
        assert x["source"].shape[1] == 8 * -(-longest // 8)
        for row, i in enumerate(rows):
            n = len(targets[i])
            assert x["target_in"][row, : n + 1].tolist() == [START_ID, *targets[i]]
            assert y[row, : n + 1].tolist() == [*targets[i], END_ID]
            assert w[row].sum() == n + 1 and np.all(y[row, n + 1 :] == PAD_ID)


def test_sorting_in_windows_cuts_the_padding(rng):
    sources, targets = _corpus(rng, n=2000)
    plain = BucketedBatches(sources, targets, batch_size=32, window=1, pad_to_multiple=1)
    bucketed = BucketedBatches(sources, targets, batch_size=32, window=50, pad_to_multiple=1)
    assert bucketed.padding_fraction() < 0.5 * plain.padding_fraction()


def test_the_first_two_batches_differ_in_every_length_that_varies(rng):
    """Keras's TensorFlow adapter infers the variable axes from the first two batches."""
    sources, targets = _corpus(rng)
    for seed in range(5):
        batches = BucketedBatches(sources, targets, batch_size=16, seed=seed)
        a, b = batches[0], batches[1]
        assert a[0]["source"].shape[1] != b[0]["source"].shape[1]
        assert a[1].shape[1] != b[1].shape[1]
    fixed = BucketedBatches(sources, [[5, 6]] * len(sources), batch_size=16, shuffle=False)
    assert fixed[0][1].shape == fixed[1][1].shape == (16, 8)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sources=[[4]], targets=[]), "`sources` and `targets` must have the same length; received 1 and 0"),
    (dict(sources=[], targets=[]), "`sources` must hold at least one example"),
    (dict(sources=[[4]], targets=[[5]], batch_size=0), r"`batch_size` must be an integer ≥ 1; received 0"),
    (dict(sources=[[4]], targets=[[5]], window=1.5), r"`window` must be an integer ≥ 1; received 1.5"),
])
def test_bad_arguments_are_named(kwargs, message):
    kwargs = {"batch_size": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        BucketedBatches(**kwargs)
