"""The differentiable neural computer (Graves et al. 2016, "Hybrid computing using a
neural network with dynamic external memory", Methods).

Beyond the NTM's content addressing, the DNC allocates free rows by *usage* and
remembers the *order* of writes in a temporal link matrix, so reads can replay
what was written forwards or backwards. The pure `keras.ops` functions below
are the paper's equations, batch first (memory `(B, N, W)`, weightings
`(B, N)` or `(B, R, N)` for `R` read heads), and `DNCCell` puts them together:

    ψ_t   = Π_i (1 − f_t^i w^{r,i}_{t−1})                          retention
    u_t   = (u_{t−1} + w^w_{t−1} − u_{t−1} ∘ w^w_{t−1}) ∘ ψ_t      usage
    a_t[φ_j] = (1 − u_t[φ_j]) Π_{i<j} u_t[φ_i],  φ = argsort(u_t)  allocation
    w^w_t = g^w_t (g^a_t a_t + (1 − g^a_t) C(M_{t−1}, k^w_t, β^w_t))  write weighting
    M_t   = M_{t−1} ∘ (E − w^w_t e_tᵀ) + w^w_t v_tᵀ                  erase and write
    L_t[i,j] = (1 − w^w_t[i] − w^w_t[j]) L_{t−1}[i,j] + w^w_t[i] p_{t−1}[j],  L_t[i,i] = 0
    p_t   = (1 − Σ_i w^w_t[i]) p_{t−1} + w^w_t                       precedence
    f^i_t = L_t w^{r,i}_{t−1},  b^i_t = L_tᵀ w^{r,i}_{t−1}            forward, backward
    w^{r,i}_t = π^i[1] b^i_t + π^i[2] C(M_t, k^{r,i}_t, β^{r,i}_t) + π^i[3] f^i_t
    r^i_t = M_tᵀ w^{r,i}_t
"""

import functools
import operator

import keras
from keras import ops

# Keras's own cells' dropout-mask protocol: `keras.layers.RNN` makes the masks of a
# cell of this class before its loop. Not exported by Keras 3.15 (its GRU and LSTM
# cells use it from here); nothing else would let a JAX scan draw one mask a sequence.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from keras_attn import _validation
from keras_attn.memory import addressing
from keras_attn.ops import as_tensors

_PACKAGE = "keras_attn"


def usage(previous_usage, previous_write, previous_reads, free_gates):
    """`u_t`: `(B, N)` usage and write weighting, `(B, R, N)` reads, `(B, R)` free gates."""
    previous_usage, previous_write, previous_reads, free_gates = as_tensors(
        previous_usage, previous_write, previous_reads, free_gates
    )
    heads = previous_reads.shape[1]
    if heads is None:  # a head count known only when run
        retention = ops.prod(1.0 - free_gates[..., None] * previous_reads, axis=1)
    else:  # one head's factor at a time, the form `addressing.write` measured faster on JAX
        retention = functools.reduce(operator.mul, [
            1.0 - free_gates[:, head, None] * previous_reads[:, head] for head in range(heads)
        ])
    return (previous_usage + previous_write - previous_usage * previous_write) * retention


def allocation(usage_now, epsilon=addressing.EPSILON):
    """`a_t`: the least-used rows first, `(B, N)` → `(B, N)`.

    Usage is lifted to `ε + (1 − ε) u` so the running products never reach
    exactly 0; the gradient flows through the usage values, not the sort.
    """
    usage_now = epsilon + (1.0 - epsilon) * as_tensors(usage_now)
    order = ops.argsort(usage_now, axis=-1)
    sorted_usage = ops.take_along_axis(usage_now, order, axis=-1)
    before = ops.concatenate([ops.ones_like(sorted_usage[:, :1]), sorted_usage[:, :-1]], axis=-1)
    sorted_allocation = (1.0 - sorted_usage) * ops.cumprod(before, axis=-1)
    return ops.take_along_axis(sorted_allocation, ops.argsort(order, axis=-1), axis=-1)


