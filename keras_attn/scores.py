"""Attention score functions `s(q, k)`, each a small layer usable alone or by name.

Every score maps queries `(B, Tq, dq)` and keys `(B, Tk, dk)` to scores `(B, Tq, Tk)`
(or `(B, dq)` queries to `(B, Tk)` scores). The work that depends only on the keys
(`U k + b` for additive, `W k` for bilinear, `k / ‖k‖` for cosine) is split out into
`precompute_keys`, so a decoder that scores one query per step against the same
encoder memory pays for it once per sequence, not once per step:

    keys = score.precompute_keys(encoder_outputs)        # once
    for t in ...: s_t = score.score(query_t, keys)       # O(Tk · units) each

| name (`score=`)          | formula                          | layer            |
|--------------------------|----------------------------------|------------------|
| `additive`, `bahdanau`   | `vᵀ tanh(W q + U k + b)`         | `AdditiveScore`  |
| `dot`                    | `qᵀ k`                           | `DotScore`       |
| `scaled_dot`             | `qᵀ k / √d`                      | `ScaledDotScore` |
| `general`, `bilinear`    | `qᵀ W k`                         | `BilinearScore`  |
| `cosine`                 | `β · qᵀk / (‖q‖ ‖k‖)`            | `CosineScore`    |
| `concat`, `mlp`          | `vᵀ tanh(W [q; k])`              | `ConcatScore`    |
"""

import math

import keras
from keras import ops

from keras_attn import _initializers, _validation

_PACKAGE = "keras_attn"


class AttentionScore(keras.layers.Layer):
    """Base class of the score functions: `s(q, k) → (B, Tq, Tk)`.

    Subclasses implement `score(query, keys)` on a rank-3 query and already
    precomputed keys, and override `precompute_keys(keys)` when part of the
    score depends on the keys alone.

    Call arguments:
        query: `(B, Tq, dq)` or `(B, dq)`.
        keys: `(B, Tk, dk)`.

    Returns:
        Scores `(B, Tq, Tk)`, or `(B, Tk)` for a rank-2 query.

    Example: a score of one's own (here the negative squared distance), usable
    by every layer that takes `score=`:

    >>> class NegativeSquaredDistance(keras_attn.AttentionScore):
    ...     def score(self, query, keys):
    ...         difference = ops.expand_dims(query, 2) - ops.expand_dims(keys, 1)
    ...         return -ops.sum(ops.square(difference), axis=-1)
    >>> query = np.zeros((1, 1, 2), "float32")
    >>> memory = np.array([[[3.0, 4.0], [0.0, 1.0]]], "float32")
    >>> ops.convert_to_numpy(NegativeSquaredDistance()(query, memory)).tolist()
    [[[-25.0, -1.0]]]
    >>> attention = keras_attn.Attention(score=NegativeSquaredDistance())
    >>> np.round(ops.convert_to_numpy(attention(query, memory)), 3).tolist()
    [[[0.0, 1.0]]]
    """

    def build(self, query_shape, keys_shape):
        _validation.check_rank("query", query_shape, (2, 3), self.name)
        _validation.check_rank("keys", keys_shape, 3, self.name)

    def precompute_keys(self, keys):
        """The key-only part of the score; the identity unless overridden."""
        return keys

    def precomputed_keys_size(self, query_size, key_size):
        """The last dimension of `precompute_keys(keys)` for these feature sizes."""
        return key_size

    def score(self, query, keys):
        """Scores a rank-3 `query` against `keys` from `precompute_keys`."""
        raise NotImplementedError

    def call(self, query, keys):
        _validation.check_rank("query", query.shape, (2, 3), self.name)
        _validation.check_rank("keys", keys.shape, 3, self.name)
        single_query = len(query.shape) == 2
        if single_query:
            query = ops.expand_dims(query, 1)
        scores = self.score(query, self.precompute_keys(keys))
        return ops.squeeze(scores, 1) if single_query else scores

    def compute_output_shape(self, query_shape, keys_shape):
        return (*query_shape[:-1], keys_shape[1])

    def get_config(self):
        # Explicit, so a parent may pass its `DTypePolicy` object as `dtype`.
        return super().get_config()


def _project_rows(dense, x):
    """`dense(x)` for `(B, T, d)` `x` as one `(B·T, d)` matmul.

    Keras's TF backend runs a rank-3 `Dense` as `Tensordot`, whose gradient XLA
    rejects inside a `while` loop (an RNN decoder step under `jit_compile`).
    """
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    rows = dense(ops.reshape(x, (-1, x.shape[-1])))
    return ops.reshape(rows, (batch, length, rows.shape[-1]))


