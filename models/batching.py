"""Length-bucketed batches of token-id sequences, for `model.fit` on any backend.

Real sentences vary in length: padding every batch to the corpus's longest one
spends most of a step on padding. `BucketedBatches` shuffles the examples, sorts
them by length within windows of many batches ("sorted-then-shuffled", as
fairseq and tensor2tensor batch), cuts the windows into batches, shuffles the
batches, and pads each batch only to its own longest sequence (rounded up to a
multiple of `pad_to_multiple`, so a compiled step sees a few shapes, not one per
length). Every example is in exactly one batch of an epoch.
"""

import math

import keras
import numpy as np

from keras_attn.models.text import END_ID, PAD_ID, START_ID


def _round_up(length, multiple):
    return max(multiple, multiple * math.ceil(length / multiple))


def varied_first(batches, shapes):
    """`batches` reordered: the one of the longest padded `shapes` first and, second,
    one that differs from it in every padded length that varies at all.

    Keras's TensorFlow data adapter reads the first two batches to decide which axes
    of its input signature are variable; two equal shapes there would fix the
    length and fail on the first other one. (The longest batch first also shows at
    once whether the largest step fits in memory.)

    Args:
        batches: a list of batches (any objects).
        shapes: each batch's padded lengths, a tuple per batch.
    """
    if len(batches) < 2:
        return batches
    first = max(range(len(batches)), key=lambda i: (sum(shapes[i]), -i))
    varies = [len({shape[axis] for shape in shapes}) > 1 for axis in range(len(shapes[0]))]

    def differences(i):
        return sum(v and shapes[i][a] != shapes[first][a] for a, v in enumerate(varies))

    second = max((i for i in range(len(batches)) if i != first),
                 key=lambda i: (differences(i), -sum(shapes[i]), -i))
    rest = [b for i, b in enumerate(batches) if i not in (first, second)]
    return [batches[first], batches[second], *rest]


class EndlessBatches(keras.utils.PyDataset):
    """A `PyDataset` pass after pass without end, for `fit(steps_per_epoch=…)`:
    Keras epochs shorter than a pass over the data.

    Each pass is the inner dataset's own draw (its `on_epoch_end` between passes,
    not between Keras's epochs). A finite dataset would make Keras cut the epoch
    that reaches its end, with a warning that training was interrupted.
    """

    def __init__(self, batches, **kwargs):
        super().__init__(**kwargs)
        self.batches, self.passes = batches, 0

    @property
    def num_batches(self):
        return None

    def __getitem__(self, index):
        passes, position = divmod(index, len(self.batches))
        for _ in range(passes - self.passes):
            self.batches.on_epoch_end()
        self.passes = max(self.passes, passes)
        return self.batches[position]


