"""The REINFORCE surrogate loss of a stochastic layer, as a Keras endpoint layer."""

import keras
from keras import ops

from keras_attn import _validation


@keras.saving.register_keras_serializable(package="keras_attn")
class PolicyGradient(keras.layers.Layer):
    """Adds a task loss and its score-function (REINFORCE) surrogate to the model.

    A stochastic choice `a ~ π_θ` (hard attention's position, a glimpse) is not
    differentiable. Williams (1992) estimates the gradient of the expected loss
    from the choice's log-probability:

        ∇_θ E[L] = E[(L − b) ∇_θ log π_θ(a)],

    unbiased for any baseline `b` that does not depend on `a`; a good `b` (the
    expected loss) lowers the estimator's variance. Xu et al. 2015 (section 4.1)
    train hard attention this way with a moving-average baseline,
    `b_k = 0.9 b_{k−1} + 0.1 L_k`, as Mnih et al. 2014 train their glimpses.

    The layer takes the targets as an input (Keras's endpoint-layer pattern),
    computes the per-example task loss `L_i`, and adds

        mean_i L_i + mean_i [sg(L_i − b) · (log π(a_i) − sg(log π(a_i)))]

    to the model's losses (`sg`: stop-gradient): the first term trains the rest
    of the network as usual, the second is the REINFORCE surrogate, zero in value
    (the reported loss stays the task loss) with the estimator above as gradient.
    `b` is the bias-corrected moving average of the batch losses seen before the
    current batch (Adam's correction, so the first batches are not compared with
    a zero baseline). Compile the model without a loss.

    Args:
        loss: the task loss: a Keras loss name, `keras.losses.Loss` or function
            `(y_true, y_pred) → (B,)` per-example losses.
        baseline: `"moving_average"` or `None` (plain REINFORCE, higher variance).
        baseline_decay: the moving average's decay in `[0, 1)`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        targets: `y_true` of the task loss.
        predictions: `y_pred` of the task loss (returned unchanged).
        log_prob: `(B,)` log-probability of each example's choices, e.g.
            `HardAttention(estimator="reinforce")(..., return_log_prob=True)`.
        sample_weight: optional `(B,)` weights of the examples.

    Returns:
        `predictions`, so the layer can end a model.

    Example:

    >>> items = keras.Input((6, 4))
    >>> targets = keras.Input((), dtype="int32")
    >>> query = keras.layers.Dense(4)(keras.layers.GlobalAveragePooling1D()(items))
    >>> context, log_prob = keras_attn.HardAttention(
    ...     score="general", estimator="reinforce")(query, items, return_log_prob=True)
    >>> logits = keras.layers.Dense(3)(context)
    >>> outputs = keras_attn.PolicyGradient(
    ...     keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ... )(targets, logits, log_prob)
    >>> model = keras.Model([items, targets], outputs)
    >>> model.compile(optimizer="adam")
    >>> x = np.random.rand(8, 6, 4).astype("float32")
    >>> y = np.random.randint(0, 3, size=(8,))
    >>> history = model.fit([x, y], epochs=1, verbose=0)
    """

    BASELINES = ("moving_average", None)

    def __init__(self, loss, baseline="moving_average", baseline_decay=0.9, **kwargs):
        super().__init__(**kwargs)
        if baseline not in self.BASELINES:
            raise ValueError(
                f"`baseline` must be one of {self.BASELINES}; received {baseline!r}.")
        self.loss = keras.losses.get(loss)
        if not callable(self.loss):
            raise ValueError(f"`loss` must be a Keras loss or a function; received {loss!r}.")
        self.baseline = baseline
        self.baseline_decay = _validation.check_number(
            "baseline_decay", baseline_decay, low_inclusive=True, high=1.0)
        self.loss_average = self.add_weight(
            shape=(), initializer="zeros", trainable=False, name="loss_average")
        self.steps = self.add_weight(
            shape=(), initializer="zeros", trainable=False, name="steps")

    def _per_example_loss(self, targets, predictions):
        # A `Loss` object's `call` is the unreduced loss; a function already is.
        fn = self.loss.call if isinstance(self.loss, keras.losses.Loss) else self.loss
        losses = ops.cast(fn(targets, predictions), "float32")
        if len(losses.shape) > 1:  # per-token losses: one figure per example
            losses = ops.mean(ops.reshape(losses, (ops.shape(losses)[0], -1)), axis=-1)
        return losses

    def current_baseline(self):
        """`b`: the bias-corrected moving average of the losses, 0 before any step."""
        if self.baseline is None:
            return ops.zeros((), "float32")
        correction = 1.0 - ops.power(ops.cast(self.baseline_decay, "float32"), self.steps)
        return ops.where(self.steps > 0, self.loss_average / ops.maximum(correction, 1e-12),
                         0.0)

    def call(self, targets, predictions, log_prob, sample_weight=None, training=None):
        log_prob = ops.cast(log_prob, "float32")
        if len(log_prob.shape) != 1:
            raise ValueError(
                "`log_prob` must be `(B,)`, one log-probability per example; received "
                f"shape {tuple(log_prob.shape)}.")
        losses = self._per_example_loss(targets, predictions)
        weights = ops.ones_like(losses) if sample_weight is None else ops.cast(
            ops.reshape(sample_weight, (-1,)), "float32")
        total = ops.maximum(ops.sum(weights), 1e-12)
        advantage = ops.stop_gradient(losses - self.current_baseline())
        # `log π − sg(log π)` is 0 forward and `∇ log π` backward: the reported loss
        # stays the task loss while the gradient gains the REINFORCE term.
        score_function = advantage * (log_prob - ops.stop_gradient(log_prob))
        self.add_loss(ops.sum(weights * (losses + score_function)) / total)
        if training and self.baseline is not None:
            batch_loss = ops.stop_gradient(ops.sum(weights * losses) / total)
            self.loss_average.assign(self.baseline_decay * self.loss_average
                                     + (1.0 - self.baseline_decay) * batch_loss)
            self.steps.assign(self.steps + 1.0)
        return predictions

    def compute_output_spec(self, targets, predictions, log_prob, sample_weight=None,
                            training=None):
        return keras.KerasTensor(predictions.shape, predictions.dtype)

    def get_config(self):
        return {
            **super().get_config(),
            "loss": keras.saving.serialize_keras_object(self.loss),
            "baseline": self.baseline,
            "baseline_decay": self.baseline_decay,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["loss"] = keras.saving.deserialize_keras_object(config["loss"])
        return cls(**config)
