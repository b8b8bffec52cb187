"""Luong (multiplicative) attention: dot, general and concat scores."""

import keras

from keras_attn import _validation
from keras_attn.attention import Attention
from keras_attn.choices import LUONG_SCORES
from keras_attn.scores import BilinearScore, ConcatScore, DotScore


@keras.saving.register_keras_serializable(package="keras_attn")
class LuongAttention(Attention):
    """Global attention of Luong, Pham & Manning 2015.

    "Effective Approaches to Attention-based Neural Machine Translation", eq. 8:

    * `dot`:     `score(h_t, h̄_s) = h_tᵀ h̄_s`
    * `general`: `score(h_t, h̄_s) = h_tᵀ W_a h̄_s`
    * `concat`:  `score(h_t, h̄_s) = v_aᵀ tanh(W_a [h_t; h̄_s])`

    then `a_t = softmax(score)` over the source positions and `c_t = Σ_s a_t(s) h̄_s`.
    The query is the *current* decoder state `h_t` (Bahdanau uses the previous
    one). With `scale=True` the score is multiplied by a learned scalar `g`, as
    TF-Addons' `LuongAttention(scale=True)`. `W_a h̄_s` (general) and the key half
    of `W_a [h_t; h̄_s]` (concat) depend on the source alone: `precompute_keys`.

    Args:
        score: `"dot"`, `"general"` or `"concat"`.
        scale: learn a scalar multiplying the scores.
        units: hidden size of the `concat` score (default: the key size); refused
            for the others, which have no hidden layer.
        dropout: dropout rate on the attention weights during training.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments and returns: as `keras_attn.Attention`.

    Example:

    >>> h_t = np.random.rand(2, 3, 8).astype("float32")
    >>> h_s = np.random.rand(2, 6, 8).astype("float32")
    >>> tuple(keras_attn.LuongAttention(score="general")(h_t, h_s).shape)
    (2, 3, 8)
    """

    def __init__(self, score="dot", scale=False, units=None, dropout=0.0, **kwargs):
        if "use_scale" in kwargs:
            raise ValueError("LuongAttention's learned scale is `scale=` (TF-Addons' name); "
                             f"received use_scale={kwargs['use_scale']!r}.")
        if score not in LUONG_SCORES:
            raise ValueError(
                f"`score` must be one of {LUONG_SCORES}; received {score!r}."
            )
        units = _validation.check_integer("units", units, allow_none=True)
        if units is not None and score != "concat":
            raise ValueError(
                f"`units` is the hidden size of the `concat` score; the {score!r} score has "
                f"none (received units={units}). TF-Addons' `LuongAttention(units)` is "
                "`score=\"general\"` here, its `W_a` sized by the keys and the query.")
        dtype = kwargs.get("dtype")
        score_layer = {
            "dot": lambda: DotScore(dtype=dtype, name="dot_score"),
            "general": lambda: BilinearScore(dtype=dtype, name="general_score"),
            "concat": lambda: ConcatScore(hidden_units=units, dtype=dtype, name="concat_score"),
        }[score]()
        super().__init__(score=score_layer, use_scale=scale, dropout=dropout, **kwargs)
        self.score_name = score
        self.units = units

    def get_config(self):
        config = super().get_config()
        config.pop("use_scale")
        config.update(score=self.score_name, scale=self.use_scale, units=self.units)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("score", "dot") != "concat":
            # Files saved before `units` was refused for these scores, where it was unused.
            config["units"] = None
        return cls(**config)
