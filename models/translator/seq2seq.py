"""What the translators share: the seq2seq model base, its decoding and its loss.

`Seq2SeqModel` is the base of `Translator` and `TransformerTranslator`. Built with a
`TranslatorPreprocessor`, such a model takes raw text in `fit` and `evaluate`,
translates text with `generate` and exports a SavedModel that takes text; without
one it trains on ids, and `decode_ids` decodes ids.
"""

import keras
import numpy as np
from keras import ops

from keras_attn import _validation
from keras_attn.models.batching import BucketedBatches
from keras_attn.models.compiling import compile_with_built_optimizer
from keras_attn.models.configured import ConfiguredModel, check_export_arguments
from keras_attn.models.text import END_ID, PAD_ID
from keras_attn.models.translator.generation import generator, translate
from keras_attn.models.translator.preprocessor import TranslatorPreprocessor, is_string_dataset

DEFAULT_LEARNING_RATE = 3e-3


def padding_weights(y, sample_weight=None):
    """`sample_weight`, or 1 on real target tokens (`[END]` included) and 0 on padding."""
    if sample_weight is not None or y is None:
        return sample_weight
    return ops.cast(ops.not_equal(y, PAD_ID), "float32")


@keras.saving.register_keras_serializable(package="keras_attn_models")
class SequenceCrossEntropy(keras.losses.Loss):
    """Per-token cross-entropy from logits, with optional label smoothing.

    With smoothing ε (Szegedy et al. 2016) over the `V` target ids, the target of a
    token `y` is `(1 − ε) · onehot(y) + ε / V`, so

        ℓ = −(1 − ε) · log p_y − (ε / V) · Σ_k log p_k.

    It keeps a model from growing its logits without bound on a few thousand
    pairs (Sennrich & Zhang 2019 use ε = 0.1-0.2 there). `ε = 0` is plain
    sparse cross-entropy.

    Args:
        label_smoothing: ε, in `[0, 1)`.
        reduction: Keras's; `"mean_with_sample_weight"` divides the summed loss by
            the sum of the weights (`sequence_loss`).
    """

    def __init__(self, label_smoothing=0.0, reduction="mean_with_sample_weight",
                 name="sequence_cross_entropy", **kwargs):
        super().__init__(reduction=reduction, name=name, **kwargs)
        self.label_smoothing = _validation.check_number(
            "label_smoothing", label_smoothing, low_inclusive=True, high=1.0)

    def call(self, y_true, y_pred):
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)
        ids = ops.expand_dims(ops.cast(y_true, "int32"), -1)
        nll = -ops.squeeze(ops.take_along_axis(log_probs, ids, axis=-1), -1)
        if not self.label_smoothing:
            return nll
        uniform = -ops.mean(log_probs, axis=-1)
        return (1.0 - self.label_smoothing) * nll + self.label_smoothing * uniform

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


def sequence_loss(label_smoothing=0.0):
    """Cross-entropy per real target token: summed over the tokens, divided by the sum
    of their weights (`"mean_with_sample_weight"`), as NMT toolkits and TF-Addons'
    `sequence_loss` report it. Keras's default `"sum_over_batch_size"` would divide
    by every position, padded or not, so the figure would shrink with the padding.
    `label_smoothing`: `SequenceCrossEntropy`'s ε."""
    if label_smoothing:
        return SequenceCrossEntropy(label_smoothing)
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight")


