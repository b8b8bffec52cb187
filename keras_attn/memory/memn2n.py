"""End-to-end memory networks (Sukhbaatar, Szlam, Weston & Fergus, 2015).

A read-only memory of embedded sentences is read `K` times ("hops"). Hop `k`
attends from the controller state `u^k` over the input memories `m_i` and reads
the output memories `c_i`:

    p_i = softmax(u^kᵀ m_i),   o^k = Σ_i p_i c_i,   u^{k+1} = u^k + o^k   (or H u^k + o^k)

and the answer is `â = softmax(W u^{K+1})`, i.e. `W (u^K + o^K)`.

Sentences `x_i = (x_i1 … x_iJ)` are embedded as `m_i = Σ_j l_j ⊙ A x_ij + T_A(i)`,
where `l_j` is the bag-of-words weight 1 or the **position encoding**
`l_kj = (1 − j/J) − (k/d)(1 − 2j/J)` (`j`, `k` one-based word and embedding
indices, `J` the sentence's own length) and `T_A(i)` the **temporal encoding** of
the memory slot (slot 0 is the most recent sentence). The authors' code uses
another form, centred on the middle word and embedding index, over one fixed
width `J` for every sentence and the question:
`l_kj = 1 + 4 (k − (d+1)/2)(j − (J+1)/2) / (d J)` (`position_encoding_length=J`).
"""

import keras
from keras import ops

from keras_attn import _initializers, _validation
from keras_attn.choices import MEMN2N_EMPTY_SLOTS, MEMN2N_WEIGHT_TYINGS
from keras_attn.ops import masked_softmax

_PACKAGE = "keras_attn"


def position_encoding_weights(token_ids, embedding_dim, dtype="float32", length=None):
    """The position-encoding weights `l_kj` for each word of each sentence.

    Args:
        token_ids: int ids `(..., J)`; id 0 is padding, and a sentence's words are
            its first `J_i` positions.
        embedding_dim: `d`.
        length: `None` for the paper's form with each sentence's own length `J_i`
            (so padding a sentence further does not change it); an int `J` for
            the authors' code's form over that fixed width.

    Returns:
        `(..., J, d)` weights, zero at padding.
    """
    present = ops.cast(ops.not_equal(token_ids, 0), dtype)
    j = ops.cast(ops.arange(1, token_ids.shape[-1] + 1), dtype)[:, None]  # (J, 1)
    k = ops.cast(ops.arange(1, embedding_dim + 1), dtype)[None, :]  # (1, d)
    if length is None:
        own = ops.maximum(ops.sum(present, axis=-1, keepdims=True), 1.0)[..., None]  # (..., 1, 1)
        weights = (1.0 - j / own) - (k / embedding_dim) * (1.0 - 2.0 * j / own)
    else:
        d, width = float(embedding_dim), float(length)
        weights = 1.0 + 4.0 * (k - (d + 1) / 2) * (j - (width + 1) / 2) / (d * width)
    return weights * present[..., None]


@keras.saving.register_keras_serializable(package=_PACKAGE)
class MemoryHop(keras.layers.Layer):
    """One soft read of a memory: `o = Σ_i softmax(uᵀ m_i) c_i`.

    The weightless step of `MemN2N`, usable alone with any embedded memories.
    With `softmax_weight` below 1 the weights blend towards the raw scores
    `p_i = uᵀ m_i` ("linear start": the softmax removed early in training).

    Call arguments:
        query: `(B, d)`, the controller state `u`.
        input_memory: `(B, N, d)`, the memories `m_i` that are scored.
        output_memory: `(B, N, d)`, the memories `c_i` that are read.
        memory_mask: optional `(B, N)` booleans, true for real memories. A masked memory
            gets weight 0; a query with no memory reads zeros.
        softmax_weight: scalar in [0, 1]: 1 is the softmax, 0 the linear read.

    Returns:
        `(read (B, d), weights (B, N))`.

    Example:
    >>> hop = keras_attn.MemoryHop()
    >>> read, weights = hop(ops.ones((2, 4)), ops.ones((2, 5, 4)), ops.ones((2, 5, 4)))
    >>> tuple(read.shape), tuple(weights.shape)
    ((2, 4), (2, 5))
    """

    def call(self, query, input_memory, output_memory, memory_mask=None, softmax_weight=1.0):
        _validation.check_rank("query", query.shape, 2, self.name)
        _validation.check_rank("input_memory", input_memory.shape, 3, self.name)
        _validation.check_rank("output_memory", output_memory.shape, 3, self.name)
        for axis, what in ((1, "number of memories"), (2, "embedding size")):
            _validation.check_same_dim(
                "input_memory", input_memory.shape, axis,
                "output_memory", output_memory.shape, axis, what, self.name,
            )
        _validation.check_same_dim(
            "query", query.shape, 1, "input_memory", input_memory.shape, 2, "embedding size",
            self.name,
        )
        scores = ops.einsum("bnd,bd->bn", input_memory, query)
        mask = memory_mask
        if mask is not None:
            _validation.check_mask("memory_mask", mask, [tuple(scores.shape)], self.name)
            mask = ops.cast(mask, "bool")
        weights = masked_softmax(scores, mask)
        if not (isinstance(softmax_weight, (int, float)) and softmax_weight == 1):
            linear = scores if mask is None else ops.where(mask, scores, ops.zeros_like(scores))
            softmax_weight = ops.cast(softmax_weight, weights.dtype)
            weights = softmax_weight * weights + (1.0 - softmax_weight) * linear
        read = ops.einsum("bn,bnd->bd", weights, ops.cast(output_memory, weights.dtype))
        return read, weights

    def compute_output_shape(self, query_shape, input_memory_shape, output_memory_shape):
        return tuple(query_shape), tuple(input_memory_shape[:2])


