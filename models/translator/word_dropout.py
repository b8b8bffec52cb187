"""`WordDropout`: whole source tokens replaced by `[UNK]` while training."""

import keras
from keras import ops

from keras_attn import _validation
from keras_attn.models.text import SPECIALS, UNK_ID


@keras.saving.register_keras_serializable(package="keras_attn_models")
class WordDropout(keras.layers.Layer):
    """Replaces each real token id by `[UNK]` with probability `rate`, in training only.

    Word dropout (Gal & Ghahramani 2016; Sennrich & Zhang 2019, "Revisiting
    Low-Resource Neural Machine Translation", §3) drops whole words rather than
    embedding features: for token ids `x_t`,

        x̃_t = [UNK]  with probability p  (x_t not a special id),
        x̃_t = x_t    otherwise,

    so the model cannot lean on any one source word, the regulariser that helps
    most on a few thousand training pairs. Padding and the other special ids are
    kept, so masks and lengths are unchanged. At inference (`training=False`) the
    layer is the identity.

    Args:
        rate: the probability `p` of replacing a token, in `[0, 1)`.
        seed: the random seed of the replacement draws.

    Call arguments:
        ids: int token ids `(batch, length)`.
        training: whether to drop (Keras sets it in `fit`).

    Returns:
        The ids, of the same shape and dtype.

    Example:

    >>> import keras, numpy as np
    >>> from keras_attn.models.translator import WordDropout
    >>> layer = WordDropout(0.5, seed=0)
    >>> ids = np.array([[5, 6, 7, 0]], "int32")
    >>> keras.ops.convert_to_numpy(layer(ids)).tolist()  # inference: unchanged
    [[5, 6, 7, 0]]
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = _validation.check_number("rate", rate, low_inclusive=True, high=1.0)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True

    def call(self, ids, training=None):
        if not training or self.rate == 0:
            return ids
        draws = keras.random.uniform(ops.shape(ids), seed=self.seed_generator)
        droppable = ops.greater_equal(ids, len(SPECIALS))
        dropped = ops.logical_and(droppable, ops.less(draws, self.rate))
        return ops.where(dropped, ops.cast(UNK_ID, ids.dtype), ids)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}

