"""The `translator` task: data, training, figures, export and `predict` of
`keras_attn.models.translator` (`--model rnn`, the default) and
`keras_attn.models.translator.transformer` (`--model transformer`).

Default data: the built-in date corpus (`dates`), character level. `--data
PATH.tsv` trains on tab-separated parallel text instead (`parallel`), with
defaults chosen for real sentences (`PROFILES`).
"""

import dataclasses
import os

from keras_attn.models.text import Vocabulary, detokenize
from keras_attn.models.translator import compile_translator, initialize_output_bias
from keras_attn.training.arguments import positive_int
from keras_attn.training.callbacks import TimeBudget
from keras_attn.training.errors import UsageError
from keras_attn.training.task import Task
from keras_attn.training.tasks.translator.data import (
    datasets,
    load_data,
    target_token_counts,
    unknown_rates,
)
from keras_attn.training.tasks.translator.decoding import (
    TranslationProgress,
    evaluate_run,
    text_figures,
    translate_texts,
)
from keras_attn.training.tasks.translator.flags import (
    MODEL_NAMES,
    add_arguments,
    profile_line,
    profile_of,
    resolve_defaults,
)
from keras_attn.training.tasks.translator.modeling import build_model, learning_rate, run_settings
from keras_attn.training.tasks.translator.parallel import load_parallel_tsv


