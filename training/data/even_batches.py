"""Batches whose size splits evenly between devices, for data-parallel `fit`.

JAX's data-parallel sharding needs every batch, the last one included, to split
evenly between the devices. `EvenBatches` pads a short batch with copies of its
first example at sample weight 0: the weighted loss (summed, or averaged over the
weights) and the weighted metrics are those of the unpadded batch.
"""

import math

import keras
import numpy as np
from keras import tree


def pad_batch(batch, multiple):
    """`(x, y, sample_weight)` padded to a multiple of `multiple` examples, the extra
    ones weighted 0 (a missing `sample_weight` becomes ones, then zeros)."""
    x, y, weight = (tuple(batch) + (None, None))[:3] if isinstance(batch, tuple) else (
        batch, None, None)
    size = len(tree.flatten(x)[0])
    if weight is None:
        weight = np.ones(size, "float32")
    extra = -size % multiple
    if not extra:
        return x, y, weight

    def pad(array):
        array = np.asarray(array)
        return np.concatenate([array, np.repeat(array[:1], extra, axis=0)])

    weight = np.asarray(weight, "float32")
    weight = np.concatenate([weight, np.zeros((extra, *weight.shape[1:]), "float32")])
    return tree.map_structure(pad, x), None if y is None else tree.map_structure(pad, y), weight


class EvenBatches(keras.utils.PyDataset):
    """Arrays (or another `PyDataset`) as batches of a multiple of `multiple` examples.

    Args:
        x, y, sample_weight: arrays (or dicts of arrays) of the same length, as
            `fit` takes them; or `x` a `PyDataset` of `(x, y[, sample_weight])`.
        batch_size: examples per batch (arrays only).
        multiple: every batch is padded to a multiple of this (the device count).
        shuffle: reshuffle the arrays every epoch; `seed + epoch` seeds it.
        processes, process_id: with several processes, each yields its own equal
            part of every (global) batch, as `keras.distribution` expects of data
            that it does not shard itself.
    """

    def __init__(self, x, y=None, sample_weight=None, batch_size=32, multiple=1,
                 shuffle=False, seed=0, processes=1, process_id=0, **kwargs):
        super().__init__(**kwargs)
        self.processes, self.process_id = int(processes), int(process_id)
        self.dataset = x if isinstance(x, keras.utils.PyDataset) else None
        self.x, self.y, self.sample_weight = x, y, sample_weight
        self.batch_size, self.multiple = int(batch_size), int(multiple)
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self.size = None if self.dataset is not None else len(tree.flatten(x)[0])
        self._order()

    def _order(self):
        if self.size is not None:
            self.order = (np.random.default_rng(self.seed + self.epoch).permutation(self.size)
                          if self.shuffle else np.arange(self.size))

    def __len__(self):
        return len(self.dataset) if self.dataset is not None else math.ceil(
            self.size / self.batch_size)

    def __getitem__(self, index):
        batch = self._global_batch(index)
        if self.processes == 1:
            return batch
        share = len(batch[2]) // self.processes
        start = self.process_id * share

        def part(array):
            return np.asarray(array)[start:start + share]

        return tuple(None if b is None else tree.map_structure(part, b) for b in batch)

    def _global_batch(self, index):
        if self.dataset is not None:
            return pad_batch(self.dataset[index], self.multiple)
        rows = self.order[index * self.batch_size:(index + 1) * self.batch_size]

        def take(array):
            return np.asarray(array)[rows]

        batch = (tree.map_structure(take, self.x),
                 None if self.y is None else tree.map_structure(take, self.y),
                 None if self.sample_weight is None else take(self.sample_weight))
        return pad_batch(batch, self.multiple)

    def on_epoch_end(self):
        self.epoch += 1
        self._order()
        if self.dataset is not None:
            self.dataset.on_epoch_end()
