"""The pointer network: teacher forcing, the decoding rules and their validity,
training with `model.fit`, and the `.keras` round trip (any backend)."""

import itertools

import keras
import numpy as np
import pytest

from keras_attn.models import pointer_net as pn
from tests.keras_attn.contract import to_numpy

SMALL = dict(units=16, encoder_layers=1, heads=2, glimpses=1)


def _model(**overrides):
    return pn.PointerNet(**{**SMALL, **overrides})


def _mixed(rng, batch=6, n=7, dim=2):
    points = rng.random((batch, n, dim)).astype("float32")
    lengths = np.array([n, 1, 3, n - 1, 5, 2][:batch], "int32")
    # Padding holds garbage: decoding must not look at it.
    points[np.arange(n)[None] >= lengths[:, None]] = 1e3
    return points, lengths


def test_teacher_forcing_arrays():
    tokens, targets, weights = pn.teacher_forcing(np.array([[2, 0, 1], [1, -1, -1]]))
    np.testing.assert_array_equal(targets, [[3, 1, 2, 0], [2, 0, 0, 0]])
    np.testing.assert_array_equal(tokens, [[0, 3, 1, 2], [0, 2, 0, 0]])
    np.testing.assert_array_equal(weights, [[1, 1, 1, 1], [1, 1, 0, 0]])
    tokens, _, _ = pn.teacher_forcing(np.array([[2, 1]]), start_index=0)
    np.testing.assert_array_equal(tokens, [[1, 3, 2]])  # the start point is fed first


def test_allowed_positions():
    valid = np.array([[True, True, True, False]])
    chosen = np.array([[True, False, False, False]])
    allowed = to_numpy(pn.allowed_positions(valid, chosen))
    np.testing.assert_array_equal(allowed, [[False, False, True, True, False]])
    every = np.array([[True, True, True, False]])
    np.testing.assert_array_equal(to_numpy(pn.allowed_positions(valid, every)),
                                  [[True, False, False, False, False]])  # END only, at the end
    # END after `min_outputs` points, or after all of a smaller set.
    one = to_numpy(pn.allowed_positions(valid, chosen, min_outputs=1))
    assert one[0, 0] and one[0, 2] and one[0, 3]
    assert not to_numpy(pn.allowed_positions(valid, chosen, min_outputs=2))[0, 0]
    tiny = to_numpy(pn.allowed_positions([[True, False]], [[True, False]], min_outputs=3))
    np.testing.assert_array_equal(tiny, [[True, False, False]])


@pytest.mark.parametrize("encoder", ["set", "lstm"])
def test_teacher_forced_log_probs_equal_the_decoding_steps(encoder, rng):
    points, lengths = _mixed(rng)
    model = _model(encoder=encoder, min_outputs=3)
    out = pn.decode(model, points, lengths)
    indices = to_numpy(out["indices"])
    tokens, targets, weights = pn.teacher_forcing(indices)
    forced = to_numpy(model({"points": points, "lengths": lengths, "decoder_tokens": tokens}))
    gained = np.take_along_axis(forced, targets[..., None], -1)[..., 0]
    np.testing.assert_allclose((gained * weights).sum(-1), to_numpy(out["log_prob"]), atol=1e-4)
    np.testing.assert_allclose(np.exp(forced[weights > 0]),
                               to_numpy(out["pointer"])[:, : forced.shape[1]][weights > 0],
                               atol=1e-5)


def _check_rows(indices, lengths, permutation=True, minimum=1, start=None):
    for row, n in zip(indices, lengths, strict=True):
        kept = row[row >= 0]
        assert np.all(row[len(kept):] == -1), row  # padding only after the answer
        assert len(set(kept.tolist())) == len(kept), row  # no index twice
        assert np.all(kept < n), row  # never a padded position
        if permutation:
            assert sorted(kept.tolist()) == list(range(n)), row
        else:
            assert min(minimum, n) <= len(kept) <= n, row
        if start is not None:
            assert kept[0] == start


@pytest.mark.parametrize("beam_width", [1, 3, 8])
def test_decoding_emits_only_valid_outputs_for_mixed_lengths(beam_width, rng):
    points, lengths = _mixed(rng)
    perm = pn.decode(_model(), points, lengths, beam_width=beam_width)
    _check_rows(to_numpy(perm["indices"]), lengths)
    hull = pn.decode(_model(min_outputs=3), points, lengths, beam_width=beam_width)
    _check_rows(to_numpy(hull["indices"]), lengths, permutation=False, minimum=3)
    tsp = pn.decode(_model(start_index=0), points, lengths, beam_width=beam_width,
                    select="tour_length" if beam_width > 1 else "log_prob")
    _check_rows(to_numpy(tsp["indices"]), lengths, start=0)
    assert np.all(np.isfinite(to_numpy(tsp["log_prob"])))


def test_duplicate_points_still_give_a_permutation(rng):
    points = np.repeat(rng.random((2, 1, 2)).astype("float32"), 6, axis=1)
    for model in (_model(), _model(start_index=0)):
        for width in (1, 4):
            indices = to_numpy(pn.decode(model, points, beam_width=width)["indices"])
            _check_rows(indices, [6, 6])


def test_the_shortest_beam_is_no_longer_than_the_most_probable(rng):
    points = rng.random((8, 6, 2)).astype("float32")
    model = _model(start_index=0)
    probable = to_numpy(pn.decode(model, points, beam_width=6)["indices"])
    shortest = to_numpy(pn.decode(model, points, beam_width=6, select="tour_length")["indices"])

    def length(p, tour):
        q = p[tour]
        return np.linalg.norm(q - np.roll(q, -1, 0), axis=-1).sum()

    for p, a, b in zip(points, probable, shortest, strict=True):
        assert length(p, b) <= length(p, a) + 1e-5
    with pytest.raises(ValueError, match="`select`"):
        pn.decode(model, points, beam_width=2, select="area")


