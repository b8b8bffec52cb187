"""The layer-test contract every `keras_attn` layer passes (docs/architecture.md, "The layer floor").

`run_layer_contract` checks, for one layer configuration and one set of inputs:
eager and symbolic calls with the expected shapes; a functional model whose
inputs leave every length unknown (`keras.Input((None, d))`), run through a
jit-compiled `predict`, giving the eager outputs; `get_config` → `from_config`
giving the same config and, with the weights copied, the same outputs; a `.keras`
save → `load_model(safe_mode=True)` with identical outputs; a `mixed_float16`
copy close to float32 and finite; one `model.fit` step with `jit_compile=True`;
and a non-zero, finite gradient for every trainable weight. It runs on whichever
Keras backend is active.
"""

import os
import tempfile

import keras
import numpy as np
from keras import ops


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(x))


def _flat(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _as_numpy_list(outputs):
    return [to_numpy(o) for o in _flat(outputs)]


def _call(layer, inputs, call_kwargs, training=False):
    tensors = {k: ops.convert_to_tensor(v) for k, v in inputs.items()}
    if _accepts_training(layer):
        call_kwargs = {**call_kwargs, "training": training}
    return layer(**tensors, **call_kwargs)


def _accepts_training(layer):
    import inspect

    return "training" in inspect.signature(layer.call).parameters


def _functional_model(layer, inputs, call_kwargs, unknown_lengths=None):
    """A functional model over `inputs`; with `unknown_lengths` (a dict, maybe
    empty, of per-input shapes), every axis but the features is `None`."""

    def shape(name, value):
        if unknown_lengths is None:
            return value.shape[1:]
        if name in unknown_lengths:
            return unknown_lengths[name]
        if value.dtype == bool:  # a mask: every axis is a length
            return (None,) * (value.ndim - 1)
        return (None,) * max(value.ndim - 2, 0) + value.shape[-1:][: value.ndim - 1]

    symbolic = {
        name: keras.Input(shape=shape(name, value), dtype=str(value.dtype), name=name)
        for name, value in inputs.items()
    }
    outputs = layer(**symbolic, **call_kwargs)
    return keras.Model(symbolic, outputs), outputs


def trainable_gradients(model, inputs, target):
    """Gradients of `mean((first_output - target)²)` for each trainable weight."""
    backend = keras.backend.backend()
    inputs = {k: ops.convert_to_tensor(v) for k, v in inputs.items()}
    target = ops.convert_to_tensor(target)

    def loss_of(outputs):
        first = _flat(outputs)[0]
        return ops.mean(ops.square(ops.cast(first, "float32") - target))

    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_of(model(inputs, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        # An embedding lookup's gradient is an IndexedSlices: densify it.
        return [None if g is None else np.asarray(tf.convert_to_tensor(g)) for g in grads]
    if backend == "jax":
        import jax

        trainable = [v.value for v in model.trainable_variables]
        non_trainable = [v.value for v in model.non_trainable_variables]

        def loss_fn(weights):
            outputs, _ = model.stateless_call(weights, non_trainable, inputs, training=True)
            return loss_of(outputs)

        return [np.asarray(g) for g in jax.grad(loss_fn)(trainable)]
    if backend == "torch":
        loss = loss_of(model(inputs, training=True))
        loss.backward()
        return [
            None if v.value.grad is None else v.value.grad.detach().cpu().numpy()
            for v in model.trainable_variables
        ]
    raise NotImplementedError(backend)


def input_gradient(fn, x):
    """`d fn(x) / dx` on the active backend, for a scalar `fn` of one array `x`."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(fn)(x))
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = fn(x)
        return tape.gradient(y, x).numpy()
    import torch

    x = torch.tensor(x, requires_grad=True)
    fn(x).backward()
    return x.grad.numpy()


def run_layer_contract(
    layer_cls,
    init_kwargs,
    inputs,
    expected_output_shapes,
    call_kwargs=None,
    mixed_precision=True,
    mixed_tolerance=3e-2,
    expect_trainable_weights=None,
    fit=True,
    broadcast_batch=False,
    unknown_lengths=None,
):
    """Runs the whole contract; raises `AssertionError` on the first breach.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        inputs: `{call argument name: numpy array}` of the tensor arguments
            (batch first); they become the functional model's inputs.
        expected_output_shapes: one shape or a list of shapes (batch included).
        call_kwargs: other (non-tensor) call arguments.
        mixed_precision: also run the `mixed_float16` checks.
        mixed_tolerance: max |Δ| allowed between float16 and float32 outputs.
        expect_trainable_weights: if given, the number of trainable weights.
        fit: also run the jit-compiled `model.fit` step and the gradient check.
        unknown_lengths: input shapes (batch excluded) for the unknown-length
            check where the default is wrong. By default every axis of a mask,
            and every axis but the last (the features) of other inputs, is
            `None`; e.g. `{"previous_alignment": (None,)}` for a `(B, Tk)` input.
        broadcast_batch: the output's batch axis is a broadcastable 1 (a bias
            shared by the batch), also symbolically; implies `fit=False`.

    Returns:
        The eager outputs (numpy) of the float32 layer.
    """
    call_kwargs = dict(call_kwargs or {})
    if isinstance(expected_output_shapes, tuple):
        expected_output_shapes = [expected_output_shapes]
    expected_output_shapes = [tuple(s) for s in expected_output_shapes]

    # 1. Eager call: shapes, finiteness.
    layer = layer_cls(**init_kwargs)
    eager = _as_numpy_list(_call(layer, inputs, call_kwargs))
    assert [o.shape for o in eager] == expected_output_shapes, (
        f"eager output shapes {[o.shape for o in eager]} != {expected_output_shapes}"
    )
    for o in eager:
        assert np.all(np.isfinite(o)), "eager output has NaN/inf"
    if expect_trainable_weights is not None:
        assert len(layer.trainable_weights) == expect_trainable_weights, [
            w.path for w in layer.trainable_weights
        ]

    # 2. get_config / from_config: same config; same outputs with copied weights.
    config = layer.get_config()
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config, "from_config(get_config()) changed the config"
    _call(clone, inputs, call_kwargs)
    clone.set_weights(layer.get_weights())
    cloned = _as_numpy_list(_call(clone, inputs, call_kwargs))
    for a, b in zip(eager, cloned, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg="from_config clone differs")

    # 3. Symbolic call in a functional model: shapes (batch unknown), same values.
    model, symbolic_outputs = _functional_model(layer, inputs, call_kwargs)
    symbolic_shapes = [tuple(o.shape) for o in _flat(symbolic_outputs)]
    batch = 1 if broadcast_batch else None
    fit = fit and not broadcast_batch
    assert symbolic_shapes == [(batch, *s[1:]) for s in expected_output_shapes], (
        f"symbolic output shapes {symbolic_shapes}"
    )
    functional = _as_numpy_list(model(inputs, training=False))
    for a, b in zip(eager, functional, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg="functional call differs")

    # 3b. Lengths unknown until run time (every axis but the features), as in a
    # model built once for sequences of any length: a compiled predict agrees.
    unknown = _functional_model(layer, inputs, call_kwargs, dict(unknown_lengths or {}))[0]
    unknown.compile(jit_compile=True)
    predicted = _as_numpy_list(unknown.predict_on_batch(inputs))
    for a, b in zip(eager, predicted, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, err_msg="unknown-length predict differs")

    # 4. `.keras` round trip with safe_mode=True: identical outputs.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layer.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
    reloaded = _as_numpy_list(loaded(inputs, training=False))
    for a, b in zip(functional, reloaded, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg=".keras round trip differs")

    # 5. mixed_float16: float16 outputs, finite, close to float32.
    if mixed_precision:
        mixed = layer_cls(**init_kwargs, dtype="mixed_float16")
        _call(mixed, inputs, call_kwargs)
        mixed.set_weights(layer.get_weights())
        half = _flat(_call(mixed, inputs, call_kwargs))
        for h, full in zip(half, eager, strict=True):
            if "float" in str(full.dtype):
                assert keras.backend.standardize_dtype(h.dtype) == "float16", h.dtype
            h = to_numpy(h).astype("float32")
            assert np.all(np.isfinite(h)), "mixed_float16 output has NaN/inf"
            np.testing.assert_allclose(
                h, full, atol=mixed_tolerance, rtol=mixed_tolerance,
                err_msg="mixed_float16 output too far from float32",
            )

    # 6. Gradients reach every trainable weight; one jit-compiled fit step runs.
    if fit and layer.trainable_weights:
        train_model = keras.Model(model.inputs, _flat(model.outputs)[0])
        target = np.random.default_rng(0).normal(size=eager[0].shape).astype("float32")
        grads = trainable_gradients(train_model, inputs, target)
        for variable, grad in zip(train_model.trainable_variables, grads, strict=True):
            assert grad is not None, f"no gradient for {variable.path}"
            assert np.all(np.isfinite(grad)), f"non-finite gradient for {variable.path}"
            assert np.any(grad != 0), f"zero gradient for {variable.path}"
    if fit:
        train_model = keras.Model(model.inputs, _flat(model.outputs)[0])
        train_model.compile(optimizer="sgd", loss="mse", jit_compile=True)
        target = np.zeros(eager[0].shape, "float32")
        history = train_model.fit(
            inputs, target, batch_size=len(target), epochs=1, verbose=0
        )
        assert np.isfinite(history.history["loss"][0]), "fit loss is not finite"
    return eager


def assert_ignores_masked_steps(make_output, inputs, name, step_mask, seed=0):
    """Changing the masked time steps of `inputs[name]` leaves the output unchanged.

    `make_output(inputs)` runs the layer; `step_mask` is `(B, T)`, true = kept.
    """
    rng = np.random.default_rng(seed)
    before = _as_numpy_list(make_output(inputs))
    perturbed = dict(inputs)
    noise = rng.normal(scale=10.0, size=inputs[name].shape).astype(inputs[name].dtype)
    keep = step_mask.reshape(step_mask.shape + (1,) * (inputs[name].ndim - 2))
    perturbed[name] = np.where(keep, inputs[name], noise)
    after = _as_numpy_list(make_output(perturbed))
    for a, b in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, err_msg="masked steps changed output")