def write_weighting(allocation_now, content, allocation_gate, write_gate):
    """`w^w_t = g^w (g^a a + (1 − g^a) c^w)`; gates `(B,)`, weightings `(B, N)`."""
    allocation_now, content, allocation_gate, write_gate = as_tensors(
        allocation_now, content, allocation_gate, write_gate
    )
    allocation_gate, write_gate = allocation_gate[:, None], write_gate[:, None]
    return write_gate * (allocation_gate * allocation_now + (1.0 - allocation_gate) * content)


def update_links(link, precedence, write):
    """`L_t` from `L_{t−1}` `(B, N, N)`, `p_{t−1}` and `w^w_t` `(B, N)`; zero diagonal."""
    link, precedence, write = as_tensors(link, precedence, write)
    rows, columns = write[:, :, None], write[:, None, :]
    link = (1.0 - rows - columns) * link + rows * precedence[:, None, :]
    return link * (1.0 - ops.eye(ops.shape(link)[-1], dtype=link.dtype))


def update_precedence(precedence, write):
    """`p_t = (1 − Σ_i w^w_t[i]) p_{t−1} + w^w_t`."""
    precedence, write = as_tensors(precedence, write)
    return (1.0 - ops.sum(write, axis=-1, keepdims=True)) * precedence + write


def directional_weightings(link, previous_reads):
    """`(f_t, b_t)`: forward `L_t w^r_{t−1}` and backward `L_tᵀ w^r_{t−1}`, `(B, R, N)`."""
    link, previous_reads = as_tensors(link, previous_reads)
    forward = ops.einsum("bij,brj->bri", link, previous_reads)
    backward = ops.einsum("bji,brj->bri", link, previous_reads)
    return forward, backward


def _oneplus(x):
    return 1.0 + ops.softplus(x)