@keras.saving.register_keras_serializable(package=_PACKAGE)
class MemN2N(keras.layers.Layer):
    """End-to-end memory network: `K` hops over embedded story sentences.

    Weight tying (the paper's §2.2):

    * `"adjacent"`: `K + 1` embedding matrices `E_0 … E_K` with `A^k = E_{k−1}`,
      `C^k = E_k`, the question embedding `B = A^1 = E_0` and the answer
      matrix `W = C^K = E_K` (the temporal tables are tied the same way).
    * `"layerwise"` (RNN-like): one `A`, one `C` for every hop, a separate `B`
      and `W`, and a learned linear map on the state, `u^{k+1} = H u^k + o^k`.

    Training-time options: `random_noise` is the rate of empty memories inserted
    ("random noise", regularising `T_A`); they are realised as the shift of each
    sentence's temporal index by the number of empty slots inserted before it.

    Empty slots (all-zero rows of `story`, e.g. the slots a short story leaves
    free): `empty_slots="masked"` leaves them out of the softmax; `"zero"` keeps
    them in it as zero vectors, score 0 and read 0, as the authors' code does
    (their empty slots hold only the nil word, without a time word). There they
    give the softmax somewhere to put the weight that no sentence deserves.

    `linear_start=True` starts with the softmax of every hop removed;
    `softmax_enabled` (a non-trainable weight, saved with the model) switches it
    back on, e.g. from a callback.

    Args:
        vocab_size: number of token ids (id 0 is padding and embeds to zero).
        embedding_dim: `d`.
        hops: `K ≥ 1`.
        memory_size: `N`, the number of memory slots (slot 0 = most recent).
        weight_tying: `"adjacent"` or `"layerwise"`.
        position_encoding: position encoding (True) or bag of words (False).
        position_encoding_length: `None` for the paper's position encoding (each
            sentence's own length); an int `J`, at least the story's and the
            question's padded width, for the authors' code's form over that width.
        temporal_encoding: add `T_A`, `T_C` per memory slot.
        empty_slots: `"masked"` or `"zero"` (see above).
        random_noise: rate of inserted empty memories while training.
        linear_start: start with the hops' softmax removed.
        embeddings_initializer: for every table (the paper: N(0, 0.1)).
        seed: of the random-noise draws.

    Call arguments:
        story: int ids `(B, N, J)`, the sentences most recent first; an all-zero
            row is an empty slot.
        question: int ids `(B, Jq)`.
        training: enables the random noise.

    Returns:
        `(logits (B, vocab_size), attention (B, K, N))`: the answer's logits over
        the vocabulary, and each hop's weights over the memory slots.

    Example:
    >>> layer = keras_attn.MemN2N(vocab_size=30, embedding_dim=8, hops=3, memory_size=10)
    >>> logits, attention = layer(ops.ones((2, 10, 6), "int32"), ops.ones((2, 5), "int32"))
    >>> tuple(logits.shape), tuple(attention.shape)
    ((2, 30), (2, 3, 10))
    """

    def __init__(
        self,
        vocab_size,
        embedding_dim=20,
        hops=3,
        memory_size=50,
        weight_tying="adjacent",
        position_encoding=True,
        temporal_encoding=True,
        random_noise=0.1,
        linear_start=False,
        embeddings_initializer=None,
        seed=None,
        position_encoding_length=None,
        empty_slots="masked",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if empty_slots not in MEMN2N_EMPTY_SLOTS:
            raise ValueError(
                f"`empty_slots` must be one of {MEMN2N_EMPTY_SLOTS}; received {empty_slots!r}."
            )
        self.empty_slots = empty_slots
        vocab_size = _validation.check_integer("vocab_size", vocab_size)
        embedding_dim = _validation.check_integer("embedding_dim", embedding_dim)
        hops = _validation.check_integer("hops", hops)
        memory_size = _validation.check_integer("memory_size", memory_size)
        if weight_tying not in MEMN2N_WEIGHT_TYINGS:
            raise ValueError(
                f"`weight_tying` must be one of {MEMN2N_WEIGHT_TYINGS}; received {weight_tying!r}."
            )
        random_noise = _validation.check_number(
            "random_noise", random_noise, low_inclusive=True, high=1.0
        )
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hops = hops
        self.memory_size = memory_size
        self.weight_tying = weight_tying
        self.position_encoding = position_encoding
        self.position_encoding_length = (
            None if position_encoding_length is None
            else _validation.check_integer("position_encoding_length", position_encoding_length)
        )
        self.temporal_encoding = temporal_encoding
        self.random_noise = float(random_noise)
        self.linear_start = bool(linear_start)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer or keras.initializers.RandomNormal(stddev=0.1)
        )
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.hop = MemoryHop(dtype=self.dtype_policy, name="hop")

    def _table(self, name, rows, nil_row=False):
        # Each table its own draw: the paper initialises them independently.
        self._tables_made = getattr(self, "_tables_made", 0) + 1
        table = self.add_weight(
            name=name, shape=(rows, self.embedding_dim),
            initializer=_initializers.fresh(self.embeddings_initializer, self._tables_made),
        )
        if nil_row:
            # Id 0 (padding, the authors' "nil" word) embeds to zero, as their code
            # holds it; masked out of every sum, it never gets a gradient either.
            row = ops.expand_dims(ops.arange(rows), 1)
            table.assign(ops.where(row == 0, ops.zeros_like(table.value), table.value))
        return table

    def build(self, story_shape, question_shape):
        _validation.check_rank("story", story_shape, 3, self.name)
        _validation.check_rank("question", question_shape, 2, self.name)
        if story_shape[1] is not None and story_shape[1] != self.memory_size:
            raise ValueError(
                f"`story` must have memory_size={self.memory_size} slots on axis 1; "
                f"received shape {tuple(story_shape)}."
            )
        for name, shape in (("story", story_shape), ("question", question_shape)):
            width = shape[-1]
            if self.position_encoding_length is not None and width is not None \
                    and width > self.position_encoding_length:
                raise ValueError(
                    f"`{name}` must be at most position_encoding_length="
                    f"{self.position_encoding_length} words wide; received shape {tuple(shape)}."
                )
        vocab, slots, hops = self.vocab_size, self.memory_size, self.hops
        if self.weight_tying == "adjacent":
            self.word_tables = [self._table(f"embedding_{k}", vocab, nil_row=True)
                                for k in range(hops + 1)]
            self.time_tables = (
                [self._table(f"temporal_{k}", slots) for k in range(hops + 1)]
                if self.temporal_encoding else []
            )
            self.state_map = None
        else:
            memory_in = self._table("embedding_a", vocab, nil_row=True)
            memory_out = self._table("embedding_c", vocab, nil_row=True)
            # [B (question), A, C, W (answer)]; hop k reads A then C.
            self.word_tables = [self._table("embedding_b", vocab, nil_row=True), memory_in,
                                memory_out, self._table("answer", vocab, nil_row=True)]
            self.time_tables = (
                [self._table("temporal_a", slots), self._table("temporal_c", slots)]
                if self.temporal_encoding else []
            )
            self.state_map = self.add_weight(
                name="state_map",
                shape=(self.embedding_dim, self.embedding_dim),
                initializer=_initializers.fresh(self.embeddings_initializer, 0),
            )
        self.softmax_enabled = self.add_weight(
            name="softmax_enabled",
            shape=(),
            initializer=keras.initializers.Constant(0.0 if self.linear_start else 1.0),
            trainable=False,
        )
        self.built = True

    def _tables_of_hop(self, k):
        """(input word table, output word table, input time table, output time table)."""
        if self.weight_tying == "adjacent":
            words, times = self.word_tables[k : k + 2], self.time_tables[k : k + 2]
        else:
            words, times = self.word_tables[1:3], self.time_tables
        return (*words, *(times or (None, None)))

    @staticmethod
    def _lookup(table, ids):
        """The rows `table[ids]`, with a dense gradient on every backend.

        TensorFlow hands a gather's gradient over as `IndexedSlices`, one row per
        occurrence, and a per-weight `clipnorm` (the paper's clipping) then
        measures those rows instead of the summed gradient: a word used hundreds
        of times in a batch is clipped far too little, and linear start diverges.
        A product with the one-hot ids has the dense gradient; JAX and PyTorch
        already give it for the gather, which costs less.
        """
        if keras.backend.backend() == "tensorflow":
            # A 2-D matmul: TensorFlow's einsum with `...` ran ~80× slower here.
            rows, width = ops.shape(table)
            one_hot = ops.one_hot(ops.reshape(ids, (-1,)), rows, dtype=table.dtype)
            vectors = ops.matmul(one_hot, table)
            return ops.reshape(vectors, (*ops.shape(ids), width))
        return ops.take(table, ids, axis=0)

    def _embed(self, token_ids, table):
        """Σ_j l_j ⊙ E x_j over the last axis of `token_ids`."""
        vectors = self._lookup(table, token_ids)
        if self.position_encoding:
            weights = position_encoding_weights(
                token_ids, self.embedding_dim, vectors.dtype, self.position_encoding_length
            )
        else:
            weights = ops.cast(ops.not_equal(token_ids, 0), vectors.dtype)[..., None]
        return ops.sum(vectors * weights, axis=-2)

    def _time_index(self, slots, batch_size, training):
        index = ops.arange(slots)[None, :]
        if not (training and self.random_noise > 0):
            return index
        empty = keras.random.uniform((batch_size, slots), seed=self.seed_generator)
        inserted = ops.cumsum(ops.cast(empty < self.random_noise, "int32"), axis=1)
        return ops.minimum(index + inserted, slots - 1)

    def call(self, story, question, training=None):
        _validation.check_rank("story", story.shape, 3, self.name)
        _validation.check_rank("question", question.shape, 2, self.name)
        _validation.check_dtype("integer", self.name, story=story, question=question)
        story = ops.cast(story, "int32")
        question = ops.cast(question, "int32")
        slots = self.memory_size
        memory_mask = ops.any(ops.not_equal(story, 0), axis=-1)
        time_index = self._time_index(slots, ops.shape(story)[0], training)
        state = self._embed(question, self.word_tables[0])
        attention = []
        for k in range(self.hops):
            words_in, words_out, time_in, time_out = self._tables_of_hop(k)
            memory_in, memory_out = self._embed(story, words_in), self._embed(story, words_out)
            if time_in is not None:
                memory_in = memory_in + self._lookup(time_in, time_index)
                memory_out = memory_out + self._lookup(time_out, time_index)
            hop_mask = memory_mask
            if self.empty_slots == "zero":
                # Empty slots stay in the softmax as zero vectors: score 0, read 0.
                filled = ops.expand_dims(ops.cast(memory_mask, memory_in.dtype), -1)
                memory_in, memory_out, hop_mask = memory_in * filled, memory_out * filled, None
            read, weights = self.hop(
                state, memory_in, memory_out, memory_mask=hop_mask,
                softmax_weight=self.softmax_enabled,
            )
            if self.state_map is not None:
                state = ops.matmul(state, ops.cast(self.state_map, state.dtype))
            state = state + read
            attention.append(weights)
        answer = self.word_tables[-1]
        logits = ops.matmul(state, ops.transpose(ops.cast(answer, state.dtype)))
        return logits, ops.stack(attention, axis=1)

    def compute_output_shape(self, story_shape, question_shape):
        batch = story_shape[0]
        return (batch, self.vocab_size), (batch, self.hops, self.memory_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            embedding_dim=self.embedding_dim,
            hops=self.hops,
            memory_size=self.memory_size,
            weight_tying=self.weight_tying,
            position_encoding=self.position_encoding,
            position_encoding_length=self.position_encoding_length,
            temporal_encoding=self.temporal_encoding,
            empty_slots=self.empty_slots,
            random_noise=self.random_noise,
            linear_start=self.linear_start,
            embeddings_initializer=keras.initializers.serialize(self.embeddings_initializer),
            seed=self.seed,
        )
        return config