def _query_shape_3d(query_shape):
    query_shape = tuple(query_shape)
    return query_shape if len(query_shape) == 3 else (query_shape[0], 1, query_shape[1])


@keras.saving.register_keras_serializable(package=_PACKAGE)
class DotScore(AttentionScore):
    """Dot-product score `s(q, k) = qᵀ k` (Luong et al. 2015, "dot").

    Args:
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> q, k = np.ones((2, 3, 4)), np.ones((2, 5, 4))
    >>> tuple(keras_attn.scores.DotScore()(q, k).shape)
    (2, 3, 5)
    """

    def _scale(self, depth):
        return None

    def build(self, query_shape, keys_shape):
        super().build(query_shape, keys_shape)
        _validation.check_same_dim(
            "query", query_shape, -1, "keys", keys_shape, -1, "feature size", self.name
        )

    def score(self, query, keys):
        _validation.check_same_dim(
            "query", query.shape, -1, "keys", keys.shape, -1, "feature size", self.name
        )
        scale = self._scale(query.shape[-1])
        if scale is not None:
            # Scaling the (smaller) query keeps the (Tq × Tk) product untouched.
            query = query * ops.cast(scale, query.dtype)
        return ops.matmul(query, ops.swapaxes(keys, -1, -2))


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ScaledDotScore(DotScore):
    """Scaled dot-product score `s(q, k) = qᵀ k / √d` (Vaswani et al. 2017).

    Dividing by `√d` keeps the score variance near 1 for unit-variance `q`, `k`,
    so the softmax does not saturate as the depth `d` grows.

    Example:

    >>> q, k = np.ones((2, 3, 4)), np.ones((2, 5, 4))
    >>> float(keras_attn.scores.ScaledDotScore()(q, k)[0, 0, 0])
    2.0
    """

    def _scale(self, depth):
        return 1.0 / math.sqrt(depth)