@keras.saving.register_keras_serializable(package=_PACKAGE)
class DNCCell(DropoutRNNCell, keras.layers.Layer):
    """A differentiable neural computer step, for `keras.layers.RNN`.

    An LSTM controller reads `[x_t; r_{t−1}]` and emits the interface vector:
    read keys and strengths, a write key and strength, erase and write
    vectors, free gates, allocation and write gates and each read head's
    read modes `π` (backward, content, forward). Memory access is the module's
    functions, in the paper's order; the output is `W_y [h_t; r_t]`.

    Args:
        units: size of the step's output.
        memory_size: `N` rows.
        memory_width: `W`, the size of a row.
        read_heads: `R`.
        controller_units: the LSTM's size.
        clip_value: the controller output is clipped to `[−clip, clip]`
            (`None`: no clipping).
        layer_norm: normalise the interface vector `W_ξ h` (the memory unit's
            input) with a layer normalisation before it is split (Franke et al.
            2018, "Robust and Scalable Differentiable Neural Computer for Question
            Answering", §3.1).
        bypass_dropout: dropout on the controller output where it bypasses the
            memory (`h_t` in `W_y [h_t; r_t]`), while training; one mask a
            sequence (Franke et al. 2018, §3.1).
        temporal_links: keep the temporal link matrix and the forward and backward
            read modes; `False` reads by content only and drops the `N × N` link
            matrix (the link and precedence states become `1 × 1` and `1`), Franke
            et al.'s content-based memory unit.
        return_weightings: also output the read weightings `(R·N)` and the
            write weighting `(N)` of the step (split them with `split_output`).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(B, input_size)`, one step.
        states: the list from `get_initial_state`: LSTM `h`, `c`, memory,
            reads, read weightings, write weighting, usage, precedence, links.

    Returns:
        `(output, new_states)`; `output` is `(B, units)` or, with
        `return_weightings`, `(B, units + (R + 1)·N)`.

    Example:

    >>> cell = keras_attn.memory.DNCCell(units=8, memory_size=16, memory_width=10)
    >>> rnn = keras.layers.RNN(cell, return_sequences=True)
    >>> tuple(rnn(np.zeros((2, 5, 9), "float32")).shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        units,
        memory_size=32,
        memory_width=16,
        read_heads=2,
        controller_units=64,
        clip_value=20.0,
        return_weightings=False,
        layer_norm=False,
        bypass_dropout=0.0,
        temporal_links=True,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.layer_norm = bool(layer_norm)
        self.bypass_dropout = _validation.check_number(
            "bypass_dropout", bypass_dropout, low_inclusive=True, high=1.0)
        self.temporal_links = bool(temporal_links)
        self.seed = seed
        # Keras's RNN makes a `DropoutRNNCell`'s masks before its loop (a mask made
        # inside a JAX scan would leak a tracer): its "recurrent" mask is made from
        # the first state, the controller's `h`, the shape bypass dropout needs.
        self.dropout, self.recurrent_dropout = 0.0, self.bypass_dropout
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.units = _validation.check_integer("units", units)
        self.memory_size = _validation.check_integer("memory_size", memory_size)
        self.memory_width = _validation.check_integer("memory_width", memory_width)
        self.read_heads = _validation.check_integer("read_heads", read_heads)
        self.controller_units = _validation.check_integer("controller_units", controller_units)
        self.clip_value = _validation.check_number(
            "clip_value", clip_value, allow_none=True
        )
        self.return_weightings = bool(return_weightings)
        self.controller_cell = keras.layers.LSTMCell(
            controller_units, dtype=self.dtype_policy, name="controller"
        )
        r, w = read_heads, memory_width
        # Read keys, strengths, modes; write key, strength, erase, vector; gates.
        self._interface_size = r * w + r + 3 * r + w + 1 + 2 * w + r + 2
        self.interface_dense = keras.layers.Dense(
            self._interface_size, dtype=self.dtype_policy, name="interface"
        )
        self.interface_norm = keras.layers.LayerNormalization(
            dtype=self.dtype_policy, name="interface_norm") if self.layer_norm else None
        self.output_dense = keras.layers.Dense(units, dtype=self.dtype_policy, name="output")
        n = memory_size
        links = n if self.temporal_links else 1
        self.state_size = [controller_units, controller_units, (n, w), (r, w), (r, n), n, n,
                           links, (links, links)]
        self.output_size = units + ((r + 1) * n if self.return_weightings else 0)

    def build(self, input_shape):
        _validation.check_rank("inputs", input_shape, 2, self.name)
        reads = self.read_heads * self.memory_width
        self.controller_cell.build((input_shape[0], input_shape[-1] + reads))
        self.interface_dense.build((input_shape[0], self.controller_units))
        if self.interface_norm is not None:
            self.interface_norm.build((input_shape[0], self._interface_size))
        self.output_dense.build((input_shape[0], self.controller_units + reads))
        self.built = True

    def get_initial_state(self, batch_size):
        n, w, r, dtype = self.memory_size, self.memory_width, self.read_heads, self.compute_dtype
        zeros = ops.zeros
        return [
            zeros((batch_size, self.controller_units), dtype),
            zeros((batch_size, self.controller_units), dtype),
            zeros((batch_size, n, w), dtype),
            zeros((batch_size, r, w), dtype),
            zeros((batch_size, r, n), dtype),
            zeros((batch_size, n), dtype),
            zeros((batch_size, n), dtype),
            zeros((batch_size, n if self.temporal_links else 1), dtype),
            zeros((batch_size,) + ((n, n) if self.temporal_links else (1, 1)), dtype),
        ]

    def _interface(self, hidden):
        """Splits `W_ξ h` into the named interface parameters."""
        r, w = self.read_heads, self.memory_width
        xi = self.interface_dense(hidden)
        if self.interface_norm is not None:
            xi = self.interface_norm(xi)
        sizes = {
            "read_keys": r * w, "read_strengths": r, "read_modes": 3 * r, "write_key": w,
            "write_strength": 1, "erase": w, "write_vector": w, "free_gates": r,
            "allocation_gate": 1, "write_gate": 1,
        }
        parts, offset = {}, 0
        for name, size in sizes.items():
            parts[name] = xi[:, offset:offset + size]
            offset += size
        return {
            "read_keys": ops.reshape(parts["read_keys"], (-1, r, w)),
            "read_strengths": _oneplus(parts["read_strengths"]),
            "read_modes": ops.softmax(ops.reshape(parts["read_modes"], (-1, r, 3)), axis=-1),
            "write_key": parts["write_key"][:, None],
            "write_strength": _oneplus(parts["write_strength"]),
            "erase": ops.sigmoid(parts["erase"]),
            "write_vector": parts["write_vector"],
            "free_gates": ops.sigmoid(parts["free_gates"]),
            "allocation_gate": ops.sigmoid(parts["allocation_gate"][:, 0]),
            "write_gate": ops.sigmoid(parts["write_gate"][:, 0]),
        }

    def call(self, inputs, states, training=None):
        h, c, memory, reads, read_weights, write, usage_, precedence, link = states
        batch = ops.shape(inputs)[0]
        flat_reads = ops.reshape(reads, (batch, self.read_heads * self.memory_width))
        hidden, (h, c) = self.controller_cell(
            ops.concatenate([inputs, flat_reads], axis=-1), [h, c], training=training
        )
        if self.clip_value is not None:
            hidden = ops.clip(hidden, -self.clip_value, self.clip_value)
        xi = self._interface(hidden)

        usage_ = usage(usage_, write, read_weights, xi["free_gates"])
        content = addressing.content_weighting(memory, xi["write_key"], xi["write_strength"])
        write = write_weighting(
            allocation(usage_), content[:, 0], xi["allocation_gate"], xi["write_gate"]
        )
        memory = addressing.write(
            memory, write[:, None], xi["erase"][:, None], xi["write_vector"][:, None]
        )
        content = addressing.content_weighting(memory, xi["read_keys"], xi["read_strengths"])
        if self.temporal_links:
            link = update_links(link, precedence, write)
            precedence = update_precedence(precedence, write)
            forward, backward = directional_weightings(link, read_weights)
            modes = xi["read_modes"]
            read_weights = modes[..., 0:1] * backward + modes[..., 1:2] * content
            read_weights = read_weights + modes[..., 2:3] * forward
        else:
            read_weights = content
        reads = addressing.read(memory, read_weights)

        flat_reads = ops.reshape(reads, (batch, self.read_heads * self.memory_width))
        bypass = hidden
        if training and self.bypass_dropout > 0:
            bypass = hidden * ops.cast(self.get_recurrent_dropout_mask(h), hidden.dtype)
        output = self.output_dense(ops.concatenate([bypass, flat_reads], axis=-1))
        if self.return_weightings:
            output = ops.concatenate([output, ops.reshape(read_weights, (batch, -1)), write], -1)
        return output, [h, c, memory, reads, read_weights, write, usage_, precedence, link]

    def split_output(self, outputs):
        """`(…, output_size)` → (output, read weightings `(…, R, N)`, write `(…, 1, N)`).

        The write weighting keeps a head axis of 1, the layout of
        `NTMCell.split_output`, so code that plots or serves an NTM's weightings
        takes a DNC's unchanged.
        """
        n, r = self.memory_size, self.read_heads
        middle = (-1,) * (len(outputs.shape) - 2)
        reads = keras.layers.Reshape((*middle, r, n))(outputs[..., self.units:self.units + r * n])
        writes = keras.layers.Reshape((*middle, 1, n))(outputs[..., self.units + r * n:])
        return outputs[..., :self.units], reads, writes

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "memory_size": self.memory_size,
            "memory_width": self.memory_width,
            "read_heads": self.read_heads,
            "controller_units": self.controller_units,
            "clip_value": self.clip_value,
            "return_weightings": self.return_weightings,
            "layer_norm": self.layer_norm,
            "bypass_dropout": self.bypass_dropout,
            "temporal_links": self.temporal_links,
            "seed": self.seed,
        }
