"""The named choices of the layers and models, each spelled once.

The layers and models check their arguments against these tuples, and the command
line offers them as its `choices`; the module imports nothing, so any of them can
read it.
"""

#: `LuongAttention(score=…)`: h_tᵀ h̄_s, h_tᵀ W_a h̄_s, v_aᵀ tanh(W_a [h_t; h̄_s]).
LUONG_SCORES = ("dot", "general", "concat")
#: `MonotonicAttention(score=…)`: the energy of Raffel et al. (additive) or Luong's.
MONOTONIC_SCORES = ("additive", "dot", "general")
#: The translator's attention: Bahdanau's, Luong's three scores, monotonic Bahdanau.
TRANSLATOR_ATTENTIONS = tuple(
    ["bahdanau", *(f"luong-{score}" for score in LUONG_SCORES), "bahdanau-monotonic"])
#: The translator's recurrent cells.
RNN_CELLS = ("gru", "lstm")
#: `NTMCell(controller=…)`.
NTM_CONTROLLERS = ("lstm", "feedforward")
#: `NTMCell(memory_init=…)`: Collier & Beel's constant, a learned or a random start.
NTM_MEMORY_INITS = ("constant", "learned", "random")
#: `MemN2N(weight_tying=…)`: Sukhbaatar et al.'s adjacent or layer-wise (RNN-like) tying.
MEMN2N_WEIGHT_TYINGS = ("adjacent", "layerwise")
#: `MemN2N(empty_slots=…)`: free memory slots kept in the softmax with score 0, or masked.
MEMN2N_EMPTY_SLOTS = ("zero", "masked")
#: `MemN2NQA(position_encoding_form=…)`: the authors' code's fixed width, or the paper's
#: per-sentence length.
MEMN2N_POSITION_ENCODING_FORMS = ("code", "paper")
#: `PointerNet(encoder=…)`: self-attention without positions, or an LSTM over the points.
POINTER_ENCODERS = ("set", "lstm")