@keras.saving.register_keras_serializable(package=_PACKAGE)
class BilinearScore(AttentionScore):
    """Bilinear ("general") score `s(q, k) = qᵀ W k` (Luong et al. 2015).

    `W k` depends on the keys alone and is what `precompute_keys` returns.

    Args:
        kernel_initializer: initializer of `W`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> q, k = np.ones((2, 3, 4)), np.ones((2, 5, 6))
    >>> tuple(keras_attn.scores.BilinearScore()(q, k).shape)
    (2, 3, 5)
    """

    def __init__(self, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.key_projection = None

    def build(self, query_shape, keys_shape):
        super().build(query_shape, keys_shape)
        self.key_projection = keras.layers.Dense(
            query_shape[-1],
            use_bias=False,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="key_projection",
        )
        self.key_projection.build(tuple(keys_shape))

    def precompute_keys(self, keys):
        if self.key_projection is None:
            raise RuntimeError(
                f"{self.name}: `W k` maps keys to the query size, which is unknown "
                "until the layer is built; call it once or `build(query_shape, "
                "keys_shape)` before `precompute_keys`."
            )
        return self.key_projection(keys)

    def precomputed_keys_size(self, query_size, key_size):
        return query_size  # `W k` is compared with the query

    def score(self, query, keys):
        return ops.matmul(query, ops.swapaxes(keys, -1, -2))

    def get_config(self):
        return {
            **super().get_config(),
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }


@keras.saving.register_keras_serializable(package=_PACKAGE)
class CosineScore(AttentionScore):
    """Cosine-similarity score sharpened by a strength `β`.

    `s(q, k) = β · qᵀk / (max(‖q‖, ε) · max(‖k‖, ε))`, the content-addressing
    similarity of neural Turing machines (Graves et al. 2014, eq. 5), where the
    controller emits `β_t ≥ 0` per step. `ε` keeps a zero vector (an empty memory
    row) at similarity 0 instead of NaN.

    Args:
        beta: default sharpening strength, used when `call` gets no `beta`.
        epsilon: lower bound on the norms.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        query: `(B, Tq, d)` or `(B, d)`.
        keys: `(B, Tk, d)`.
        beta: optional strength per query, broadcastable to `(B, Tq)` (or `(B,)`
            for a rank-2 query); overrides the constructor's `beta`.

    Example:

    >>> q = np.array([[1.0, 0.0]]); k = np.array([[[2.0, 0.0], [0.0, 3.0]]])
    >>> ops.convert_to_numpy(keras_attn.scores.CosineScore(beta=5.0)(q, k)).tolist()
    [[5.0, 0.0]]
    """

    def __init__(self, beta=1.0, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta = _validation.check_number("beta", beta, low_inclusive=True)
        self.epsilon = _validation.check_number("epsilon", epsilon)

    def build(self, query_shape, keys_shape):
        super().build(query_shape, keys_shape)
        _validation.check_same_dim(
            "query", query_shape, -1, "keys", keys_shape, -1, "feature size", self.name
        )

    def _unit(self, x):
        norm = ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True))
        return x / ops.maximum(norm, ops.cast(self.epsilon, x.dtype))

    def precompute_keys(self, keys):
        return self._unit(keys)

    def score(self, query, keys, beta=None):
        cosine = ops.matmul(self._unit(query), ops.swapaxes(keys, -1, -2))
        if beta is None:
            return cosine * ops.cast(self.beta, cosine.dtype)
        beta = ops.cast(beta, cosine.dtype)
        # (B,) or (B, Tq) strengths scale each query row.
        while len(beta.shape) < len(cosine.shape):
            beta = ops.expand_dims(beta, -1)
        return cosine * beta

    def call(self, query, keys, beta=None):
        _validation.check_rank("query", query.shape, (2, 3), self.name)
        _validation.check_rank("keys", keys.shape, 3, self.name)
        single_query = len(query.shape) == 2
        if single_query:
            query = ops.expand_dims(query, 1)
            if beta is not None and len(ops.shape(beta)) == 1:
                beta = ops.expand_dims(beta, 1)
        scores = self.score(query, self.precompute_keys(keys), beta=beta)
        return ops.squeeze(scores, 1) if single_query else scores

    def get_config(self):
        return {**super().get_config(), "beta": self.beta, "epsilon": self.epsilon}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class AdditiveScore(AttentionScore):
    """Additive (Bahdanau) score `s(q, k) = vᵀ tanh(W q + U k + b)`.

    From Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly
    Learning to Align and Translate" (their `a(s_{i-1}, h_j)`). `U k` is the
    expensive term and, with `b`, depends on the keys alone: `precompute_keys`
    returns `U k + b`.
    A bias on `v`'s output would add the same constant to every key's score and
    cancel in the softmax, so there is none.

    With `normalize=True`, `v` is weight-normalised, `v = g · v / ‖v‖` with a
    learned scalar `g` (Salimans & Kingma 2016), as TF-Addons'
    `BahdanauAttention(normalize=True)`.

    Args:
        units: hidden size of `W q + U k`; defaults to the key size.
        use_bias: whether to add the bias `b` inside the `tanh`.
        normalize: weight-normalise `v`.
        kernel_initializer: initializer of `W`, `U` and `v`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> q, k = np.ones((2, 7)), np.ones((2, 5, 6))
    >>> tuple(keras_attn.scores.AdditiveScore(units=8)(q, k).shape)
    (2, 5)
    """

    def __init__(
        self,
        units=None,
        use_bias=True,
        normalize=False,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = _validation.check_integer("units", units, allow_none=True)
        self.use_bias = bool(use_bias)
        self.normalize = bool(normalize)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        # Created by `_create_weights`, from `build` or from `precompute_keys`.
        self.query_projection = self.key_projection = None
        self.v = self.bias = self.g = None

    def _dense(self, units, name, index):
        return keras.layers.Dense(
            units,
            use_bias=False,
            kernel_initializer=_initializers.fresh(self.kernel_initializer, index),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, keys_shape):
        super().build(query_shape, keys_shape)
        self._create_weights(self.units or keys_shape[-1])
        if not self.query_projection.built:
            self.query_projection.build(_query_shape_3d(query_shape))
        if not self.key_projection.built:
            self.key_projection.build(tuple(keys_shape))
        elif self.key_projection.kernel.shape[0] != keys_shape[-1]:
            raise ValueError(
                f"{self.name}: keys have {keys_shape[-1]} features but the keys "
                f"were precomputed from {self.key_projection.kernel.shape[0]}."
            )

    def _create_weights(self, units):
        """Creates the projections and `v`, `b`, `g` that do not exist yet.

        Both `build` and `precompute_keys` (which may come first, before the
        query size is known) call it; the order `v`, `bias`, `g` is the order
        in which a saved layer's weights are restored.
        """
        if self.query_projection is None:
            self.query_projection = self._dense(units, "query_projection", 0)
            self.key_projection = self._dense(units, "key_projection", 1)
        if self.v is not None:
            return
        self.v = self.add_weight(
            name="v", shape=(units,), initializer=_initializers.fresh(self.kernel_initializer, 2))
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(units,), initializer="zeros")
        if self.normalize:
            self.g = self.add_weight(
                name="g",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / units)),
            )

    def precompute_keys(self, keys):
        """`U k + b`: everything inside the `tanh` that does not depend on the query.

        The bias sits here, not with `W q`: its gradient is then summed once per
        sequence, with `U`'s, instead of over the `(B, Tk, units)` tensor at every
        decoder step (which cost XLA one more pass over it per step).
        """
        _validation.check_rank("keys", keys.shape, 3, self.name)
        self._create_weights(self.units or keys.shape[-1])
        projected = self.key_projection(keys)
        if self.bias is not None:
            projected = projected + ops.cast(self.bias, projected.dtype)
        return projected

    def precomputed_keys_size(self, query_size, key_size):
        return self.units or key_size

    def score(self, query, keys):
        # Per step, only the (B, Tq, Tk, units) tanh is paid (the bias is in the
        # keys), and vᵀ tanh(·) is one matrix-vector product (1.5× faster
        # forward+backward than multiply-then-sum on the TF CPU backend, with
        # and without jit).
        projected_query = _project_rows(self.query_projection, query)
        hidden = ops.tanh(ops.expand_dims(projected_query, 2) + ops.expand_dims(keys, 1))
        v = self.v
        if self.g is not None:
            v = self.g * v / ops.sqrt(ops.sum(ops.square(v)))
        # One (B·Tq·Tk, units) × (units, 1) matmul. The broadcasting rank-4
        # batched matmul against v as (1, 1, units, 1) gave wrong numbers or
        # corrupted the heap, forward and backward, in TF 2.21's oneDNN kernel
        # on an AVX-512 CPU (tensorflow/tensorflow#123109).
        shape = ops.shape(hidden)
        rows = ops.matmul(
            ops.reshape(hidden, (-1, hidden.shape[-1])),
            ops.reshape(ops.cast(v, hidden.dtype), (-1, 1)),
        )
        return ops.reshape(rows, (shape[0], shape[1], shape[2]))

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "use_bias": self.use_bias,
            "normalize": self.normalize,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ConcatScore(AdditiveScore):
    """Concat (MLP) score `s(q, k) = vᵀ tanh(W [q; k])` (Luong et al. 2015, "concat").

    `W [q; k] = W_q q + W_k k` for the column blocks of `W`, so this is the
    additive score with Luong's defaults (no bias) and its hidden size named
    `hidden_units`; the block form is what lets `W_k k` be precomputed.

    Args:
        hidden_units: rows of `W` (the MLP's hidden size); defaults to the key size.
        use_bias: add a bias inside the `tanh` (not in Luong et al.).
        kernel_initializer: initializer of `W` and `v`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:

    >>> q, k = np.ones((2, 3, 4)), np.ones((2, 5, 6))
    >>> tuple(keras_attn.scores.ConcatScore(hidden_units=16)(q, k).shape)
    (2, 3, 5)
    """

    def __init__(
        self, hidden_units=None, use_bias=False, kernel_initializer="glorot_uniform", **kwargs
    ):
        kwargs.pop("units", None)
        kwargs.pop("normalize", None)
        super().__init__(
            units=_validation.check_integer("hidden_units", hidden_units, allow_none=True),
            use_bias=use_bias,
            normalize=False,
            kernel_initializer=kernel_initializer,
            **kwargs,
        )

    def get_config(self):
        config = super().get_config()
        config["hidden_units"] = config.pop("units")
        config.pop("normalize")
        return config


