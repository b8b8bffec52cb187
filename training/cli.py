"""The `keras-attn` command line.

    keras-attn train TASK [flags]      train, evaluate and export a registered task
    keras-attn evaluate TASK --run-dir DIR
    keras-attn export TASK --run-dir DIR [--output-dir saved_models]
    keras-attn translate MODEL_DIR "text" ... [--plot alignment.png]
    keras-attn serving-config [--output-dir saved_models]
    keras-attn layers

The backend is Keras's: set `KERAS_BACKEND` (or pass `--backend`, which sets it
before Keras is imported). TensorFlow is imported only to export and to serve.
"""

import argparse
import os
import sys

BACKENDS = ("tensorflow", "jax", "torch")


def _first_line(obj):
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def list_layers(out=None):
    """Prints every registered `keras_attn` layer with its one-line summary."""
    import keras_attn

    out = out or sys.stdout
    layers = keras_attn.registered_layers()
    width = max(len(name) for name in layers)
    for name, cls in layers.items():
        print(f"{name:<{width}}  {_first_line(cls)}", file=out)
    return 0


def _version():
    # Read without importing keras_attn (which imports Keras and picks a backend).
    import re

    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "keras_attn", "__init__.py"
    )
    try:
        with open(path) as f:
            return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)
    except OSError:
        from importlib.metadata import version

        return version("keras-attn")


def build_parser():
    from training import tasks

    parser = argparse.ArgumentParser(
        prog="keras-attn", description="Attention and external-memory networks for Keras 3."
    )
    parser.add_argument("--version", action="version", version=f"keras-attn {_version()}")
    parser.add_argument("--backend", choices=BACKENDS, help="sets KERAS_BACKEND")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("layers", help="list the registered layers")

    train = commands.add_parser("train", help="train, evaluate and export a task")
    train_tasks = train.add_subparsers(dest="task", metavar="TASK", required=True)
    evaluate = commands.add_parser("evaluate", help="evaluate a trained run")
    evaluate_tasks = evaluate.add_subparsers(dest="task", metavar="TASK", required=True)
    export = commands.add_parser("export", help="export a trained run as a SavedModel")
    export_tasks = export.add_subparsers(dest="task", metavar="TASK", required=True)
    for name in tasks.names():
        task = tasks.get(name)
        task.add_arguments(train_tasks.add_parser(name, help=task.summary))
        sub = evaluate_tasks.add_parser(name, help=task.summary)
        sub.add_argument(
            "--run-dir", required=True, help="a --work-dir of `train`, or an export's assets.extra/"
        )
        sub.add_argument("--data", help="a TSV to evaluate on instead of the run's test split")
        sub.add_argument("--beam-width", type=int, default=4)
        sub = export_tasks.add_parser(name, help=task.summary)
        sub.add_argument("--run-dir", required=True)
        sub.add_argument("--output-dir", default="saved_models")

    translate = commands.add_parser(
        "translate", help="translate with an exported SavedModel (TensorFlow only)"
    )
    translate.add_argument("model_dir", help="a version folder, or a model folder (latest version)")
    translate.add_argument("texts", nargs="+")
    translate.add_argument("--plot", help="save the attention heatmap of the first text here")

    config = commands.add_parser("serving-config", help="write saved_models/models.config")
    config.add_argument("--output-dir", default="saved_models")
    return parser


def resolve_version_dir(model_dir):
    """A SavedModel folder: `model_dir` itself, or its largest numeric version."""
    if os.path.exists(os.path.join(model_dir, "saved_model.pb")):
        return model_dir
    versions = (
        [int(v) for v in os.listdir(model_dir) if v.isdigit()] if os.path.isdir(model_dir) else []
    )
    if not versions:
        raise SystemExit(f"{model_dir}: no saved_model.pb and no numeric version folder")
    return os.path.join(model_dir, str(max(versions)))


def translate(model_dir, texts, plot=None):
    """Runs the export's `serving_default` with TensorFlow alone."""
    import tensorflow as tf

    path = resolve_version_dir(model_dir)
    serve = tf.saved_model.load(path).signatures["serving_default"]
    out = serve(text=tf.constant(texts))
    translations = [t.decode("utf-8") for t in out["translation"].numpy()]
    for text, translation, score in zip(texts, translations, out["score"].numpy(), strict=True):
        print(f"{text}\t{translation}\t{score:.4f}")
    if plot:
        plot_alignment(texts[0], translations[0], out["alignment"].numpy()[0], plot)
        print(f"alignment of {texts[0]!r} saved to {plot}")
    return translations


def plot_alignment(source, translation, alignment, path):
    """Heatmap: source tokens across, output tokens (and [END]) down."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'keras-attn[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source_tokens = list(source)
    output_tokens = list(translation) + ["[END]"]
    weights = alignment[: len(output_tokens), : len(source_tokens)]
    fig, ax = plt.subplots(
        figsize=(max(4, 0.35 * len(source_tokens)), max(3, 0.35 * len(output_tokens)))
    )
    ax.imshow(weights, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(source_tokens)), source_tokens, fontsize=8)
    ax.set_yticks(range(len(output_tokens)), output_tokens, fontsize=8)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    if args.command == "layers":
        return list_layers()
    if args.command in ("train", "evaluate", "export"):
        from training import tasks

        task = tasks.get(args.task)
        if args.command == "train":
            task.train(args)
        elif args.command == "evaluate":
            task.evaluate(args)
        else:
            print(f"exported to {task.export(args.run_dir, args.output_dir)}")
        return 0
    if args.command == "translate":
        translate(args.model_dir, args.texts, args.plot)
        return 0
    if args.command == "serving-config":
        from training.export import write_serving_config

        path, count = write_serving_config(args.output_dir)
        print(f"wrote {path} ({count} models)")
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
