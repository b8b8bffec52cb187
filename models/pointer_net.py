"""Pointer network: an encoder over a point set, an LSTM decoder that points into it.

Vinyals, Fortunato & Jaitly 2015, "Pointer Networks": the output at step `i` is
`p(C_i | C_<i, P) = softmax_j(u^i_j)`, `u^i_j = vᵀ tanh(W₁ e_j + W₂ d_i)`, a
distribution over the input positions (`keras_attn.PointerAttention`). The
decoder's input at each step is the encoder state of the point it chose last.

Positions and tokens: the decoder points into `[END, x_1 … x_N]`, so token 0 is
END and token `j ≥ 1` is point `j − 1`; as a decoder *input*, token 0 is START (a
learned vector), since END is never fed back. Every step excludes padding and the
points already chosen, so a decoded output is always a permutation or a subset
of distinct points; END is allowed once every point is chosen (`min_outputs=None`:
the output is a permutation) or once `min_outputs` points are (a convex hull has
at least 3 vertices). With `start_index` (TSP) the output starts at that point:
it is given, as the first decoder input, and not predicted.

Encoders:
- `"lstm"`: an LSTM over the points in input order (Vinyals et al. 2015);
- `"set"`: self-attention blocks without positions, so the encoding is the same
  for any order of the input (the point of Vinyals, Bengio & Kudlur 2016, "Order
  Matters"; the encoder of Kool et al. 2019).

`PointerNet` is the teacher-forced training model, `{"points",
"lengths", "decoder_tokens"}` → log-probabilities `(B, T, N + 1)`, trained with
`model.fit`; `decode` runs greedy or beam search with the same layers.
"""

import keras
import numpy as np
from keras import ops

import keras_attn
from keras_attn import _validation, decoding
from keras_attn.choices import POINTER_ENCODERS
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.configured import (
    ConfiguredModel,
    check_export_arguments,
    check_export_backend,
    write_export_meta,
)

END, START = 0, 0
_PACKAGE = "keras_attn_models"


def point_mask(points, lengths):
    """`(B, N)` booleans, true at the first `lengths[b]` points of each row."""
    n = ops.shape(points)[1]
    return ops.less(ops.arange(n, dtype="int32")[None, :],
                    ops.cast(lengths, "int32")[:, None])


def allowed_positions(valid, chosen, min_outputs=None):
    """Where the next pointer may point, `(..., N + 1)`: END first, then the points.

    A point is allowed if it is real (`valid`) and not yet `chosen`. END is allowed
    once none is left or, with `min_outputs`, once `min(min_outputs, n)` are chosen.
    """
    valid, chosen = ops.cast(valid, "bool"), ops.cast(chosen, "bool")
    free = ops.logical_and(valid, ops.logical_not(chosen))
    end = ops.logical_not(ops.any(free, axis=-1))
    if min_outputs is not None:
        picked = ops.sum(ops.cast(ops.logical_and(valid, chosen), "int32"), axis=-1)
        size = ops.sum(ops.cast(valid, "int32"), axis=-1)
        end = ops.logical_or(end, picked >= ops.minimum(size, min_outputs))
    return ops.concatenate([end[..., None], free], axis=-1)


