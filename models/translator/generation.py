"""Decoding a translator: ids to ids (`decode_ids`, `Generator`) and text to text
(`translate`), for `generate`, the command line and the exported graph."""

import weakref

import keras
from keras import ops

from keras_attn import decoding
from keras_attn.models.text import END_ID, PAD_ID, START_ID


def decode_ids(
    model,
    source,
    max_length,
    beam_width=1,
    length_penalty=0.0,
    coverage_penalty=0.0,
    use_cache=True,
):
    """Decodes `source` ids `(B, T_in)` with a trained translator or Transformer.

    `use_cache=False` decodes a Transformer without its key/value caches
    (`TransformerDecoder.step_recomputed`); the RNN has none.

    Returns `decoding.greedy_decode` / `beam_search`'s dict: `tokens`
    `(B, max_length)` (ending in `[END]`, then `[PAD]`), `scores`, `lengths`,
    `alignments` `(B, max_length, T_in)`.
    """
    encoder, decoder = model.get_layer("encoder"), model.get_layer("decoder")
    buffer_length = getattr(decoder, "max_length", None)  # the Transformer's token buffer
    if buffer_length is not None and max_length > buffer_length:
        raise ValueError(
            f"`max_length` must be at most the decoder's `max_length` ({buffer_length}, "
            f"the trained target length); received {max_length}."
        )
    source = ops.convert_to_tensor(source, "int32")
    # (memory, mask, cell states) from the RNN encoder, (memory, mask) from the
    # Transformer's: each decoder starts from what its encoder returns.
    encoded = encoder(source, training=False)
    mask = encoded[1]
    step, states = decoder.step, decoder.initial_states(*encoded)
    if not use_cache and hasattr(decoder, "step_recomputed"):
        step, states = decoder.step_recomputed, decoder.initial_states_recomputed(*encoded)
    batch, length = ops.shape(source)[0], ops.shape(source)[1]
    common = dict(
        initial_states=states,
        batch_size=batch,
        max_length=max_length,
        start_token=START_ID,
        end_token=END_ID,
        alignment_length=length,
        pad_token=PAD_ID,
    )
    if beam_width == 1:
        return decoding.greedy_decode(step, **common)
    return decoding.beam_search(
        step,
        beam_width=beam_width,
        length_penalty_alpha=length_penalty,
        coverage_penalty_beta=coverage_penalty,
        source_mask=mask,
        **common,
    )


class Generator(keras.Model):
    """`decode_ids` as a model, so that `predict` compiles the decoding loop with the
    backend's own compiler instead of running it op by op.
    `predict(source_ids)` returns `decode_ids`'s dict.

    Args:
        translator: a trained translator or Transformer.
        max_length: decoding steps.
        beam_width, length_penalty, coverage_penalty, use_cache: as `decode_ids`.
    """

    def __init__(self, translator, max_length, beam_width=1, length_penalty=0.0,
                 coverage_penalty=0.0, use_cache=True, **kwargs):
        super().__init__(**kwargs)
        self.translator = translator
        self.max_length, self.beam_width = max_length, beam_width
        self.length_penalty, self.coverage_penalty = length_penalty, coverage_penalty
        self.use_cache = use_cache

    def call(self, source):
        return decode_ids(self.translator, source, self.max_length, beam_width=self.beam_width,
                        length_penalty=self.length_penalty,
                        coverage_penalty=self.coverage_penalty, use_cache=self.use_cache)


# One compiled decoder per model and decoder settings (a new one would compile anew).
_generators = weakref.WeakKeyDictionary()


def generator(model, max_length, beam_width, length_penalty):
    """The model's `Generator` for these settings, compiled once and kept."""
    key = (int(max_length), int(beam_width), float(length_penalty))
    kept = _generators.setdefault(model, {})
    if key not in kept:
        kept[key] = Generator(model, *key)
    return kept[key]


def translate(model, preprocessor, texts, beam_width=1, max_length=None, length_penalty=0.0,
              batch_size=256):
    """`model.generate(texts)` with this `preprocessor` (a model saved without one).

    The texts are decoded in batches of similar length, each padded to its own
    longest source (at most `max_source_length`, as the export truncates), and
    returned in the order given; an empty text gives an empty translation.
    """
    if max_length is None:
        max_length = preprocessor.max_target_length - 1
    decoder = generator(model, max_length, beam_width, length_penalty)
    single = isinstance(texts, str)
    texts = preprocessor.normalize([texts] if single else texts)
    lengths = [len(ids) for ids in preprocessor.encode_sources(texts)]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    outputs = [""] * len(texts)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        # Padded to a multiple of 8, as training batches are: fewer shapes to compile.
        ids = preprocessor.padded_sources([texts[i] for i in rows])
        tokens = decoder.predict_on_batch(ids)["tokens"]
        for i, text in zip(rows, preprocessor.decode(tokens), strict=True):
            outputs[i] = text if texts[i] else ""
    return outputs[0] if single else outputs
