import numpy as np
import pytest

import keras_attn
from tests.keras_attn.contract import run_layer_contract, to_numpy


def _x(rng, b=2, t=37, d=16):
    return rng.normal(size=(b, t, d)).astype("float32")


@pytest.mark.parametrize(
    "kwargs, call_kwargs",
    [
        ({"window": 4}, {}),
        ({"window": 4, "global_tokens": 2, "random_blocks": 2, "seed": 3}, {}),
        ({"window": 3, "global_tokens": 1, "random_blocks": 1, "block_size": 5,
          "rope_max_wavelength": 100}, {"use_causal_mask": True}),
    ],
)
def test_contract(rng, kwargs, call_kwargs):
    x = _x(rng, t=23)
    inputs = {"query": x, "value": x, "mask": np.arange(23)[None, :] < np.array([[19], [23]])}
    run_layer_contract(
        keras_attn.SparseAttention, {"num_heads": 2, "key_dim": 4, **kwargs}, inputs,
        [(2, 23, 16), (2, 2, 23, 23)],
        call_kwargs={"return_attention_scores": True, **call_kwargs},
    )


@pytest.mark.parametrize(
    "length, window, global_tokens, random_blocks, block_size, causal",
    [
        (37, 4, 0, 0, None, False),   # sliding window
        (37, 4, 2, 0, None, False),   # Longformer: window + global
        (37, 4, 2, 2, None, False),   # BigBird: window + global + random
        (37, 4, 2, 2, 3, True),       # blocks smaller than the window, causal
        (50, 5, 3, 1, 8, False),      # blocks larger than the window
        (8, 4, 1, 1, None, True),     # shorter than two blocks
    ],
)
def test_equals_multi_head_attention_under_the_pattern_mask(
    rng, length, window, global_tokens, random_blocks, block_size, causal
):
    x = _x(rng, t=length)
    padding = np.ones((2, length), bool)
    padding[0, -5:] = False
    sparse = keras_attn.SparseAttention(
        num_heads=2, key_dim=4, window=window, global_tokens=global_tokens,
        random_blocks=random_blocks, block_size=block_size, seed=1,
    )
    output, weights = sparse(
        x, x, value_mask=padding, query_mask=padding, use_causal_mask=causal,
        return_attention_scores=True,
    )
    dense = keras_attn.MultiHeadAttention(num_heads=2, key_dim=4)
    dense(x, x)
    dense.set_weights(sparse.get_weights())
    pattern = np.broadcast_to(sparse.pattern_mask(length, causal), (2, length, length))
    expected, expected_weights = dense(
        x, x, mask=pattern, value_mask=padding, query_mask=padding, return_attention_scores=True
    )
    np.testing.assert_allclose(to_numpy(output), to_numpy(expected), atol=2e-6)
    np.testing.assert_allclose(to_numpy(weights), to_numpy(expected_weights), atol=1e-7)


def test_the_pattern_is_window_global_and_random_blocks():
    layer = keras_attn.SparseAttention(
        num_heads=1, key_dim=4, window=8, global_tokens=2, random_blocks=2, seed=0
    )
    pattern = layer.pattern_mask(128)
    i, j = np.indices(pattern.shape)
    assert np.all(pattern[np.abs(i - j) <= 8])  # the window
    assert np.all(pattern[:2]) and np.all(pattern[:, :2])  # global rows and columns
    # Off the window and the global tokens: whole random blocks of 8 keys, two per
    # query block, the same for each query of the block.
    extra = pattern & (np.abs(i - j) > 8) & (i >= 2) & (j >= 2)
    for block in range(1, 16):
        rows = extra[block * 8:(block + 1) * 8]
        assert np.all(rows == rows[0])
        key_blocks = {c // 8 for c in np.flatnonzero(rows[0])}
        assert len(key_blocks) == 2 and all(abs(c - block) > 1 for c in key_blocks)
    # Same seed, same pattern; another seed, another.
    same = keras_attn.SparseAttention(1, 4, window=8, global_tokens=2, random_blocks=2, seed=0)
    other = keras_attn.SparseAttention(1, 4, window=8, global_tokens=2, random_blocks=2, seed=5)
    np.testing.assert_array_equal(same.pattern_mask(128), pattern)
    assert not np.array_equal(other.pattern_mask(128), pattern)
    # Causal: nothing above the diagonal, random blocks among earlier ones only.
    causal = layer.pattern_mask(128, causal=True)
    assert not np.any(causal[j > i]) and np.all(causal[(i - j <= 8) & (j <= i)])


def test_keys_per_query_grow_with_the_pattern_not_the_length():
    layer = keras_attn.SparseAttention(num_heads=1, key_dim=4, window=16, random_blocks=1)
    for length in (256, 1024, 4096):
        per_query = layer.pattern_mask(length)[64:].sum(axis=1)
        assert per_query.max() <= 2 * 16 + 1 + 16
        key_index, slot_valid = layer._plan(length, False)
        assert slot_valid.shape[-1] == 3 * 16 + 16  # slots per query block: fixed


def test_saved_layers_keep_their_random_pattern(rng, tmp_path):
    import keras

    x = _x(rng, t=40)
    inputs = keras.Input((40, 16))
    layer = keras_attn.SparseAttention(num_heads=2, key_dim=4, window=4, random_blocks=2, seed=11)
    model = keras.Model(inputs, layer(inputs, inputs))
    model.save(tmp_path / "sparse.keras")
    loaded = keras.saving.load_model(tmp_path / "sparse.keras", safe_mode=True)
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))
    np.testing.assert_array_equal(loaded.layers[-1].pattern_mask(40), layer.pattern_mask(40))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"window": 0}, r"`window` must be a positive integer; received 0"),
        ({"window": 4, "global_tokens": -1}, r"`global_tokens` must be an integer ≥ 0; received -1"),
        ({"window": 4, "random_blocks": 1.5}, r"`random_blocks` must be an integer ≥ 0; received 1.5"),
        ({"window": 4, "block_size": 0}, r"`block_size` must be a positive integer; received 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        keras_attn.SparseAttention(num_heads=2, key_dim=4, **kwargs)


def test_bad_call_inputs(rng):
    x = _x(rng)
    layer = keras_attn.SparseAttention(num_heads=2, key_dim=4, window=4)
    with pytest.raises(ValueError, match=r"as many queries as keys.*received 37 queries and 20 keys"):
        layer(x, x[:, :20])
    with pytest.raises(ValueError, match=r"`mask` must be a \(B, T\) key padding mask"):
        layer(x, x, mask=np.ones((2, 37, 37), bool))
    with pytest.raises(ValueError, match=r"`attention_bias` is not supported"):
        layer(x, x, attention_bias=np.zeros((1, 2, 37, 37), "float32"))
