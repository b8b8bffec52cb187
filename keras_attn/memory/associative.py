"""Binary associative memory: the Hopfield network and dense associative memory."""

import keras
from keras import ops

from keras_attn import _validation

INTERACTIONS = ("polynomial", "exponential")
UPDATES = ("asynchronous", "synchronous")


@keras.saving.register_keras_serializable(package="keras_attn")
class DenseAssociativeMemory(keras.layers.Layer):
    """Recall of stored ±1 patterns by energy descent (Krotov & Hopfield 2016).

    "Dense Associative Memory for Pattern Recognition". Patterns `ξ_μ ∈ {±1}^N`
    are stored; a probe state `σ` descends the energy

        `E(σ) = −Σ_μ F(ξ_μ · σ)`

    one unit at a time: unit `i` takes the sign that gives the lower energy,

        `σ_i ← sign(Σ_μ [F(ξ_μi + Σ_{j≠i} ξ_μj σ_j) − F(−ξ_μi + Σ_{j≠i} ξ_μj σ_j)])`.

    * `F(x) = x²` (`degree=2`, the default) is the **classic Hopfield network**
      (Hopfield 1982): the rule is `σ_i ← sign(Σ_j W_ij σ_j)` with the Hebbian
      weights `W = Σ_μ ξ_μ ξ_μᵀ`, zero diagonal; it recalls about `0.14 N` patterns.
    * `F(x) = x^n` stores about `N^{n−1}` patterns.
    * `F(x) = exp(x)` (`interaction="exponential"`; Demircigil et al. 2017) stores
      exponentially many.

    Asynchronous updates (unit by unit, in order) never raise the energy, so
    recall converges; synchronous ones (all units at once) are faster but can
    oscillate. A tie keeps the unit's sign. The update compares values of `F`,
    so `x^n` is evaluated on `x / N` (same signs, no overflow) and `exp` through
    log-sum-exp. The layer has no weights: the patterns are an input, like the
    memory of an attention layer.

    Args:
        interaction: `"polynomial"` (`F(x) = x^degree`) or `"exponential"`.
        degree: the polynomial's degree `n ≥ 2`.
        update: `"asynchronous"` or `"synchronous"`.
        sweeps: update sweeps over all `N` units.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        probe: `(B, N)` start states; entries `≥ 0` count as `+1`, others `−1`.
        patterns: stored patterns `(K, N)`, or `(B, K, N)` per example, `±1`.

    Returns:
        The recalled states `(B, N)`, `±1`.

    Example:

    >>> rng = np.random.default_rng(0)
    >>> patterns = np.sign(rng.normal(size=(5, 100))).astype("float32")
    >>> noisy = patterns[:2] * np.where(rng.random((2, 100)) < 0.1, -1, 1)
    >>> hopfield = keras_attn.memory.DenseAssociativeMemory()  # classic, F(x) = x²
    >>> bool(np.all(ops.convert_to_numpy(hopfield(noisy, patterns)) == patterns[:2]))
    True
    """

    def __init__(
        self, interaction="polynomial", degree=2, update="asynchronous", sweeps=4, **kwargs
    ):
        super().__init__(**kwargs)
        if interaction not in INTERACTIONS:
            raise ValueError(
                f"`interaction` must be one of {INTERACTIONS}; received {interaction!r}."
            )
        if update not in UPDATES:
            raise ValueError(f"`update` must be one of {UPDATES}; received {update!r}.")
        self.interaction = interaction
        self.degree = _validation.check_integer("degree", degree, least=2)
        self.update = update
        self.sweeps = _validation.check_integer("sweeps", sweeps)

    def _check(self, probe, patterns):
        _validation.check_rank("probe", probe.shape, 2, self.name)
        _validation.check_rank("patterns", patterns.shape, (2, 3), self.name)
        _validation.check_same_dim(
            "probe", probe.shape, -1, "patterns", patterns.shape, -1, "number of units", self.name
        )
        if len(patterns.shape) == 3:
            _validation.check_same_dim(
                "probe", probe.shape, 0, "patterns", patterns.shape, 0, "batch size", self.name
            )

    @staticmethod
    def _binary(x):
        x = ops.cast(x, "float32")
        return ops.where(x >= 0, 1.0, -1.0)

    def _preference(self, overlap_without, unit_pattern, units):
        """`> 0` where `σ_i = +1` gives the lower energy: `Σ_μ F(a + ξ) − F(a − ξ)`.

        `overlap_without`: `Σ_{j≠i} ξ_μj σ_j`; `unit_pattern`: `ξ_μi`; the pattern
        axis `μ` is axis 1 of both.
        """
        up, down = overlap_without + unit_pattern, overlap_without - unit_pattern
        if self.interaction == "exponential":
            return ops.logsumexp(up, axis=1) - ops.logsumexp(down, axis=1)
        return ops.sum((up / units) ** self.degree - (down / units) ** self.degree, axis=1)

    def energy(self, state, patterns):
        """`E(σ) = −Σ_μ F(ξ_μ · σ)` per example, `(B,)` (for `x^n`, of `x / N`)."""
        state, patterns = self._binary(state), self._batched(self._binary(patterns), state)
        overlap = ops.einsum("bkn,bn->bk", patterns, state)
        if self.interaction == "exponential":
            return -ops.logsumexp(overlap, axis=1)
        return -ops.sum((overlap / state.shape[-1]) ** self.degree, axis=1)

    @staticmethod
    def _batched(patterns, probe):
        if len(patterns.shape) == 2:
            # `ops.shape`, not `.shape`: the number of patterns may be unknown
            # until run time (a `keras.Input` for them, a traced `predict`).
            return ops.broadcast_to(patterns[None], (ops.shape(probe)[0], *ops.shape(patterns)))
        return patterns

    def call(self, probe, patterns):
        self._check(probe, patterns)
        units = probe.shape[-1]
        state = self._binary(probe)
        patterns = self._batched(self._binary(patterns), state)
        overlap = ops.einsum("bkn,bn->bk", patterns, state)
        if self.update == "synchronous":
            for _ in range(self.sweeps):
                # (B, K, N): each unit's overlap with its own contribution removed.
                without = overlap[:, :, None] - patterns * state[:, None, :]
                preference = self._preference(without, patterns, units)
                state = ops.where(preference > 0, 1.0, ops.where(preference < 0, -1.0, state))
                overlap = ops.einsum("bkn,bn->bk", patterns, state)
            return ops.cast(state, self.compute_dtype)

        columns = ops.moveaxis(patterns, -1, 0)  # (N, B, K): unit i's column ξ_·i

        def body(step, carry):
            state, overlap = carry
            unit = step % units
            column = ops.take(columns, unit, axis=0)
            old = ops.take(state, unit, axis=1)
            preference = self._preference(
                (overlap - column * old[:, None])[:, :, None], column[:, :, None], units
            )[:, 0]
            new = ops.where(preference > 0, 1.0, ops.where(preference < 0, -1.0, old))
            change = new - old
            overlap = overlap + column * change[:, None]
            state = state + ops.one_hot(unit, units, dtype="float32")[None] * change[:, None]
            return state, overlap

        state, _ = ops.fori_loop(0, self.sweeps * units, body, (state, overlap))
        return ops.cast(state, self.compute_dtype)

    def compute_output_shape(self, probe_shape, patterns_shape):
        return tuple(probe_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "interaction": self.interaction,
            "degree": self.degree,
            "update": self.update,
            "sweeps": self.sweeps,
        }