@keras.saving.register_keras_serializable(package=_PACKAGE)
class PointerEncoder(keras.layers.Layer):
    """Point features → `(encoded (B, N, units), mask (B, N), decoder states [h, c])`.

    `"set"`: a linear embedding and `layers` pre-norm Transformer blocks
    (multi-head self-attention over the real points, a ReLU feed-forward of
    `4 · units`), no positions, each block's residual branches initialised to
    zero; the decoder starts from projections of the mean
    encoding. `"lstm"`: a linear embedding and an LSTM; the decoder starts from its
    final state.
    """

    def __init__(self, kind="set", units=128, layers=3, heads=8, **kwargs):
        super().__init__(**kwargs)
        if kind not in POINTER_ENCODERS:
            raise ValueError(f"`kind` must be one of {POINTER_ENCODERS}; received {kind!r}.")
        self.kind, self.units, self.layers, self.heads = kind, units, layers, heads
        self.embedding = keras.layers.Dense(units, name="embedding")
        self.blocks, self.lstm, self.bridges = [], None, []
        if kind == "set":
            for i in range(layers):
                self.blocks.append((
                    keras.layers.LayerNormalization(name=f"attention_norm_{i}"),
                    keras_attn.MultiHeadAttention(heads, units // heads, name=f"attention_{i}"),
                    keras.layers.LayerNormalization(name=f"feedforward_norm_{i}"),
                    keras.layers.Dense(4 * units, activation="relu", name=f"feedforward_in_{i}"),
                    keras.layers.Dense(units, kernel_initializer="zeros",
                                       name=f"feedforward_out_{i}"),
                ))
            self.final_norm = keras.layers.LayerNormalization(name="final_norm")
            self.bridges = [keras.layers.Dense(units, activation="tanh", name=f"bridge_{i}")
                            for i in range(2)]
        else:
            self.lstm = keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                          name="lstm")

    def build(self, points_shape, lengths_shape=None):
        self.embedding.build(points_shape)
        shape = (*points_shape[:-1], self.units)
        for norm, attention, ff_norm, ff_in, ff_out in self.blocks:
            norm.build(shape)
            attention.build(shape, shape)
            # Each block starts as the identity (its two residual branches output
            # zeros), so the first encodings are the points' own embeddings. With
            # random branches the blocks add one nearly common vector to every
            # point: the pointer saw almost identical keys and TSP training sat at
            # uniform pointing (loss 0.77) from step 100 to the end of its run.
            attention.output_dense.kernel.assign(
                ops.zeros(attention.output_dense.kernel.shape))
            ff_norm.build(shape)
            ff_in.build(shape)
            ff_out.build((*shape[:-1], 4 * self.units))
        if self.kind == "set":
            self.final_norm.build(shape)
            for bridge in self.bridges:
                bridge.build((shape[0], self.units))
        else:
            self.lstm.build(shape)

    def call(self, points, lengths, training=None):
        mask = point_mask(points, lengths)
        x = self.embedding(points)
        if self.kind == "lstm":
            encoded, h, c = self.lstm(x, mask=mask, training=training)
            return encoded, mask, [h, c]
        keep = ops.cast(mask, x.dtype)[..., None]
        for norm, attention, ff_norm, ff_in, ff_out in self.blocks:
            h = norm(x)
            x = x + attention(h, h, query_mask=mask, value_mask=mask, training=training)
            x = x + ff_out(ff_in(ff_norm(x)))
        encoded = self.final_norm(x) * keep
        count = ops.maximum(ops.sum(keep, axis=1), 1.0)
        pooled = ops.sum(encoded, axis=1) / count
        return encoded, mask, [bridge(pooled) for bridge in self.bridges]

    def get_config(self):
        return {**super().get_config(), "kind": self.kind, "units": self.units,
                "layers": self.layers, "heads": self.heads}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class PointerDecoder(keras.layers.Layer):
    """An LSTM whose input is the last chosen point's encoding, and a
    `PointerAttention` over `[END, e_1 … e_N]` that excludes padding and the
    points already chosen.

    `call` runs teacher-forced over `decoder_tokens` (`[START or the start point,
    y_1 … y_{T−1}]`) and returns `(B, T, N + 1)` log-probabilities; `step` is one
    decoding step for `keras_attn.decoding`.
    """

    def __init__(self, units=128, glimpses=1, logit_clip=10.0, min_outputs=None,
                 start_index=None, **kwargs):
        super().__init__(**kwargs)
        self.units, self.glimpses, self.logit_clip = units, glimpses, logit_clip
        self.min_outputs, self.start_index = min_outputs, start_index
        self.cell = keras.layers.LSTMCell(units, name="lstm_cell")
        self.rnn = keras.layers.RNN(self.cell, return_sequences=True, name="rnn")
        self.pointer = keras_attn.PointerAttention(units, glimpses=glimpses,
                                                   logit_clip=logit_clip, name="pointer")

    def build(self, decoder_tokens_shape, encoded_shape, mask_shape=None, states_shape=None):
        self.start = self.add_weight(name="start", shape=(self.units,),
                                     initializer="random_uniform")
        self.end_key = self.add_weight(name="end_key", shape=(self.units,),
                                       initializer="random_uniform")
        self.cell.build((encoded_shape[0], self.units))
        memory_shape = (encoded_shape[0], None, self.units)
        self.pointer.build((encoded_shape[0], self.units), memory_shape)

    def _prepend(self, vector, encoded):
        batch = ops.shape(encoded)[0]
        first = ops.broadcast_to(ops.cast(vector, encoded.dtype)[None, None],
                                 (batch, 1, self.units))
        return ops.concatenate([first, encoded], axis=1)

    def input_table(self, encoded):
        """`(B, N + 1, units)`: what each token feeds the LSTM (START, then points)."""
        return self._prepend(self.start, encoded)

    def memory(self, encoded):
        """`(B, N + 1, units)`: what the pointer points into (END, then points)."""
        return self._prepend(self.end_key, encoded)

    def _lookup(self, table, tokens):
        one_hot = ops.one_hot(tokens, ops.shape(table)[1], dtype=table.dtype)
        return ops.matmul(one_hot, table)

    def call(self, decoder_tokens, encoded, mask, states, training=None):
        tokens = ops.cast(decoder_tokens, "int32")
        inputs = self._lookup(self.input_table(encoded), tokens)
        outputs = self.rnn(inputs, initial_state=list(states), training=training)
        # The points fed so far are the ones chosen before each step.
        fed = ops.one_hot(tokens, ops.shape(encoded)[1] + 1, dtype="float32")[..., 1:]
        chosen = ops.cumsum(fed, axis=1) > 0
        allowed = allowed_positions(mask[:, None, :], chosen, self.min_outputs)
        return self.pointer(outputs, self.memory(encoded), mask=allowed)

    def step(self, tokens, states, table, memory, mask, precomputed_keys):
        """One step: `(log-probabilities (R, N + 1), states, probabilities)`.

        `states` is `[h, c, chosen]`, `chosen` `(R, N)` float 0/1; `table`,
        `memory`, `mask` and `precomputed_keys` are per row (tiled for beams).
        """
        h, c, chosen = states
        tokens = ops.cast(tokens, "int32")
        x = self._lookup(table, tokens[:, None])[:, 0]
        output, (h, c) = self.cell(x, [h, c])
        fed = ops.one_hot(tokens, ops.shape(memory)[1], dtype=chosen.dtype)[:, 1:]
        chosen = ops.maximum(chosen, fed)
        allowed = allowed_positions(mask, chosen > 0, self.min_outputs)
        log_probs = self.pointer(output, memory, mask=allowed, precomputed_keys=precomputed_keys)
        return log_probs, [h, c, chosen], ops.exp(log_probs)

    def compute_output_shape(self, decoder_tokens_shape, encoded_shape, *args, **kwargs):
        n = None if encoded_shape[1] is None else encoded_shape[1] + 1
        return (*decoder_tokens_shape, n)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "glimpses": self.glimpses,
                "logit_clip": self.logit_clip, "min_outputs": self.min_outputs,
                "start_index": self.start_index}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class PointerNet(ConfiguredModel):
    """The teacher-forced training model: `{"points" (B, N, D), "lengths" (B,),
    "decoder_tokens" (B, T)}` → log-probabilities `(B, T, N + 1)` over
    `[END, x_1 … x_N]`; `decode` runs greedy or beam search with the same layers.

    Args:
        point_dim: `D`, the features of a point (1 to sort, 2 in the plane).
        encoder: `"set"` (self-attention, order-invariant) or `"lstm"`.
        units: the width of the encoder, the decoder LSTM and the pointer; a
            multiple of `heads`.
        encoder_layers, heads: the set encoder's blocks and attention heads.
        glimpses: attention read-outs before pointing ("Order Matters").
        logit_clip: `C` of `C · tanh(u)` (Bello et al. 2016); `None`: no clipping.
        min_outputs: END is allowed after this many points (`None`: after all).
        start_index: the point every output starts at (given, not predicted).

    Example:

    >>> from keras_attn.models.pointer_net import PointerNet
    >>> model = PointerNet(units=32, encoder_layers=1, heads=2)
    >>> model.output.shape
    (None, None, None)
    """

    INTEGER_FLOORS = {"glimpses": 0, "min_outputs": 0, "start_index": 0}

    def __init__(self, point_dim: int = 2, encoder="set", units: int = 128,
                 encoder_layers: int = 3, heads: int = 8, glimpses: int = 1, logit_clip=10.0,
                 min_outputs: int | None = None, start_index: int | None = None, **kwargs):
        if encoder not in POINTER_ENCODERS:
            raise ValueError(f"`encoder` must be one of {POINTER_ENCODERS}; received {encoder!r}.")
        if units % heads:
            raise ValueError(f"`units` ({units}) must be a multiple of `heads` ({heads}).")
        points = keras.Input((None, point_dim), name="points")
        lengths = keras.Input((), dtype="int32", name="lengths")
        tokens = keras.Input((None,), dtype="int32", name="decoder_tokens")
        encoder_layer = PointerEncoder(encoder, units, encoder_layers, heads, name="encoder")
        decoder = PointerDecoder(units, glimpses, logit_clip, min_outputs, start_index,
                                 name="decoder")
        encoded, mask, states = encoder_layer(points, lengths)
        log_probs = decoder(tokens, encoded, mask, states)
        kwargs.setdefault("name", "pointer_net")
        super().__init__({"points": points, "lengths": lengths, "decoder_tokens": tokens},
                         log_probs, **kwargs)

    def compile(self, optimizer="auto", loss="auto", *, weighted_metrics="auto", **kwargs):
        """Keras's `compile`; `"auto"` gives the command line's recipe: Adam (1e-3,
        gradients clipped at norm 1), the cross-entropy of the target positions
        (steps of weight 0 are padding: `teacher_forcing` gives the weights; the
        outputs are log-probabilities, so `from_logits=True` is exact) and the step
        accuracy."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(1e-3, clipnorm=1.0)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy(name="step_accuracy")]
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)

    def generate(self, points, lengths=None, beam_width=1, select="log_prob"):
        """The decoded outputs of point sets, as lists of point indices.

        Args:
            points: `(B, N, point_dim)` (one `(N, point_dim)` set gets a batch axis).
            lengths: `(B,)` real points a row (default: all `N`).
            beam_width, select: as `decode`'s (`"tour_length"`: the shortest closed
                tour of the beam).

        Returns:
            One list of indices per row, in output order (the END and padding left out).
        """
        points = np.asarray(points, "float32")
        if points.ndim == 2:
            points = points[None]
        out = decode(self, points, lengths, beam_width=beam_width, select=select)
        indices = np.asarray(ops.convert_to_numpy(out["indices"]))
        return [[int(i) for i in row if i >= 0] for row in indices]

    def serving_archive(self, beam_width=1, select="log_prob", input_check=None):
        """The served SavedModel as a `keras.export.ExportArchive` (TensorFlow backend).

        Signatures:
        - `serving_default(points, lengths)`: `points` float32 `[batch, N, D]`,
          `lengths` int32 `[batch]` (the real points of each row; those after it
          are padding and ignored);
        - `all_points(points)`: every row uses all `N` points.

        Both return `indices` int32 `[batch, N]` in output order, `-1` after the
        end; `log_prob` float32 `[batch]`; `pointer` float32 `[batch, N + 1, N + 1]`,
        each step's distribution over `[END, x_1 … x_N]`; and `valid` bool
        `[batch]`. A row is decoded only if `1 ≤ length ≤ N` and its real points
        are finite; otherwise `valid` is false, its indices are -1 and `log_prob`
        and `pointer` 0, and the other rows are unaffected. `N = 0` gives
        `[batch, 0]` indices. `input_check(points, lengths)`, if given, is applied
        first (the command line's export adds run-time layout checks and its
        largest trained `N` there).
        """
        check_export_backend()

        def run(points, lengths):
            if input_check is not None:
                points, lengths = input_check(points, lengths)
            lengths = ops.reshape(ops.cast(lengths, "int32"), (-1,))
            batch, n = ops.shape(points)[0], ops.shape(points)[1]
            real = ops.arange(n)[None, :] < lengths[:, None]
            finite = ops.all(ops.isfinite(points), axis=-1)
            valid = ops.logical_and(
                ops.logical_and(lengths >= 1, lengths <= n),
                ops.all(ops.logical_or(finite, ops.logical_not(real)), axis=1))
            kept = ops.logical_and(real, valid[:, None])
            clean = ops.where(kept[..., None], points, 0.0)
            safe_lengths = ops.where(valid, lengths, 1)

            def decoded():
                out = decode(self, clean, safe_lengths, beam_width=beam_width, select=select)
                return (ops.cast(out["indices"], "int32"), ops.cast(out["log_prob"], "float32"),
                        ops.cast(out["pointer"], "float32"))

            def nothing():
                return (ops.zeros((batch, 0), "int32"), ops.zeros((batch,), "float32"),
                        ops.zeros((batch, 1, 1), "float32"))

            indices, log_prob, pointer = ops.cond(n > 0, decoded, nothing)
            return {"indices": ops.where(valid[:, None], indices, -1),
                    "log_prob": ops.where(valid, log_prob, 0.0),
                    "pointer": pointer * ops.cast(valid, "float32")[:, None, None],
                    "valid": valid}

        def all_points(points):
            shape = ops.shape(points)
            return run(points, ops.full((shape[0],), shape[1], "int32"))

        points_spec = keras.InputSpec(shape=(None, None, self.point_dim), dtype="float32",
                                      name="points")
        archive = keras.export.ExportArchive()
        archive.track(self)
        archive.add_endpoint("serving_default", run, input_signature=[
            points_spec, keras.InputSpec(shape=(None,), dtype="int32", name="lengths")])
        archive.add_endpoint("all_points", all_points, input_signature=[points_spec])
        return archive

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               beam_width=1, select="log_prob", task=None, max_points=50, **kwargs):
        """Writes the served SavedModel (`serving_archive`) to `filepath`; with `task`
        (the `keras-attn` task it was trained for: `"pointer-sort"`, `"pointer-hull"`
        or `"pointer-tsp"`), `assets.extra/` too, so `keras-attn predict` and
        `explore` read it as that task's export (`max_points`: the largest set they
        give it)."""
        check_export_arguments("a pointer network", "`points` and `lengths`", format,
                               input_signature, kwargs)
        self.serving_archive(beam_width, select).write_out(filepath, verbose=False)
        if task is not None:
            settings = {"seed": 0, "point_dim": self.point_dim,
                        "max_points": _validation.check_integer("max_points", max_points),
                        "beam_width": int(beam_width), "start_index": self.start_index,
                        "test_instances": 1000, "test_sizes": [], "train_sizes": []}
            write_export_meta(self, filepath, str(task), settings)
        if verbose:
            print(f"Saved the pointer network's serving SavedModel to {filepath}")
        return filepath


def compile_pointer_net(model, learning_rate=1e-3, clipnorm=1.0, jit_compile=True):
    """`model.compile()` (the target positions' cross-entropy, the step accuracy) with
    Adam at this rate and clipping."""
    return compile_with_built_optimizer(
        model, optimizer=keras.optimizers.Adam(learning_rate, clipnorm=clipnorm),
        jit_compile=jit_compile)


def teacher_forcing(outputs, start_index=None):
    """Training arrays from answers: `outputs` `(B, W)` point indices, `-1` after the
    end of each answer (`W` ≥ the longest answer).

    Returns `(decoder_tokens, targets, weights)`, each `(B, W + 1)`: targets are the
    answer's tokens then END; decoder tokens are START (or the start point) then
    the targets shifted by one; weights are 1 up to and including END.
    """
    import numpy as np

    outputs = np.asarray(outputs)
    batch, width = outputs.shape
    targets = np.zeros((batch, width + 1), dtype="int32")
    targets[:, :width] = np.where(outputs >= 0, outputs + 1, END)
    answer_lengths = np.sum(outputs >= 0, axis=1)
    weights = (np.arange(width + 1)[None] <= answer_lengths[:, None]).astype("float32")
    first = START if start_index is None else start_index + 1
    decoder_tokens = np.concatenate(
        [np.full((batch, 1), first, "int32"), targets[:, :-1]], axis=1)
    return decoder_tokens, targets, weights


def tour_lengths(points, indices):
    """Closed-tour lengths of `indices` `(B, K, N)` (`-1`: padding, at the end) over
    `points` `(B, N, D)`: `(B, K)`."""
    n = ops.shape(points)[1]
    used = indices >= 0
    one_hot = ops.one_hot(ops.maximum(indices, 0), n, dtype=points.dtype)
    visited = ops.einsum("bktn,bnd->bktd", one_hot, points)
    step = ops.sqrt(ops.sum(ops.square(visited[:, :, 1:] - visited[:, :, :-1]), axis=-1))
    inner = ops.sum(ops.where(used[:, :, 1:], step, 0.0), axis=-1)
    # The closing edge, from the last visited point back to the first.
    is_last = ops.logical_and(used, ops.logical_not(ops.concatenate(
        [used[:, :, 1:], ops.zeros_like(used[:, :, :1])], axis=-1)))
    last = ops.sum(visited * ops.cast(is_last, points.dtype)[..., None], axis=2)
    closing = ops.sqrt(ops.sum(ops.square(last - visited[:, :, 0]), axis=-1))
    return inner + closing


def _check_decode_inputs(points, lengths, point_dim):
    """`points` `(B, N, point_dim)`; `lengths` `(B,)` integers in `[0, N]` (values are
    checked when they are concrete, e.g. NumPy arrays or lists)."""
    points_shape = tuple(points.shape) if hasattr(points, "shape") else np.shape(points)
    _validation.check_rank("points", points_shape, 3)
    if points_shape[-1] not in (None, point_dim):
        raise ValueError(f"`points` must have {point_dim} features (the model's point_dim); "
                         f"received shape {points_shape}.")
    if lengths is None:
        return
    if isinstance(lengths, (list, tuple)):
        lengths = np.asarray(lengths)
    _validation.check_dtype("integer", lengths=lengths)
    _validation.check_mask("lengths", lengths, [(points_shape[0],)])
    if isinstance(lengths, np.ndarray) and points_shape[1] is not None and (
            lengths.min(initial=0) < 0 or lengths.max(initial=0) > points_shape[1]):
        raise ValueError(f"`lengths` must be in [0, {points_shape[1]}] (the points per row); "
                         f"received {lengths.tolist()}.")


def decode(model, points, lengths=None, beam_width=1, select="log_prob"):
    """Decodes point sets with a trained pointer network.

    Args:
        model: a `PointerNet` (or its `.keras` reload).
        points: `(B, N, D)` float32.
        lengths: `(B,)` int32 real points per row (default: all `N`).
        beam_width: 1 for greedy decoding, else beam search over valid outputs only.
        select: with beams, which answer to return: `"log_prob"` (the most
            probable) or `"tour_length"` (the shortest closed tour of the beam).

    Returns:
        A dict: `indices` `(B, N)` int32 point indices in output order, `-1` after
        the end; `log_prob` `(B,)` the answer's log-probability; `pointer`
        `(B, N + 1, N + 1)` each step's distribution over `[END, x_1 … x_N]`.
    """
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    start_index = decoder.start_index
    k = _validation.check_integer("beam_width", beam_width)
    _check_decode_inputs(points, lengths, encoder.embedding.kernel.shape[0])
    points = ops.convert_to_tensor(points, "float32")
    batch, n = ops.shape(points)[0], ops.shape(points)[1]
    if lengths is None:
        lengths = ops.full((batch,), n, "int32")
    lengths = ops.cast(lengths, "int32")
    encoded, mask, states = encoder(points, lengths, training=False)

    def per_row(x):
        return decoding.tile_beams(x, k) if k > 1 else x

    table = per_row(decoder.input_table(encoded))
    memory = per_row(decoder.memory(encoded))
    row_mask = per_row(mask)
    precomputed = decoder.pointer.precompute_keys(memory)

    def step(tokens, step_states):
        return decoder.step(tokens, step_states, table, memory, row_mask, precomputed)

    common = dict(
        initial_states=[*states, ops.zeros((batch, n), "float32")],
        batch_size=batch, max_length=n + 1,
        start_token=START if start_index is None else start_index + 1,
        end_token=END, alignment_length=n + 1, pad_token=END,
    )
    if k == 1:
        out = decoding.greedy_decode(step, **common)
        tokens, log_prob, pointer = out["tokens"], out["scores"], out["alignments"]
    else:
        out = decoding.beam_search(step, beam_width=k, return_all_beams=True, **common)
        tokens, log_prob, pointer = out["tokens"], out["log_probs"], out["alignments"]
        if select == "tour_length":
            candidates = ops.where(tokens > 0, tokens - 1, -1)[:, :, :n]
            if start_index is not None:
                candidates = _with_start(candidates, start_index, n)
            best = ops.argmin(tour_lengths(points, candidates), axis=1)
        elif select == "log_prob":
            best = ops.zeros((batch,), "int32")  # beams come sorted by rank
        else:
            raise ValueError(f"`select` must be 'log_prob' or 'tour_length'; received "
                             f"{select!r}.")
        best = ops.cast(best, "int32")
        tokens = ops.take_along_axis(tokens, best[:, None, None], axis=1)[:, 0]
        log_prob = ops.take_along_axis(log_prob, best[:, None], axis=1)[:, 0]
        pointer = ops.take_along_axis(pointer, best[:, None, None, None], axis=1)[:, 0]
    indices = ops.where(tokens > 0, tokens - 1, -1)[:, :n]
    if start_index is not None:
        indices = _with_start(indices[:, None], start_index, n)[:, 0]
        indices = ops.where(lengths[:, None] > 0, indices, -1)
    return {"indices": ops.cast(indices, "int32"), "log_prob": log_prob, "pointer": pointer}


def _with_start(indices, start_index, n):
    """`(B, K, W)` → `(B, K, n)`: the given first point, then the decoded ones."""
    first = ops.full(ops.shape(indices)[:2] + (1,), start_index, "int32")
    return ops.concatenate([first, ops.cast(indices, "int32")], axis=-1)[:, :, :n]