class BucketedBatches(keras.utils.PyDataset):
    """Seq2seq batches `({"source", "target_in"}, target_out, sample_weight)`.

    Args:
        sources: a list of source id lists (no specials).
        targets: a list of target id lists (no specials); each becomes
            `target_in = [START] y` and `target_out = y [END]`.
        batch_size: examples per batch (the last batch of a window may be smaller).
        window: how many batches are sorted by length together; 1 is plain
            shuffled batching, larger windows waste less padding but make
            batches less random.
        pad_to_multiple: each batch's lengths are rounded up to a multiple of this.
        shuffle: reshuffle every epoch (off: one fixed order, for evaluation).
        seed: the shuffling's seed; epoch `e` uses `seed + e`.
        resample: `fn(epoch) → (sources, targets)`, new ids of the same examples for
            each epoch after the first (subword regularisation:
            `TranslatorPreprocessor.training_samples`); `None` keeps the ids given.
            An epoch then has at least two batches: examples that fit in one batch
            are split in two halves.

    `sample_weight` is 1 on real target tokens (and `[END]`) and 0 on padding.
    """

    def __init__(
        self, sources, targets, batch_size, window=50, pad_to_multiple=8, shuffle=True, seed=0,
        resample=None, **kwargs,
    ):
        super().__init__(**kwargs)
        if len(sources) != len(targets):
            raise ValueError(
                f"`sources` and `targets` must have the same length; received {len(sources)} "
                f"and {len(targets)}."
            )
        if not sources:
            raise ValueError("`sources` must hold at least one example; received none.")
        for name, value in (("batch_size", batch_size), ("window", window),
                            ("pad_to_multiple", pad_to_multiple)):
            if int(value) != value or value < 1:
                raise ValueError(f"`{name}` must be an integer ≥ 1; received {value!r}.")
        self.batch_size, self.window = int(batch_size), int(window)
        self.pad_to_multiple, self.shuffle, self.seed = int(pad_to_multiple), shuffle, seed
        self.resample = resample
        self._use(sources, targets)
        self._epoch = 0
        self._batches = self._plan(self._epoch)
        if resample is not None and len(self._batches) < 2:
            # Keras's TensorFlow adapter fixes the input signature's lengths from the
            # first batches; only two batches of different lengths leave them free, so
            # data of one batch is split in two.
            if len(sources) < 2:
                raise ValueError(f"`resample` needs at least 2 examples (two batches an "
                                 f"epoch); received {len(sources)}.")
            self.batch_size = -(-len(sources) // 2)
            self._batches = self._plan(self._epoch)

    def _use(self, sources, targets):
        """Takes these ids (the first, or a resample of the same examples)."""
        given = getattr(self, "sources", None)
        if given is not None and not len(sources) == len(targets) == len(given):
            raise ValueError(f"`resample` must return the {len(given)} examples given; "
                             f"received {len(sources)} sources and {len(targets)} targets.")
        self.sources, self.targets = list(sources), list(targets)
        self._lengths = np.array(
            [max(len(s), len(t) + 1) for s, t in zip(self.sources, self.targets, strict=True)]
        )

    def _plan(self, epoch):
        """The epoch's batches, as arrays of example indices."""
        n = len(self.sources)
        if not self.shuffle:
            order = np.argsort(self._lengths, kind="stable")
            return self._varied_first(
                [order[i : i + self.batch_size] for i in range(0, n, self.batch_size)])
        rng = np.random.default_rng(self.seed + epoch)
        order = rng.permutation(n)
        span = self.batch_size * self.window
        batches = []
        for start in range(0, n, span):
            chunk = order[start : start + span]
            chunk = chunk[np.argsort(self._lengths[chunk], kind="stable")]
            batches.extend(chunk[i : i + self.batch_size] for i in range(0, len(chunk),
                                                                           self.batch_size))
        return self._varied_first([batches[i] for i in rng.permutation(len(batches))])

    def _varied_first(self, batches):
        return varied_first(batches, [self._shape(rows) for rows in batches])

    def _shape(self, rows):
        return (
            _round_up(max(len(self.sources[i]) for i in rows), self.pad_to_multiple),
            _round_up(max(len(self.targets[i]) + 1 for i in rows), self.pad_to_multiple),
        )

    def __len__(self):
        return len(self._batches)

    def on_epoch_end(self):
        self._epoch += 1
        if self.resample is not None:
            self._use(*self.resample(self._epoch))
        if self.shuffle or self.resample is not None:
            self._batches = self._plan(self._epoch)

    def batch_indices(self, index):
        """The example indices of batch `index` of the current epoch."""
        return self._batches[index]

    def __getitem__(self, index):
        rows = self._batches[index]
        source_length, target_length = self._shape(rows)
        if index == 0 and self.resample is not None:
            # A resampled epoch may hold lengths the first did not: the first batch one
            # multiple longer on each side, so that it differs from the second in every
            # length and Keras's TensorFlow adapter leaves every length free.
            source_length += self.pad_to_multiple
            target_length += self.pad_to_multiple
        source = np.full((len(rows), source_length), PAD_ID, "int32")
        target_in = np.full((len(rows), target_length), PAD_ID, "int32")
        target_out = np.full((len(rows), target_length), PAD_ID, "int32")
        for row, i in enumerate(rows):
            ids, out = self.sources[i], self.targets[i]
            source[row, : len(ids)] = ids
            target_in[row, : len(out) + 1] = [START_ID, *out]
            target_out[row, : len(out) + 1] = [*out, END_ID]
        weights = (target_out != PAD_ID).astype("float32")
        return {"source": source, "target_in": target_in}, target_out, weights

    def padding_fraction(self):
        """The share of padded positions (sources and targets) in the current epoch."""
        real = sum(map(len, self.sources)) + sum(len(t) + 1 for t in self.targets)
        padded = sum(len(rows) * sum(self._shape(rows)) for rows in self._batches)
        return 1.0 - real / padded