class TranslatorTask(Task):
    name = "translator"
    summary = "seq2seq translator with Bahdanau/Luong attention (default: dates → ISO)"
    batch_size = 64
    assets = ("source_vocab.json", "target_vocab.json", "test.tsv")

    def add_arguments(self, parser):
        add_arguments(parser)

    def add_evaluate_arguments(self, parser):
        parser.add_argument("--data", help="a TSV to evaluate on instead of the run's test split")
        parser.add_argument("--beam-width", type=positive_int, default=4)

    def jit_default(self, backend):
        # On TF/CPU the decoder's while loop runs faster without XLA
        # (benchmarks/translator.py); JAX compiles every step anyway.
        return backend == "jax"

    def data_source(self, args):
        if not args.data:
            return {"source": "built-in", "train_size": args.train_size,
                    "test_size": args.test_size}
        if os.path.isdir(args.data):
            raise UsageError(f"--data: {args.data!r} is a folder; expected a TSV file")
        return {"source": "file", "path": os.path.abspath(args.data), "reverse": args.reverse}

    def resolve(self, options):
        return resolve_defaults(options)

    def base_name(self, args):
        return MODEL_NAMES[args.model]

    def prepare(self, args):
        kind = profile_of(args)
        print(profile_line(args))
        data = load_data(args)
        splits = data.splits
        print(
            f"data: {data.kind}, {len(splits['train'])} train / {len(splits['validation'])} "
            f"validation / {len(splits['test'])} test pairs; vocabularies "
            f"{len(data.source_vocab)} → {len(data.target_vocab)} "
            f"{data.preprocess['level']}s; lengths {data.max_source_length} → "
            f"{data.max_target_length}"
        )
        if kind != "dates":
            unknown_source, unknown_target = unknown_rates(data, splits["validation"])
            print(f"  [UNK] in validation: {100 * unknown_source:.2f} % of source and "
                  f"{100 * unknown_target:.2f} % of target tokens")
            if unknown_source > 0.5:
                print("  (the splits share no source sentence, so a validation sentence's "
                      "words are known only if other training sentences use them; a corpus "
                      "this small, or of single words, shares few)")
        return dataclasses.replace(
            data, batches=datasets(data, args.batch_size, args.seed, args.sort_window))

    def build_model(self, args, data, jit_compile):
        try:
            model = build_model(args, data)
        except ValueError as error:  # sizes that do not fit together: one line, no traceback
            raise UsageError(f"translator: {error}") from None
        initialize_output_bias(model, target_token_counts(data))
        train_batches, _ = data.batches
        return compile_translator(
            model, learning_rate=learning_rate(args, len(train_batches)),
            jit_compile=jit_compile, label_smoothing=args.label_smoothing,
        )

    def callbacks(self, model, data, args):
        callbacks = [TranslationProgress(data, run_settings(args, data),
                                         patience=args.patience or None)]
        if args.max_minutes:
            callbacks.append(TimeBudget(args.max_minutes * 60))
        return callbacks

    def fit_arguments(self, model, data, args):
        train, validation = data.batches
        print(f"training: {len(train)} batches an epoch "
              f"({100 * train.padding_fraction():.0f} % padding), at most {args.epochs} "
              "epochs" + (f" or {args.max_minutes:g} minutes" if args.max_minutes else "")
              + (f", or {args.patience} without a better validation figure" if args.patience
                 else ""))
        return {"x": train, "validation_data": validation, "epochs": args.epochs}

    def settings(self, args, data, model):
        return run_settings(args, data)

    def save_assets(self, run_dir, data, meta):
        data.source_vocab.save(os.path.join(run_dir, "source_vocab.json"))
        data.target_vocab.save(os.path.join(run_dir, "target_vocab.json"))
        with open(os.path.join(run_dir, "test.tsv"), "w", encoding="utf-8") as f:
            for source, target in data.splits["test"]:
                f.write(f"{source}\t{target}\n")

    def load_assets(self, run_dir, meta):
        return {
            "source_vocab": Vocabulary.load(os.path.join(run_dir, "source_vocab.json")),
            "target_vocab": Vocabulary.load(os.path.join(run_dir, "target_vocab.json")),
            "test": os.path.join(run_dir, "test.tsv"),
        }

    def evaluate(self, model, meta, assets, args=None, data=None):
        settings = meta.settings
        beam_width = args.beam_width if args is not None else settings["beam_width"]
        if data is not None:
            pairs, title = data.splits["test"], "held-out test:"
        else:
            path = args.data or assets["test"]
            # The run's own test split is a TSV too; preprocess either as in training.
            preprocess = settings["preprocess"]
            pairs, report = load_parallel_tsv(
                path, lowercase=preprocess["lowercase"],
                space_punctuation=preprocess["space_punctuation"],
            )
            print(f"{path}: {report.summary()}")
            title = f"{args.run_dir} on {path}:"
        results = evaluate_run(model, assets["source_vocab"], assets["target_vocab"], settings,
                               pairs, beam_widths=sorted({1, beam_width}))
        print(title)
        for name, figures in results.items():
            line = (f"  {name:<7} exact match {100 * figures['exact_match']:.2f} % "
                    f"(n={figures['n']})")
            if "bleu" in figures:
                line += ", " + text_figures(figures)
            print(line)
        return results

    def explore_form(self, meta, extra_dir):
        from keras_attn.training.tasks.translator.explore import held_out_sources

        sources = held_out_sources(extra_dir)
        return [{"name": "text", "label": "Text to translate", "kind": "text",
                 "default": sources[0] if sources else "3 March 1998"}]

    def explore_example(self, meta, extra_dir, seed):
        from keras_attn.training.tasks.translator.explore import held_out_sources

        sources = held_out_sources(extra_dir)
        return {"text": sources[seed % len(sources)]} if sources else {}

    def explore(self, version_dir, meta, inputs):
        from keras_attn.training.tasks.translator.explore import explore

        return explore(version_dir, meta, inputs)

    def show_samples(self, model, meta, assets, data):
        sample = data.splits["test"][:5]
        translations = translate_texts(model, assets["source_vocab"], assets["target_vocab"],
                                       meta.settings, [s for s, _ in sample],
                                       meta.settings["beam_width"])
        print("sample translations (held-out):")
        for (source, target), translation in zip(sample, translations, strict=True):
            target = detokenize(target, meta.settings["preprocess"])
            mark = "✓" if translation == target else "✗"
            print(f"  {source!r} → {translation!r} {mark}")

    def export_archive(self, model, meta, assets):
        from keras_attn.training.tasks.translator.export import archive

        return archive(model, assets["source_vocab"], assets["target_vocab"], meta.settings)

    def add_predict_arguments(self, parser):
        parser.add_argument("inputs", nargs="*", help="the texts to translate")

    def check_predict_arguments(self, meta, args):
        if not args.inputs:
            raise UsageError("predict: a translator export needs the texts to translate")

    def predict(self, version_dir, meta, args):
        from keras_attn.training.tasks.translator.predict import translate

        return translate(version_dir, meta, args.inputs)

    def plot(self, prediction, path):
        from keras_attn.training.tasks.translator.predict import plot_alignment

        plot_alignment(*prediction, path)
