"""Greedy and beam-search decoding as `keras.ops.while_loop`s.

Both run under `jit_compile` and inside an exported graph: every loop variable has
a fixed shape (step `t` is written into preallocated `[..., max_length]` buffers),
and the loop stops early once every sequence has emitted `end_token`.

A decoder is given as `step_fn(tokens, states) → (logits, states, alignment)`:
`tokens` `(N,)` int32 are the previous tokens, `states` a list of `(N, ...)`
tensors, `logits` `(N, V)`, `alignment` `(N, T_in)` the step's attention weights.
Beam search runs it on `N = B · beam_width` rows.

After `end_token`, a sequence continues with `pad_token` at zero cost, so outputs
are `[tokens..., end_token, pad_token, ...]`.
"""

import numbers

from keras import ops

from keras_attn import _validation
from keras_attn import ops as attn_ops

_NEG = -1e9
RANKINGS = ("gnmt", "tf_addons")


def length_penalty(lengths, alpha):
    """GNMT's length penalty `((5 + |Y|) / 6)^α` (Wu et al. 2016, eq. 14)."""
    lengths = ops.cast(lengths, "float32")
    return ops.power((5.0 + lengths) / 6.0, alpha)


def coverage_penalty(coverage, beta, source_mask=None, zero_counts=True):
    """GNMT's coverage penalty `β Σ_i log(min(Σ_j α_ij, 1))` over the source.

    Padded source positions are left out. A position with no attention at all
    counts `log 1e-10` (a large finite penalty); with `zero_counts=False` it
    counts 0, as in TF-Addons (which maps a zero sum to 1 before the log).
    """
    if not beta:
        return ops.zeros(ops.shape(coverage)[:-1], "float32")
    if zero_counts:
        terms = ops.log(ops.maximum(ops.minimum(coverage, 1.0), 1e-10))
    else:
        terms = ops.log(ops.minimum(ops.where(ops.equal(coverage, 0.0), 1.0, coverage), 1.0))
    if source_mask is not None:
        terms = ops.where(ops.cast(source_mask, "bool"), terms, 0.0)
    return beta * ops.sum(terms, axis=-1)


def _stepped(step_fn, tokens, states):
    """`step_fn(tokens, states)`, checked to return `(logits, states, alignment)`."""
    out = step_fn(tokens, states)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        got = (f"{len(out)} values" if isinstance(out, (tuple, list))
               else f"a {type(out).__name__}")
        raise ValueError(
            "`step_fn(tokens, states)` must return three values, `(logits (N, V), states, "
            f"alignment (N, T_in))`; received {got}. A decoder without attention can "
            "return zeros of shape (N, alignment_length) as its alignment.")
    return out


