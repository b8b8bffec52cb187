"""The Hopfield layer family of Ramsauer et al. (2020): `Hopfield`, `HopfieldPooling`
and `HopfieldLayer`, the three layers of the reference library `ml-jku/hopfield-layers`."""

import math

import keras
from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops

_PACKAGE = "keras_attn"


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Hopfield(keras.layers.Layer):
    """Modern Hopfield association of state patterns with stored patterns.

    Ramsauer et al. (2020), "Hopfield Networks is All You Need", eq. (10), as the
    reference library's `Hopfield` module: state patterns `R` (the queries) and
    stored patterns `Y` (the keys) are normalised (layer norm) and projected into
    an association space per head, `ξ = R W_Q`, `K = Y W_K`; the state is updated

        ξ ← softmax(β ξ Kᵀ) K

    until it moves less than `update_steps_eps` (at most `update_steps_max` times),
    and the retrieval reads the projected pattern projections `V = P W_V` (`P`
    defaults to `Y`) and maps the heads back:

        Z = softmax(β ξ Kᵀ) V W_O

    With no normalisation, no update step and `β = 1/√key_dim`, this is exactly
    `keras.layers.MultiHeadAttention(query=R, key=Y, value=P)` (the mapping of the
    paper's §3; a test checks it weight for weight).

    Args:
        num_heads: heads, each with its own association space.
        key_dim: size of the association space of a head.
        value_dim: size of a head's projected pattern (default `key_dim`).
        scaling: `β` (default `1/√key_dim`).
        update_steps_max: extra updates of the state before the retrieval (0: one
            retrieval, as attention).
        update_steps_eps: a state that moves less than this (max norm) stops.
        normalize_stored_pattern, normalize_state_pattern,
        normalize_pattern_projection: layer-normalise each input first.
        use_projections: project `R`, `Y`, `P` (False: the raw patterns are the
            association space, `num_heads` must be 1 and the sizes equal).
        output_dim: size of the output (default: the state patterns' size);
            `None` with `use_output_projection=False` gives the heads concatenated.
        use_output_projection: map the heads back with `W_O`.
        use_bias: biases on the projections.
        dropout: dropout on the association weights while training.
        seed: seed of that dropout.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        state_pattern: `R`, `(B, Tq, d_r)`.
        stored_pattern: `Y`, `(B, Tk, d_y)`.
        pattern_projection: `P`, `(B, Tk, d_p)` (default `Y`).
        stored_mask: optional `(B, Tk)` booleans, false for padded stored patterns.
        association_mask: optional `(B, Tq, Tk)` booleans, false where a state
            pattern must not associate with a stored pattern.
        return_attention_scores: also return the association weights.
        training: whether dropout is active.

    Returns:
        `(B, Tq, output_dim)`, and with `return_attention_scores=True` also the
        weights `(B, num_heads, Tq, Tk)` of the retrieval.

    Example:
    >>> layer = keras_attn.memory.Hopfield(num_heads=2, key_dim=4, update_steps_max=3)
    >>> state, stored = np.random.rand(2, 3, 8), np.random.rand(2, 5, 8)
    >>> tuple(layer(state.astype("float32"), stored.astype("float32")).shape)
    (2, 3, 8)
    """

    def __init__(
        self,
        num_heads=1,
        key_dim=None,
        value_dim=None,
        scaling=None,
        update_steps_max=0,
        update_steps_eps=1e-4,
        normalize_stored_pattern=True,
        normalize_state_pattern=True,
        normalize_pattern_projection=True,
        use_projections=True,
        output_dim=None,
        use_output_projection=True,
        use_bias=True,
        dropout=0.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = _validation.check_integer("num_heads", num_heads)
        self.key_dim = _validation.check_integer("key_dim", key_dim, allow_none=True)
        self.value_dim = _validation.check_integer("value_dim", value_dim, allow_none=True)
        self.scaling = _validation.check_number("scaling", scaling, allow_none=True)
        self.update_steps_max = _validation.check_integer(
            "update_steps_max", update_steps_max, 0
        )
        self.update_steps_eps = _validation.check_number(
            "update_steps_eps", update_steps_eps, low_inclusive=True
        )
        self.normalize_stored_pattern = bool(normalize_stored_pattern)
        self.normalize_state_pattern = bool(normalize_state_pattern)
        self.normalize_pattern_projection = bool(normalize_pattern_projection)
        self.use_projections = bool(use_projections)
        self.output_dim = _validation.check_integer("output_dim", output_dim, allow_none=True)
        self.use_output_projection = bool(use_output_projection)
        self.use_bias = bool(use_bias)
        self.dropout = _validation.check_number("dropout", dropout, low_inclusive=True, high=1.0)
        self.seed = seed
        if use_projections and key_dim is None:
            raise ValueError("`key_dim` must be set when `use_projections=True`; received None.")
        if not use_projections and num_heads != 1:
            raise ValueError(
                f"`num_heads` must be 1 without projections; received num_heads={num_heads}."
            )
        self.dropout_layer = keras.layers.Dropout(self.dropout, seed=seed)
        self.supports_masking = True

    def _norm(self, enabled, name):
        if not enabled:
            return None
        return keras.layers.LayerNormalization(epsilon=1e-5, dtype=self.dtype_policy, name=name)

    def _projection(self, size, name):
        return keras.layers.EinsumDense(
            "btd,dhk->bthk", (None, self.num_heads, size),
            bias_axes="hk" if self.use_bias else None, dtype=self.dtype_policy, name=name,
        )

    def build(self, state_pattern_shape, stored_pattern_shape, pattern_projection_shape=None):
        state_shape, stored_shape = state_pattern_shape, stored_pattern_shape
        projection_shape = pattern_projection_shape
        _validation.check_rank("state_pattern", state_shape, 3, self.name)
        _validation.check_rank("stored_pattern", stored_shape, 3, self.name)
        projection_shape = tuple(projection_shape or stored_shape)
        _validation.check_rank("pattern_projection", projection_shape, 3, self.name)
        if not self.use_projections:
            if state_shape[-1] != stored_shape[-1]:
                raise ValueError(
                    "Without projections, `state_pattern` and `stored_pattern` must have the "
                    f"same size; received {state_shape[-1]} and {stored_shape[-1]}."
                )
        self.state_norm = self._norm(self.normalize_state_pattern, "state_norm")
        self.stored_norm = self._norm(self.normalize_stored_pattern, "stored_norm")
        self.projection_norm = self._norm(self.normalize_pattern_projection, "projection_norm")
        for norm, shape in ((self.state_norm, state_shape), (self.stored_norm, stored_shape),
                            (self.projection_norm, projection_shape)):
            if norm is not None:
                norm.build(tuple(shape))
        key_dim = self.key_dim if self.use_projections else state_shape[-1]
        self._head_key_dim = key_dim
        self._head_value_dim = (self.value_dim or key_dim) if self.use_projections \
            else projection_shape[-1]
        if self.use_projections:
            self.query_dense = self._projection(key_dim, "query")
            self.query_dense.build(tuple(state_shape))
            self.key_dense = self._projection(key_dim, "key")
            self.key_dense.build(tuple(stored_shape))
            self.value_dense = self._projection(self._head_value_dim, "value")
            self.value_dense.build(projection_shape)
        self.output_dense = None
        if self.use_output_projection:
            out = self.output_dim or state_shape[-1]
            self.output_dense = keras.layers.EinsumDense(
                "bthk,hko->bto", (None, out), bias_axes="o" if self.use_bias else None,
                dtype=self.dtype_policy, name="output",
            )
            self.output_dense.build((None, None, self.num_heads, self._head_value_dim))
        self.built = True

    def _heads(self, dense, x):
        """`(B, T, d)` → `(B, heads, T, dim)`."""
        if dense is None:
            return ops.expand_dims(x, 1)
        return ops.transpose(dense(x), (0, 2, 1, 3))

    def call(self, state_pattern, stored_pattern, pattern_projection=None, stored_mask=None,
             association_mask=None, return_attention_scores=False, training=None):
        _validation.check_rank("state_pattern", state_pattern.shape, 3, self.name)
        _validation.check_rank("stored_pattern", stored_pattern.shape, 3, self.name)
        if pattern_projection is None:
            pattern_projection = stored_pattern
        _validation.check_dtype("floating", self.name, state_pattern=state_pattern,
                                stored_pattern=stored_pattern,
                                pattern_projection=pattern_projection)
        _validation.check_padding_masks(state_pattern.shape, stored_pattern.shape, self.name,
                                        value_mask=stored_mask)
        _validation.check_attention_mask(association_mask, state_pattern, stored_pattern,
                                         self.name)
        normed = []
        for norm, x in ((self.state_norm, state_pattern), (self.stored_norm, stored_pattern),
                        (self.projection_norm, pattern_projection)):
            normed.append(norm(x) if norm is not None else x)
        state, stored, projection = normed
        projected = self.use_projections
        xi = self._heads(self.query_dense if projected else None, state)
        keys = self._heads(self.key_dense if projected else None, stored)
        values = self._heads(self.value_dense if projected else None, projection)
        beta = self.scaling if self.scaling is not None else 1.0 / math.sqrt(self._head_key_dim)
        mask = attn_ops.attention_mask(
            ops.shape(xi)[2], ops.shape(keys)[2], mask=association_mask,
            key_masks=(stored_mask,),
        )
        if mask is not None:
            mask = ops.expand_dims(mask, 1)

        def associate(state):
            scores = ops.matmul(state, ops.swapaxes(keys, -1, -2)) * ops.cast(beta, state.dtype)
            return attn_ops.masked_softmax(scores, mask)

        for _ in range(self.update_steps_max):
            updated = ops.matmul(associate(xi), keys)
            moved = ops.max(ops.abs(updated - xi), axis=-1, keepdims=True)
            # A state that has converged stays where it is (the reference's ε rule).
            xi = ops.where(moved < self.update_steps_eps, xi, updated)
        weights = associate(xi)
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = ops.transpose(ops.matmul(dropped, values), (0, 2, 1, 3))  # (B, Tq, H, dv)
        if self.output_dense is not None:
            output = self.output_dense(context)
        else:
            batch, length = ops.shape(context)[0], ops.shape(context)[1]
            output = ops.reshape(context, (batch, length, self.num_heads * self._head_value_dim))
        if return_attention_scores:
            return output, weights
        return output

    def compute_mask(self, state_pattern, previous_mask=None):
        return None

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "scaling": self.scaling,
            "update_steps_max": self.update_steps_max,
            "update_steps_eps": self.update_steps_eps,
            "normalize_stored_pattern": self.normalize_stored_pattern,
            "normalize_state_pattern": self.normalize_state_pattern,
            "normalize_pattern_projection": self.normalize_pattern_projection,
            "use_projections": self.use_projections,
            "output_dim": self.output_dim,
            "use_output_projection": self.use_output_projection,
            "use_bias": self.use_bias,
            "dropout": self.dropout,
            "seed": self.seed,
        }