SCORES = {
    "additive": AdditiveScore,
    "bahdanau": AdditiveScore,
    "dot": DotScore,
    "scaled_dot": ScaledDotScore,
    "general": BilinearScore,
    "bilinear": BilinearScore,
    "cosine": CosineScore,
    "concat": ConcatScore,
    "mlp": ConcatScore,
}


def get(identifier, **kwargs):
    """Returns a score layer from a name in `SCORES`, a config dict or an instance.

    `kwargs` (e.g. the parent layer's `dtype`) go to a score created by name.
    """
    if isinstance(identifier, AttentionScore):
        return identifier
    if isinstance(identifier, dict):
        score = keras.saving.deserialize_keras_object(identifier)
        if not isinstance(score, AttentionScore):
            raise TypeError(f"`score` config does not describe a score layer: {identifier}")
        return score
    if isinstance(identifier, str):
        key = identifier.lower().replace("-", "_")
        if key not in SCORES:
            raise ValueError(
                f"Unknown `score` {identifier!r}; expected one of {sorted(SCORES)} "
                "or an `AttentionScore` layer."
            )
        return SCORES[key](**kwargs)
    raise TypeError(
        "`score` must be a name, a config dict or an `AttentionScore` layer; "
        f"received {type(identifier).__name__}."
    )