def _static(value):
    """`value` as an `int` if it is a Python or NumPy integer, else `None` (a tensor)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return None


def _check_sizes(batch_size, max_length, alignment_length, source_mask=None, tokens=None,
                 penalties=None):
    """Clear errors for arguments known in Python, before they reach a `while_loop`.

    `tokens` and `penalties` map names to token ids (integers ≥ 0) and penalty
    weights (finite numbers ≥ 0); tensors among them are left to the caller.
    """
    for name, value in (("batch_size", batch_size), ("max_length", max_length),
                        ("alignment_length", alignment_length)):
        if _static(value) is not None:
            _validation.check_integer(name, value)
    for name, value in (tokens or {}).items():
        if isinstance(value, (numbers.Number, str)):
            _validation.check_integer(name, value, least=0)
    for name, value in (penalties or {}).items():
        if isinstance(value, (numbers.Number, str)):
            _validation.check_number(name, value, low_inclusive=True)
    _validation.check_mask(
        "source_mask", source_mask, [(_static(batch_size), _static(alignment_length))]
    )


def _write(buffer, t, value, positions, time_axis):
    """`buffer[..., t, ...] = value` along `time_axis`, as a fixed-shape `where`."""
    shape = [1] * len(buffer.shape)
    shape[time_axis] = -1
    at_t = ops.reshape(ops.equal(positions, t), shape)
    return ops.where(at_t, ops.expand_dims(value, time_axis), buffer)


def greedy_decode(
    step_fn,
    initial_states,
    batch_size,
    max_length,
    start_token,
    end_token,
    alignment_length,
    pad_token=0,
):
    """Picks the most likely token at every step.

    Returns:
        A dict: `tokens` `(B, max_length)` int32, `scores` `(B,)` summed
        log-probabilities, `lengths` `(B,)` tokens up to and including
        `end_token`, `alignments` `(B, max_length, T_in)`.
    """
    _check_sizes(batch_size, max_length, alignment_length, tokens={
        "start_token": start_token, "end_token": end_token, "pad_token": pad_token})
    positions = ops.arange(max_length, dtype="int32")
    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch_size,), start_token, "int32"),
        ops.zeros((batch_size,), "bool"),
        ops.zeros((batch_size,), "float32"),
        ops.zeros((batch_size,), "int32"),
        ops.full((batch_size, max_length), pad_token, "int32"),
        ops.zeros((batch_size, max_length, alignment_length), "float32"),
        list(initial_states),
    )

    def cond(t, tokens, finished, scores, lengths, out, alignments, states):
        return ops.logical_and(ops.less(t, max_length), ops.logical_not(ops.all(finished)))

    def body(t, tokens, finished, scores, lengths, out, alignments, states):
        logits, states, alignment = _stepped(step_fn, tokens, states)
        log_probs = attn_ops.masked_log_softmax(ops.cast(logits, "float32"))
        best = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
        best = ops.where(finished, pad_token, best)
        gained = ops.take_along_axis(log_probs, ops.expand_dims(best, -1), axis=-1)[:, 0]
        scores = scores + ops.where(finished, 0.0, gained)
        lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        alignment = ops.where(ops.expand_dims(finished, -1), 0.0, ops.cast(alignment, "float32"))
        out = _write(out, t, best, positions, 1)
        alignments = _write(alignments, t, alignment, positions, 1)
        finished = ops.logical_or(finished, ops.equal(best, end_token))
        return t + 1, best, finished, scores, lengths, out, alignments, list(states)

    _, _, _, scores, lengths, out, alignments, _ = ops.while_loop(cond, body, loop_vars)
    return {"tokens": out, "scores": scores, "lengths": lengths, "alignments": alignments}


def tile_beams(x, beam_width):
    """`(B, ...)` → `(B · K, ...)`, each row repeated `K` times in place."""
    return ops.repeat(x, _validation.check_integer("beam_width", beam_width), axis=0)


def beam_search(
    step_fn,
    initial_states,
    batch_size,
    beam_width,
    max_length,
    start_token,
    end_token,
    alignment_length,
    length_penalty_alpha=0.0,
    coverage_penalty_beta=0.0,
    source_mask=None,
    pad_token=0,
    return_all_beams=False,
    ranking="gnmt",
):
    """Beam search with GNMT length and coverage penalties.

    Beams are ranked by `log P(Y) / lp(Y) + cp(Y)` (Wu et al. 2016, eq. 14).
    A finished beam keeps its score and length. With `beam_width=1` this is
    greedy decoding, token for token.

    `ranking` picks how the penalties apply while beams are still being extended:

    - `"gnmt"` (the default): `|Y|` counts the end token, and every hypothesis,
      finished or not, is ranked with its coverage penalty, so hypotheses are
      compared on the same terms at every step.
    - `"tf_addons"`: `tfa.seq2seq.BeamSearchDecoder`'s rule (TF-Addons 0.23), for
      ported models that must decode token for token as before: a candidate that
      emits the end token *at this step* is ranked without it in `|Y|`; a
      hypothesis finished at an earlier step is ranked with its stored length,
      which counts the end token. Only hypotheses finished before this step get
      the coverage penalty, and a source position with no attention at all counts
      0 in it (TF-Addons maps a zero sum to 1 before the log; padded positions,
      which get no attention, so count 0 with or without `source_mask`). Once
      finished, a beam's rank can still change (its coverage penalty starts); as
      in TF-Addons, `tokens` and `alignments` then keep the beams' order of the
      step where the row's last beam ended, while `scores`, `log_probs` and
      `lengths` are in the final order (TF-Addons' `predicted_ids` against its
      final `scores` and state), so beam `k`'s tokens and score can belong to
      different hypotheses.

    Args:
        step_fn: the decoder step (see the module docstring).
        initial_states: `(B, ...)` states, one row per sentence; they are tiled
            to `B · beam_width` here (do not tile them first).
        batch_size, max_length: `B` and the number of steps.
        beam_width: `K`.
        start_token, end_token, pad_token: token ids.
        alignment_length: `T_in`.
        length_penalty_alpha: `α` (0 disables).
        coverage_penalty_beta: `β` (0 disables).
        source_mask: `(B, T_in)` padding mask, for the coverage penalty.
        return_all_beams: return every beam (sorted best first) instead of the best.
        ranking: `"gnmt"` or `"tf_addons"` (see above).

    Returns:
        A dict: `tokens` `(B, max_length)` (or `(B, K, max_length)`), `scores`
        the ranking scores, `log_probs` summed log-probabilities, `lengths`,
        and `alignments` `(B, [K,] max_length, T_in)`.
    """
    k = _validation.check_integer("beam_width", beam_width)
    if ranking not in RANKINGS:
        raise ValueError(f"`ranking` must be one of {RANKINGS}; received {ranking!r}.")
    tf_addons = ranking == "tf_addons"
    _check_sizes(
        batch_size, max_length, alignment_length, source_mask,
        tokens={"start_token": start_token, "end_token": end_token, "pad_token": pad_token},
        penalties={"length_penalty_alpha": length_penalty_alpha,
                   "coverage_penalty_beta": coverage_penalty_beta},
    )
    rows = {tuple(s.shape)[0] for s in initial_states} - {None}
    if _static(batch_size) is not None and rows - {_static(batch_size)}:
        raise ValueError(
            f"`initial_states` must have `batch_size` ({batch_size}) rows, one per "
            f"sentence: beam_search tiles them to batch_size × beam_width itself; received "
            f"states with {sorted(rows)} rows (tiled already, as TF-Addons' `tile_batch` "
            "asked?).")
    positions = ops.arange(max_length, dtype="int32")
    states = [tile_beams(s, k) for s in initial_states]
    if source_mask is not None:
        source_mask = ops.repeat(ops.expand_dims(ops.cast(source_mask, "bool"), 1), k, axis=1)
    # At t = 0 the K beams are copies: only the first may extend. The others sit at
    # _NEG / 10, above any token a step excluded with a _NEG-level log-probability
    # (a pointer's chosen positions), so top_k never picks an excluded token while
    # a placeholder beam can still offer an allowed one.
    first_beam_only = ops.concatenate(
        [ops.zeros((batch_size, 1), "float32"),
         ops.full((batch_size, k - 1), _NEG / 10, "float32")],
        axis=1,
    )
    loop_vars = (
        ops.convert_to_tensor(0, "int32"),
        ops.full((batch_size * k,), start_token, "int32"),
        ops.zeros((batch_size, k), "bool"),
        first_beam_only,  # summed log-probabilities
        ops.zeros((batch_size, k), "float32"),  # ranking scores
        ops.zeros((batch_size, k), "int32"),  # lengths
        ops.full((batch_size, k, max_length), pad_token, "int32"),
        ops.zeros((batch_size, k, max_length, alignment_length), "float32"),
        ops.zeros((batch_size, k, alignment_length), "float32"),  # coverage
        states,
    )
    batch_offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, -1)

    def cond(t, tokens, finished, *rest):
        return ops.logical_and(ops.less(t, max_length), ops.logical_not(ops.all(finished)))

    def body(t, tokens, finished, log_prob_sum, ranks, lengths, out, alignments, coverage, states):
        logits, states, alignment = _stepped(step_fn, tokens, states)
        # Dynamic when the vocabulary is the input's positions (a pointer network).
        vocab = logits.shape[-1] or ops.shape(logits)[-1]
        log_probs = attn_ops.masked_log_softmax(ops.cast(logits, "float32"))
        log_probs = ops.reshape(log_probs, (batch_size, k, vocab))
        # A finished beam may only continue with padding, at no cost.
        pad_only = ops.where(ops.equal(ops.arange(vocab), pad_token), 0.0, _NEG)
        log_probs = ops.where(ops.expand_dims(finished, -1), pad_only, log_probs)
        totals = ops.expand_dims(log_prob_sum, -1) + log_probs
        new_lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        # The source length given, not -1: a static length of 1 would otherwise
        # become unknown in a traced graph, and the loop's buffers change shape.
        alignment = ops.reshape(ops.cast(alignment, "float32"),
                                (batch_size, k, alignment_length))
        alignment = ops.where(ops.expand_dims(finished, -1), 0.0, alignment)
        new_coverage = coverage + alignment
        rank_lengths = ops.expand_dims(new_lengths, -1)
        coverage_term = ops.expand_dims(coverage_penalty(
            new_coverage, coverage_penalty_beta, source_mask, zero_counts=not tf_addons), -1)
        if tf_addons:
            # An end token emitted at this step is not counted in |Y| (one emitted
            # before is, in the stored length); the coverage penalty only ranks
            # hypotheses that were already finished.
            ends_now = ops.logical_and(
                ops.expand_dims(ops.logical_not(finished), -1),
                ops.reshape(ops.equal(ops.arange(vocab), end_token), (1, 1, -1)),
            )
            rank_lengths = rank_lengths - ops.cast(ends_now, "int32")
            coverage_term = coverage_term * ops.cast(ops.expand_dims(finished, -1), "float32")
        rank = totals / length_penalty(rank_lengths, length_penalty_alpha) + coverage_term
        top_ranks, top = ops.top_k(ops.reshape(rank, (batch_size, k * vocab)), k)
        top = ops.cast(top, "int32")
        parent, token = top // vocab, top % vocab

        def pick(x):  # (B, K, ...) rows of the parents
            index = ops.reshape(parent, (batch_size, k) + (1,) * (len(x.shape) - 2))
            return ops.take_along_axis(x, index, axis=1)

        log_prob_sum = ops.take_along_axis(ops.reshape(totals, (batch_size, k * vocab)), top, 1)
        new_out = _write(pick(out), t, token, positions, 2)
        new_alignments = _write(pick(alignments), t, pick(alignment), positions, 2)
        if tf_addons:
            # TF-Addons reads the tokens back (gather_tree) in the beams' order at
            # the step its row's last beam ended; a row whose beams had all ended
            # keeps that order here, though their ranks still change.
            row_done = ops.all(finished, axis=1)
            out = ops.where(ops.reshape(row_done, (-1, 1, 1)), out, new_out)
            alignments = ops.where(ops.reshape(row_done, (-1, 1, 1, 1)), alignments,
                                   new_alignments)
        else:
            out, alignments = new_out, new_alignments
        finished = ops.logical_or(pick(finished), ops.equal(token, end_token))
        lengths = pick(new_lengths)
        coverage = pick(new_coverage)
        rows = ops.reshape(batch_offsets + parent, (-1,))
        states = [ops.take(s, rows, axis=0) for s in states]
        return (t + 1, ops.reshape(token, (-1,)), finished, log_prob_sum, top_ranks,
                lengths, out, alignments, coverage, states)

    result = ops.while_loop(cond, body, loop_vars)
    _, _, _, log_prob_sum, ranks, lengths, out, alignments, _, _ = result
    # top_k keeps the beams sorted by rank, and finished beams keep their rank.
    if return_all_beams:
        return {"tokens": out, "scores": ranks, "log_probs": log_prob_sum,
                "lengths": lengths, "alignments": alignments}
    return {
        "tokens": out[:, 0],
        "scores": ranks[:, 0],
        "log_probs": log_prob_sum[:, 0],
        "lengths": lengths[:, 0],
        "alignments": alignments[:, 0],
    }
