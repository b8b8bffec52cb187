"""Learning-rate schedules the model zoo trains with, beyond Keras's own."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_attn_models")
class InverseSquareRootDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up, then decay with the inverse square root of the step.

    `lr(s) = peak · min(s / warmup_steps, √(warmup_steps / s))` for the 1-based
    step `s`: the schedule of Vaswani et al. 2017, §5.3, which there is
    `d_model^-0.5 · min(s^-0.5, s · warmup^-1.5)`, rescaled so that its highest
    rate, reached at `s = warmup_steps`, is `peak`. Unlike a cosine it does not
    depend on the length of the run.

    Args:
        peak: the rate at the end of the warm-up.
        warmup_steps: steps of linear warm-up, at least 1.

    Example:

    >>> from keras_attn.models.schedules import InverseSquareRootDecay
    >>> schedule = InverseSquareRootDecay(1e-3, warmup_steps=100)
    >>> tuple(round(float(schedule(s)), 6) for s in (0, 99, 399))
    (1e-05, 0.001, 0.0005)
    """

    def __init__(self, peak, warmup_steps):
        if not peak > 0:
            raise ValueError(f"`peak` must be a positive rate; received {peak!r}.")
        if int(warmup_steps) != warmup_steps or warmup_steps < 1:
            raise ValueError(f"`warmup_steps` must be an integer ≥ 1; received {warmup_steps!r}.")
        self.peak = float(peak)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        return self.peak * ops.minimum(step / warmup, ops.sqrt(warmup / step))

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}