class Seq2SeqModel(ConfiguredModel):
    """Base of the translators: teacher-forcing training on `{"source", "target_in"}`
    ids with padding masked out of the loss and the metrics, and, with a
    `preprocessor`, text in and out.

    * `compile()` with no arguments: Adam (3e-3, gradients clipped at norm 5), the
      per-token cross-entropy of `sequence_loss`, token accuracy.
    * A target id `[PAD]` (0) carries no weight in the loss or the metrics when no
      `sample_weight` is given.
    * `fit(x=sources, y=targets)` and `evaluate` take lists (or arrays) of strings
      when the model has a preprocessor, or a TensorFlow dataset of
      `(source, target)` string batches (`TranslatorPreprocessor.dataset_batches`);
      lists are cut into length-bucketed batches.
      The first `fit` on lists of text starts the output bias at the targets'
      log-frequencies (`initialize_output_bias`), as the command line does.
    * `generate(texts)` → translations; `export(path)` → the served SavedModel.
    """

    @classmethod
    def resolve_arguments(cls, arguments):
        preprocessor = arguments.get("preprocessor")
        if preprocessor is None:
            needed = ("source_vocab_size", "target_vocab_size",
                      *cls.derived_from_preprocessor(None))
            missing = [name for name in needed if arguments[name] is None]
            if missing:
                raise ValueError(f"{cls.__name__} needs {', '.join(f'`{n}`' for n in needed)}, "
                                 "or a `preprocessor` to read them from; received none for "
                                 f"{', '.join(f'`{m}`' for m in missing)}.")
            return arguments
        if not isinstance(preprocessor, TranslatorPreprocessor):
            raise ValueError("`preprocessor` must be a TranslatorPreprocessor; received "
                             f"{type(preprocessor).__name__}.")
        derived = {"source_vocab_size": preprocessor.source_vocabulary_size,
                   "target_vocab_size": preprocessor.target_vocabulary_size,
                   **cls.derived_from_preprocessor(preprocessor)}
        for name, value in derived.items():
            if arguments[name] is not None and arguments[name] != value:
                raise ValueError(f"`{name}` must match the preprocessor's ({value}) or be "
                                 f"left out; received {arguments[name]!r}.")
        return {**arguments, **derived}

    @classmethod
    def from_preset(cls, name, preprocessor=None, **overrides):
        """The model of the named configuration (`models.translator.presets`), sized by
        `preprocessor`; `overrides` replace any of its arguments."""
        from keras_attn.models.translator.presets import preset

        return cls(preprocessor=preprocessor, **{**preset(name)[cls.MODEL_KIND], **overrides})

    @staticmethod
    def derived_from_preprocessor(preprocessor):
        """Further constructor arguments a preprocessor sets (`resolve_arguments`), by
        name (with `None`: the names, any values)."""
        return {}

    def compile(self, optimizer="auto", loss="auto", *, weighted_metrics="auto",
                label_smoothing=0.0, **kwargs):
        """Keras's `compile`; `"auto"` gives the defaults above, and `label_smoothing`
        (ε) the `"auto"` loss's smoothing (`SequenceCrossEntropy`)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(DEFAULT_LEARNING_RATE, clipnorm=5.0)
        if loss == "auto":
            loss = sequence_loss(label_smoothing)
        elif label_smoothing:
            raise ValueError("`label_smoothing` sets the smoothing of the 'auto' loss; with "
                             "your own `loss`, give it there (received label_smoothing="
                             f"{label_smoothing!r} and loss={loss!r}).")
        if weighted_metrics == "auto":
            weighted_metrics = [keras.metrics.SparseCategoricalAccuracy(name="token_accuracy")]
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(x=x, y=y, y_pred=y_pred,
                                    sample_weight=padding_weights(y, sample_weight),
                                    training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return super().compute_metrics(x, y, y_pred, padding_weights(y, sample_weight))

    def fit(self, x=None, y=None, batch_size=None, validation_data=None, shuffle=True,
            **kwargs):
        if _is_text(x):
            x, y, batch_size = self._text_batches(x, y, batch_size, shuffle), None, None
            if validation_data is not None:
                validation_data = self._text_batches(*_pair(validation_data), None, False)
        return super().fit(x, y, batch_size=batch_size, validation_data=validation_data,
                           shuffle=shuffle, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, **kwargs):
        if _is_text(x):
            x, y, batch_size = self._text_batches(x, y, batch_size, False), None, None
        return super().evaluate(x, y, batch_size=batch_size, **kwargs)

    def _text_batches(self, sources, targets, batch_size, shuffle):
        preprocessor = self._require_preprocessor("train or evaluate on text")
        if is_string_dataset(sources):
            if shuffle and preprocessor.subword_dropout:
                raise ValueError(
                    "The preprocessor's `subword_dropout` samples cuts of lists of strings; "
                    "a TensorFlow dataset is cut in its graph, greedily. Give `x` and `y` as "
                    "lists, or a preprocessor with subword_dropout=0; received a dataset with "
                    f"subword_dropout {preprocessor.subword_dropout}.")
            return preprocessor.dataset_batches(sources, targets)
        if targets is None:
            raise ValueError("`y` must be the target texts when `x` is text; received None.")
        if isinstance(targets, str) or len(targets) != len(sources):
            raise ValueError("`x` and `y` must be lists of strings of the same length; "
                             f"received {len(sources)} sources and "
                             f"{1 if isinstance(targets, str) else len(targets)} targets.")
        target_ids = preprocessor.encode_targets(targets)
        if shuffle and self._untrained():
            # As the command line does: without it the RNN stays at the unigram on real
            # text (`initialize_output_bias`).
            counts = np.bincount(np.fromiter((i for ids in target_ids for i in ids), "int64"),
                                 minlength=preprocessor.target_vocabulary_size)
            counts[END_ID] += len(target_ids)
            initialize_output_bias(self, counts)
        source_ids = preprocessor.encode_sources(sources)
        resample = preprocessor.training_samples(sources, targets) if shuffle else None
        if resample is not None:  # subword regularisation: every epoch its own cut
            source_ids, target_ids = resample(0)
        return BucketedBatches(source_ids, target_ids, batch_size or 64,
                               window=50 if shuffle else 1, shuffle=shuffle, resample=resample)

    def _untrained(self):
        optimizer = getattr(self, "optimizer", None)
        return optimizer is None or int(keras.ops.convert_to_numpy(optimizer.iterations)) == 0

    def _require_preprocessor(self, what):
        if getattr(self, "preprocessor", None) is None:
            raise ValueError(
                f"To {what}, the model needs a preprocessor: build it with "
                f"`{type(self).__name__}(preprocessor=TranslatorPreprocessor.from_texts("
                "sources, targets), ...)`; this one has none (it takes ids).")
        return self.preprocessor

    def generate(self, inputs, beam_width=1, max_length=None, length_penalty=0.0,
                 batch_size=256):
        """Translates `inputs`.

        Args:
            inputs: a string or a list of strings (the model needs a preprocessor);
                or int source ids `(B, T)`.
            beam_width: 1 decodes greedily, more with beam search.
            max_length: the most target tokens, `[END]` included (default: the
                preprocessor's `max_target_length − 1`).
            length_penalty: GNMT's α for beam search.
            batch_size: texts decoded together (sorted by length first).

        Returns:
            For text, the translations (a string for a string); for ids,
            `decode_ids`'s dict.
        """
        if not (isinstance(inputs, str) or _is_text(inputs)):
            if max_length is None:
                raise ValueError("`max_length` is needed to decode ids; received None.")
            decoder = generator(self, max_length, beam_width, length_penalty)
            return decoder.predict_on_batch(ops.convert_to_tensor(inputs, "int32"))
        preprocessor = self._require_preprocessor("translate text")
        return translate(self, preprocessor, inputs, beam_width=beam_width,
                         max_length=max_length, length_penalty=length_penalty,
                         batch_size=batch_size)

    def serving_archive(self, beam_width=1, length_penalty=0.0, max_length=None):
        """The served SavedModel as a `keras.export.ExportArchive`: `serving_default(text)`
        → `translation`, `score`, `alignment` (`models.translator.export`)."""
        from keras_attn.models.translator.export import serving_archive

        preprocessor = self._require_preprocessor("export a SavedModel that takes text")
        return serving_archive(self, preprocessor, beam_width=beam_width,
                               length_penalty=length_penalty, max_length=max_length)

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               beam_width=1, length_penalty=0.0, max_length=None, **kwargs):
        """Writes the served SavedModel to `filepath` (TensorFlow backend).

        `serving_default(text)`: `text` strings `[batch]` in; `translation`
        (strings), `score` (`float32`) and `alignment`
        (`float32 [batch, out_len, in_len]`) out. `assets.extra/` holds what
        `keras-attn predict` and `explore` read. Other formats are refused: the
        training graph takes teacher-forced ids and translates nothing.
        """
        check_export_arguments("a translator", "`text` strings", format, input_signature, kwargs)
        from keras_attn.models.translator.export import write_export

        archive = self.serving_archive(beam_width, length_penalty, max_length)
        write_export(self, archive, filepath, beam_width=beam_width,
                     length_penalty=length_penalty)
        if verbose:
            print(f"Saved the translator's serving SavedModel to {filepath}")
        return filepath


def _is_text(x):
    """Whether `x` is text: a list, tuple or array of strings, or a dataset of strings
    (`is_string_dataset`)."""
    if is_string_dataset(x):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "USO" and x.size > 0 and isinstance(x.flat[0], (str, bytes))
    return isinstance(x, (list, tuple)) and len(x) > 0 and isinstance(x[0], str)


def _pair(validation_data):
    if not (isinstance(validation_data, (list, tuple)) and len(validation_data) == 2):
        raise ValueError("`validation_data` must be `(sources, targets)` texts when `x` is "
                         f"text; received {type(validation_data).__name__}.")
    return validation_data


def compile_translator(model, learning_rate=DEFAULT_LEARNING_RATE, jit_compile="auto",
                       label_smoothing=0.0):
    """`model.compile()`'s defaults with this learning rate (a number or a schedule)
    and label smoothing, the optimizer's variables built at once
    (`compile_with_built_optimizer`)."""
    return compile_with_built_optimizer(
        model, optimizer=keras.optimizers.Adam(learning_rate, clipnorm=5.0),
        label_smoothing=label_smoothing, jit_compile=jit_compile)


def initialize_output_bias(model, token_counts):
    """Starts the decoder's output bias at the log-frequency of each target token.

    With a zero bias, the first thing a model learns on real text is the
    unigram distribution, and the easiest way to produce it is to drive the
    hidden state feeding the logits to one constant vector: the translator's
    `tanh` attentional layer saturated there within the first hundred steps
    (|a_t| ≈ 1 everywhere, no gradient), and the model never left the unigram
    (token accuracy 0.12 on Spanish → English). Starting the bias at
    `log p(token)` (add-one smoothed) leaves the hidden state free to carry the
    context. Works for `models.translator` and `models.transformer`.

    Args:
        model: a built translator or Transformer.
        token_counts: `(target_vocab_size,)` counts of each id in the training
            targets (`[END]` included, padding ignored).
    """
    layer = model.get_layer("decoder").output_projection
    counts = np.asarray(token_counts, "float64")
    if counts.shape != tuple(layer.bias.shape):
        raise ValueError(
            f"`token_counts` must have one count per target token, shape "
            f"{tuple(layer.bias.shape)}; received shape {counts.shape}."
        )
    if not np.all(np.isfinite(counts)) or np.any(counts < 0):
        raise ValueError("`token_counts` must be finite and non-negative.")
    counts = counts + 1.0
    layer.bias.assign(np.log(counts / counts.sum()).astype(layer.bias.dtype))