_HOPFIELD_ARGUMENTS = (
    "num_heads", "key_dim", "value_dim", "scaling", "update_steps_max", "update_steps_eps",
    "normalize_stored_pattern", "normalize_state_pattern", "normalize_pattern_projection",
    "output_dim", "use_bias", "dropout", "seed",
)


def _per_example(weight, batch, dtype):
    """A learned `(n, d)` pattern matrix as `(batch, n, d)`, one copy per example."""
    return ops.broadcast_to(ops.cast(weight, dtype)[None], (batch, *weight.shape))


def _split_arguments(owner, kwargs):
    """A wrapper's keyword arguments → `(Layer's, Hopfield's)`; `TypeError` on others."""
    layer = {k: kwargs[k] for k in ("name", "dtype", "trainable") if k in kwargs}
    hopfield = {k: kwargs[k] for k in _HOPFIELD_ARGUMENTS if k in kwargs}
    unknown = sorted(set(kwargs) - set(layer) - set(hopfield))
    if unknown:
        raise TypeError(f"{owner} got unexpected arguments {unknown}.")
    return layer, hopfield


@keras.saving.register_keras_serializable(package=_PACKAGE)
class HopfieldPooling(keras.layers.Layer):
    """Pools a set with learned state patterns: `Z = softmax(β Q Kᵀ) V`, `Q` learned.

    The reference library's `HopfieldPooling` (Ramsauer et al. 2020, §3, and
    attention-based multiple-instance learning, Ilse et al. 2018): `quantity`
    trainable state patterns `Q` query the instances of each bag (the stored
    patterns), so a bag of any size becomes `quantity` vectors.

    Args:
        quantity: number of learned state patterns (pooled vectors per bag).
        state_dim: size of a learned state pattern (default: the instances' size).
        **hopfield_kwargs: `Hopfield`'s arguments (`num_heads`, `key_dim`,
            `scaling`, `update_steps_max`, normalisation, `output_dim`, ...).

    Call arguments:
        inputs: `(B, T, d)` bag of instances.
        mask: optional `(B, T)` booleans, false for padding (or the Keras mask).
        return_attention_scores: also return the weights `(B, heads, quantity, T)`.
        training: whether dropout is active.

    Returns:
        `(B, quantity, output_dim)`.

    Example:
    >>> pool = keras_attn.memory.HopfieldPooling(num_heads=2, key_dim=4)
    >>> tuple(pool(np.random.rand(3, 7, 8).astype("float32")).shape)
    (3, 1, 8)
    """

    def __init__(self, quantity=1, state_dim=None, **hopfield_kwargs):
        layer_kwargs, hopfield_kwargs = _split_arguments(type(self).__name__, hopfield_kwargs)
        super().__init__(**layer_kwargs)
        self.quantity = _validation.check_integer("quantity", quantity)
        self.state_dim = _validation.check_integer("state_dim", state_dim, allow_none=True)
        self.hopfield_kwargs = hopfield_kwargs
        self.hopfield = Hopfield(**self.hopfield_kwargs, dtype=self.dtype_policy, name="hopfield")
        self.supports_masking = True

    def build(self, inputs_shape):
        _validation.check_rank("inputs", inputs_shape, 3, self.name)
        size = self.state_dim or inputs_shape[-1]
        self.state_patterns = self.add_weight(
            name="state_patterns", shape=(self.quantity, size), initializer="glorot_uniform"
        )
        if self.hopfield_kwargs.get("output_dim") is None:
            self.hopfield.output_dim = inputs_shape[-1]
        self.hopfield.build((inputs_shape[0], self.quantity, size), tuple(inputs_shape))
        self.built = True

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        _validation.check_rank("inputs", inputs.shape, 3, self.name)
        queries = _per_example(self.state_patterns, ops.shape(inputs)[0], inputs.dtype)
        return self.hopfield(queries, inputs, stored_mask=mask,
                             return_attention_scores=return_attention_scores, training=training)

    def compute_mask(self, inputs, previous_mask=None):
        return None

    def get_config(self):
        return {**super().get_config(), "quantity": self.quantity, "state_dim": self.state_dim,
                **self.hopfield_kwargs}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class HopfieldLayer(keras.layers.Layer):
    """A trainable lookup: each input associates with `quantity` learned stored patterns.

    The reference library's `HopfieldLayer` (Ramsauer et al. 2020, §3): the
    inputs are the state patterns and both the stored patterns `Y` and their
    projections `P` are weights, `Z = softmax(β R W_Q (Y W_K)ᵀ) P W_V W_O`, a
    learned memory read by content (like a fully connected layer whose hidden
    units compete by a softmax).

    Args:
        quantity: number of learned stored patterns.
        pattern_dim: size of a stored pattern and of its projection (default:
            the inputs' size).
        **hopfield_kwargs: `Hopfield`'s arguments.

    Call arguments:
        inputs: `(B, T, d)` state patterns.
        return_attention_scores: also return the weights `(B, heads, T, quantity)`.
        training: whether dropout is active.

    Returns:
        `(B, T, output_dim)`.

    Example:
    >>> lookup = keras_attn.memory.HopfieldLayer(quantity=16, num_heads=1, key_dim=4)
    >>> tuple(lookup(np.random.rand(3, 5, 8).astype("float32")).shape)
    (3, 5, 8)
    """

    def __init__(self, quantity, pattern_dim=None, **hopfield_kwargs):
        layer_kwargs, hopfield_kwargs = _split_arguments(type(self).__name__, hopfield_kwargs)
        super().__init__(**layer_kwargs)
        self.quantity = _validation.check_integer("quantity", quantity)
        self.pattern_dim = _validation.check_integer("pattern_dim", pattern_dim, allow_none=True)
        self.hopfield_kwargs = hopfield_kwargs
        self.hopfield = Hopfield(**self.hopfield_kwargs, dtype=self.dtype_policy, name="hopfield")

    def build(self, inputs_shape):
        _validation.check_rank("inputs", inputs_shape, 3, self.name)
        size = self.pattern_dim or inputs_shape[-1]
        self.stored_patterns = self.add_weight(
            name="stored_patterns", shape=(self.quantity, size), initializer="glorot_uniform"
        )
        self.pattern_projections = self.add_weight(
            name="pattern_projections", shape=(self.quantity, size),
            initializer="glorot_uniform",
        )
        stored = (inputs_shape[0], self.quantity, size)
        self.hopfield.build(tuple(inputs_shape), stored, stored)
        self.built = True

    def call(self, inputs, return_attention_scores=False, training=None):
        _validation.check_rank("inputs", inputs.shape, 3, self.name)
        batch = ops.shape(inputs)[0]
        stored = _per_example(self.stored_patterns, batch, inputs.dtype)
        projections = _per_example(self.pattern_projections, batch, inputs.dtype)
        return self.hopfield(inputs, stored, projections,
                             return_attention_scores=return_attention_scores, training=training)

    def get_config(self):
        return {**super().get_config(), "quantity": self.quantity,
                "pattern_dim": self.pattern_dim, **self.hopfield_kwargs}
