"""The `translator` task's models: `--model rnn` or `transformer`, sized by the
flags and the data, with the learning-rate schedule and the run's settings."""

import keras

from keras_attn.models.schedules import InverseSquareRootDecay
from keras_attn.models.translator import TransformerTranslator, Translator
from keras_attn.training.tasks.translator.flags import DEFAULT_LEARNING_RATE, TEXT_TRANSFORMER_RATE


def learning_rate(args, steps_per_epoch):
    """`--learning-rate`, with the warm-up and decay of `--schedule`.

    The rate rises linearly over `--warmup-steps` to `--learning-rate`, then
    follows `--schedule`: the inverse square root of the step (Vaswani et al.
    2017, §5.3; `--warmup-steps 0` starts it at the peak), or a cosine that ends
    at zero on the run's last step; `--schedule constant` is `--learning-rate`
    throughout. The RNN on the built-in dates keeps its constant rate (its
    schedule was tuned there; docs/results); on real text both models warm up.
    `args` are the task's resolved options (`TranslatorTask.resolve`).
    """
    peak = args.learning_rate or (
        DEFAULT_LEARNING_RATE if args.model == "rnn" or not args.data else TEXT_TRANSFORMER_RATE
    )
    constant_rnn = args.model == "rnn" and not args.data
    if constant_rnn or args.schedule == "constant":
        return peak
    if args.schedule == "inverse-sqrt":
        return InverseSquareRootDecay(peak, max(args.warmup_steps, 1))
    total = steps_per_epoch * args.epochs
    warmup = min(args.warmup_steps, total - 1)
    return keras.optimizers.schedules.CosineDecay(
        0.0 if warmup else peak,
        decay_steps=total - warmup,
        warmup_target=peak if warmup else None,
        warmup_steps=warmup,
    )


def build_model(args, data):
    """The model of `--model`, sized by the flags and the data."""
    if args.model == "transformer":
        if args.tie_embeddings:
            raise ValueError("--tie-embeddings is an option of --model rnn; received it with "
                             "--model transformer")
        return TransformerTranslator(
            preprocessor=data.preprocessor,
            model_dim=args.model_dim,
            num_heads=args.num_heads,
            num_layers=args.num_layers,
            feedforward_dim=args.feedforward_dim,
            dropout=args.dropout,
            word_dropout=args.word_dropout,
            max_wavelength=args.max_wavelength,
            rope_max_wavelength=args.rope_max_wavelength or None,
        )
    return Translator(
        preprocessor=data.preprocessor,
        attention=args.attention,
        rnn=args.rnn,
        embedding_dim=args.embedding_dim,
        encoder_units=args.encoder_units,
        decoder_units=args.decoder_units,
        attention_units=args.attention_units,
        attention_layer_size=args.decoder_units,
        input_feeding=args.input_feeding,
        dropout=args.dropout,
        word_dropout=args.word_dropout,
        tie_embeddings=args.tie_embeddings,
    )


def run_settings(args, data):
    """`RunMeta.settings`: what decoding, evaluating and exporting need."""
    return {
        "model": args.model,
        "kind": data.kind,
        "max_source_length": data.max_source_length,
        "max_target_length": data.max_target_length,
        "preprocess": data.preprocess,
        "beam_width": args.beam_width,
        "length_penalty": args.length_penalty,
    }