def test_tour_lengths_match_numpy(rng):
    points = rng.random((2, 5, 2)).astype("float32")
    indices = np.array([[[0, 3, 1, -1, -1], [4, 2, 0, 1, 3]], [[1, 0, -1, -1, -1],
                                                              [0, 1, 2, 3, 4]]], "int32")
    got = to_numpy(pn.tour_lengths(points, indices))
    for b, k in itertools.product(range(2), range(2)):
        tour = indices[b, k][indices[b, k] >= 0]
        q = points[b, tour]
        want = np.linalg.norm(q - np.roll(q, -1, 0), axis=-1).sum()
        assert got[b, k] == pytest.approx(want, abs=1e-5)


def test_the_set_encoder_is_order_invariant(rng):
    points = rng.random((2, 6, 2)).astype("float32")
    model = _model()
    encoder = model.get_layer("encoder")
    lengths = np.array([6, 6], "int32")
    order = rng.permutation(6)
    encoded, _, states = encoder(points, lengths)
    shuffled, _, shuffled_states = encoder(points[:, order], lengths)
    np.testing.assert_allclose(to_numpy(shuffled), to_numpy(encoded)[:, order], atol=1e-5)
    np.testing.assert_allclose(to_numpy(shuffled_states[0]), to_numpy(states[0]), atol=1e-5)
    # Hence the decoded answer names the same points.
    a = to_numpy(pn.decode(model, points)["indices"])
    b = to_numpy(pn.decode(model, points[:, order])["indices"])
    np.testing.assert_array_equal(order[b], a)


def test_fit_learns_to_sort_and_the_keras_file_round_trips(rng, tmp_path):
    n = 5
    points = rng.random((768, n, 1)).astype("float32")
    lengths = np.full(768, n, "int32")
    tokens, targets, weights = pn.teacher_forcing(np.argsort(points[..., 0], axis=1))
    model = pn.compile_pointer_net(_model(point_dim=1, units=32), learning_rate=3e-3)
    x = {"points": points, "lengths": lengths, "decoder_tokens": tokens}
    history = model.fit(x, targets, sample_weight=weights, batch_size=64, epochs=6, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    path = str(tmp_path / "ptr.keras")
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is pn.PointerNet and loaded.get_config() == model.get_config()
    test = rng.random((16, 7, 1)).astype("float32")
    for width in (1, 3):
        np.testing.assert_array_equal(to_numpy(pn.decode(loaded, test, beam_width=width)["indices"]),
                                      to_numpy(pn.decode(model, test, beam_width=width)["indices"]))


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="`encoder` must be one of"):
        pn.PointerNet(encoder="gru")
    with pytest.raises(ValueError, match="multiple of `heads`"):
        pn.PointerNet(units=30, heads=8)


@pytest.mark.parametrize("field, value, message", [
    ("heads", 0, r"`heads` must be a positive integer; received 0"),
    ("point_dim", 0, r"`point_dim` must be a positive integer; received 0"),
    ("encoder_layers", 1.5, r"`encoder_layers` must be a positive integer; received 1\.5"),
    ("glimpses", -1, r"`glimpses` must be an integer ≥ 0; received -1"),
    ("min_outputs", -1, r"`min_outputs` must be an integer ≥ 0 or None; received -1"),
    ("start_index", -1, r"`start_index` must be an integer ≥ 0 or None; received -1"),
    ("logit_clip", 0.0, r"`logit_clip` must be a number > 0 or None; received 0\.0"),
])
def test_bad_arguments_are_named(field, value, message):
    with pytest.raises(ValueError, match=message):
        pn.PointerNet(**{field: value})


def test_numpy_sizes_are_stored_as_ints():
    model = _model(units=np.int64(16), start_index=np.int32(0))
    assert type(model.units) is int and type(model.start_index) is int
    assert model.get_config()["start_index"] == 0 and _model().min_outputs is None


def test_decode_names_bad_points_lengths_and_beam_width(rng):
    model = pn.PointerNet(point_dim=1, units=16, heads=2, encoder_layers=1)
    points = rng.random((3, 5, 1)).astype("float32")
    for kwargs, message in [
        ({"points": points[..., 0]}, r"`points` must have rank 3; received `points` of rank 2"),
        ({"points": np.concatenate([points, points], -1)},
         r"`points` must have 1 features \(the model's point_dim\); received shape \(3, 5, 2\)"),
        ({"lengths": np.array([6, 5, 5])}, r"`lengths` must be in \[0, 5\].*received \[6, 5, 5\]"),
        ({"lengths": [-1, 5, 5]}, r"`lengths` must be in \[0, 5\].*received \[-1, 5, 5\]"),
        ({"lengths": np.array([5, 5])}, r"`lengths` must have shape \(3,\).*received `lengths` of shape \(2,\)"),
        ({"beam_width": 2.5}, r"`beam_width` must be a positive integer; received 2\.5"),
    ]:
        with pytest.raises(ValueError, match=message):
            pn.decode(model, **{"points": points, **kwargs})
    with pytest.raises(TypeError, match=r"`lengths` must be an integer tensor; received dtype float32"):
        pn.decode(model, points, np.full((3,), 5.0, "float32"))
    empty = to_numpy(pn.decode(model, points, np.array([0, 5, 3]))["indices"])
    assert (empty[0] == -1).all() and sorted(empty[1]) == [0, 1, 2, 3, 4]
