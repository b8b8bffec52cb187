"""The `keras-attn` command line.

    keras-attn train TASK [flags]      train, evaluate and export a registered task
    keras-attn evaluate TASK --run-dir DIR
    keras-attn export TASK --run-dir DIR [--output-dir saved_models]
    keras-attn predict MODEL_DIR [inputs] [--plot FILE]   run an export (any task)
    keras-attn translate MODEL_DIR "text" ... [--plot alignment.png]
    keras-attn serving-config [--output-dir saved_models]
    keras-attn layers

The backend is Keras's: set `KERAS_BACKEND` (or pass `--backend`, which sets it
before Keras is imported). TensorFlow is imported only to export and to serve.
"""

import argparse
import os
import sys

import numpy as np

from training.arguments import non_negative_int, positive_int

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


def _backend_after_task(parser):
    """`--backend` after the task too (`keras-attn train ntm-copy --backend jax`), where
    users put it; SUPPRESS keeps a `--backend` given before the command."""
    parser.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                        help="sets KERAS_BACKEND (as before the command)")


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
        sub = train_tasks.add_parser(name, help=task.summary)
        _backend_after_task(sub)
        task.add_arguments(sub)
        sub = evaluate_tasks.add_parser(name, help=task.summary)
        _backend_after_task(sub)
        sub.add_argument(
            "--run-dir", required=True, help="a --work-dir of `train`, or an export's assets.extra/"
        )
        sub.add_argument("--data", help="a TSV to evaluate on instead of the run's test split")
        sub.add_argument("--beam-width", type=positive_int, default=4)
        sub = export_tasks.add_parser(name, help=task.summary)
        sub.add_argument("--run-dir", required=True)
        sub.add_argument("--output-dir", default="saved_models")

    translate = commands.add_parser(
        "translate", help="translate with an exported SavedModel (TensorFlow only)"
    )
    translate.add_argument("model_dir", help="a version folder, or a model folder (latest version)")
    translate.add_argument("texts", nargs="+")
    translate.add_argument("--plot", help="save the attention heatmap of the first text here")

    predict = commands.add_parser(
        "predict", help="run an exported SavedModel of any task (TensorFlow only)"
    )
    predict.add_argument("model_dir", help="a version folder, or a model folder (latest version)")
    predict.add_argument("inputs", nargs="*", help="translator: the texts to translate")
    predict.add_argument("--story", nargs="+", help="memn2n: the story's sentences, oldest first")
    predict.add_argument("--story-file", help="memn2n: a file of the story's sentences, one a line")
    predict.add_argument("--question", help="memn2n: the question")
    predict.add_argument("--length", type=positive_int,
                         help="ntm-/dnc-copy, ntm-/dnc-repeat-copy: sequence length")
    predict.add_argument("--repeats", type=positive_int,
                         help="ntm-/dnc-repeat-copy: the number of copies")
    predict.add_argument("--items", type=positive_int,
                         help="ntm-associative-recall: the number of items")
    predict.add_argument("--seed", type=non_negative_int, default=0,
                         help="ntm-*, dnc-*, pointer-*: the generated example's seed")
    predict.add_argument(
        "--sequence-file",
        help="ntm-*, dnc-*: run this sequence instead (.npy, or text: a step a line) and print "
             "the output",
    )
    predict.add_argument("--points", help="pointer-*: one point set, e.g. '0.1 0.2; 0.5 0.9; …'")
    predict.add_argument(
        "--points-file", help="pointer-*: a point set (.npy, or text: a point a line)")
    predict.add_argument("--n", type=positive_int,
                         help="pointer-*: a generated point set of N points")
    predict.add_argument("--plot", help="save a figure of the attention here (needs matplotlib)")

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


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install 'keras-attn[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def export_meta(version_dir):
    """The export's `assets.extra/meta.json` (which task it is, its settings)."""
    import json

    path = os.path.join(version_dir, "assets.extra", "meta.json")
    if not os.path.exists(path):
        raise SystemExit(f"{version_dir}: no assets.extra/meta.json; is it a keras-attn export?")
    with open(path) as f:
        return json.load(f)


def predict(args):
    path = resolve_version_dir(args.model_dir)
    task = export_meta(path).get("task", "translator")
    if task == "translator":
        if not args.inputs:
            raise SystemExit("predict: a translator export needs the texts to translate")
        return translate(path, args.inputs, args.plot)
    if task == "memn2n":
        return answer_question(path, args)
    if task.startswith(("ntm-", "dnc-")):
        return run_bit_sequence(path, args)
    if task.startswith("pointer-"):
        return point_to(path, args)
    raise SystemExit(f"predict: no predictor for task {task!r}")


def answer_question(version_dir, args):
    """Answers one bAbI-style question with the export's `serving_default`."""
    import tensorflow as tf

    if not args.question or not args.question.strip():
        raise SystemExit("predict: a memn2n export needs --question")
    if args.story and args.story_file:
        raise SystemExit("predict: give --story or --story-file, not both")
    sentences = list(args.story or [])
    if args.story_file:
        with open(args.story_file, encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
    sentences = [s.strip() for s in sentences if s.strip()]
    meta = export_meta(version_dir)
    memory = int(meta["memory_size"])
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(story=tf.constant(["\n".join(sentences)]), question=tf.constant([args.question]))
    answer = out["answer"].numpy()[0].decode("utf-8")
    attention = out["hop_attention"].numpy()[0]  # (hops, memory), most recent first
    print(f"{args.question} → {answer} (probability {out['probability'].numpy()[0]:.3f})")
    if len(sentences) > memory:
        print(f"  the story has {len(sentences)} sentences; the memory keeps the {memory} "
              "most recent")
    kept = sentences[::-1][:memory]
    hops = attention.shape[0]
    print("  attention per hop (most recent sentence first):")
    print("  " + " ".join(f"hop {k + 1:<3}" for k in range(hops)) + "  sentence")
    for slot, sentence in enumerate(kept):
        print("  " + " ".join(f"{attention[k, slot]:7.3f}" for k in range(hops)) + f"  {sentence}")
    if args.plot and not kept:
        print("no figure: the story has no sentence to attend to")
    elif args.plot:
        plot_hop_attention(kept[::-1], attention[:, : len(kept)][:, ::-1], args.question, answer,
                           args.plot)
        print(f"attention saved to {args.plot}")
    return answer


def _bit_rows(bits):
    """`(T, C)` 0/1 → a line per channel, `█` for 1 and `·` for 0."""
    return ["".join("█" if b else "·" for b in channel) for channel in np.asarray(bits).T]


def run_bit_sequence(version_dir, args):
    """Runs an NTM or DNC export on a generated example (or `--sequence-file`) and prints
    the output bits and, for an example, the bit errors."""
    import tensorflow as tf

    from training.tasks import ntm

    meta = export_meta(version_dir)
    task = ntm.TASKS[meta["task"]]
    given = {"length": args.length, "repeats": args.repeats, "items": args.items}
    extra = [f"--{k}" for k, v in given.items() if v is not None and k not in task.example]
    if extra:
        raise SystemExit(f"predict: {task.name} takes {[f'--{k}' for k in task.example]}; "
                         f"received {extra}")
    try:
        if args.sequence_file:
            sequence, target = ntm.read_sequence(args.sequence_file, meta["input_bits"]), None
            label = args.sequence_file
        else:
            (sequence, target), params = ntm.example(
                task, args.seed, **{k: given[k] for k in task.example}
            )
            label = ", ".join(f"{k} {v}" for k, v in params.items()) or "the task's layout"
    except ValueError as error:
        raise SystemExit(f"predict: {error}") from None
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = {k: v.numpy() for k, v in serve(sequence=tf.constant(sequence)).items()}
    probabilities = out["output"][0]
    print(f"{task.name} ({label}): {sequence.shape[1]} steps")
    if target is None:
        print("output bits (a line per channel):")
        for row in _bit_rows(probabilities > 0.5):
            print("  " + row)
        return probabilities
    counted = target[0, :, -1] > 0
    expected, got = target[0, counted, :-1], probabilities[counted] > 0.5
    errors = int(np.sum(expected != got))
    print(f"bit errors: {errors} of {expected.size} output bits")
    for name, bits in (("target", expected), ("output", got)):
        print(f"{name}:")
        for row in _bit_rows(bits):
            print("  " + row)
    if args.plot:
        plot_ntm(sequence[0], target[0, :, :-1], probabilities, out["write_weightings"][0],
                 out["read_weightings"][0], f"{task.name}: {label}, {errors} bit errors",
                 args.plot)
        print(f"figure saved to {args.plot}")
    return errors


def point_to(version_dir, args):
    """Runs a pointer-network export on one point set (`--points`, `--points-file`,
    or generated with `--n` and `--seed`) and prints the indices, with the answer's
    figure (sorted or not, hull area, tour length)."""
    import tensorflow as tf

    from training.data import points as geometry
    from training.tasks import pointer

    meta = export_meta(version_dir)
    task = pointer.TASKS[meta["task"]]
    dim, supported = int(meta["point_dim"]), int(meta["max_points"])
    given = [name for name in ("points", "points_file", "n") if getattr(args, name) is not None]
    if len(given) > 1:
        raise SystemExit(f"predict: give one of --points, --points-file, --n; received "
                         f"{['--' + g.replace('_', '-') for g in given]}")
    try:
        if args.points is not None:
            points = pointer.parse_points(args.points, dim, supported)
        elif args.points_file:
            points = pointer.read_points(args.points_file, dim, supported)
        else:
            n = args.n if args.n is not None else task.sizes[1]
            if not 1 <= n <= supported:
                raise ValueError(f"--n must be 1 … {supported} (the model's limit); received {n}.")
            points = pointer.instances(task, np.random.default_rng(args.seed), 1, n)[0][0]
    except ValueError as error:
        raise SystemExit(f"predict: {error}") from None
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = serve(points=tf.constant(points[None]), lengths=tf.constant([len(points)], tf.int32))
    indices = out["indices"].numpy()[0]
    indices = indices[indices >= 0]
    print(f"{task.name}: {len(points)} points → indices {' '.join(map(str, indices))} "
          f"(log-probability {out['log_prob'].numpy()[0]:.4f})")
    if task.name == "pointer-sort":
        values = points[:, 0]
        print("  values in that order: " + " ".join(f"{v:.4g}" for v in values[indices]))
        print("  sorted: " + ("yes" if geometry.is_sorted_output(values, indices) else "no"))
    elif task.name == "pointer-hull":
        area = abs(geometry.polygon_signed_area(points, indices)) if len(indices) > 2 else 0.0
        simple = geometry.is_simple_polygon(points, indices)
        print(f"  polygon area {area:.4f}" + ("" if simple else " (not a simple polygon)"))
    else:
        print(f"  tour length {geometry.tour_length(points, indices):.4f}")
    if args.plot:
        plot_points(points, indices, task.name, args.plot)
        print(f"figure saved to {args.plot}")
    return indices


def plot_points(points, indices, task_name, path):
    """The points and the predicted answer: the hull or tour as a closed polygon;
    for sorting, the values with their output rank."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    if task_name == "pointer-sort":
        values = points[:, 0]
        ax.bar(np.arange(len(values)), values, color="0.8")
        for rank, index in enumerate(indices):
            ax.annotate(str(rank + 1), (index, values[index]), ha="center", va="bottom")
        ax.set_xlabel("input position (bar label: output rank)")
        ax.set_ylabel("value")
    else:
        ax.scatter(points[:, 0], points[:, 1], s=14, color="0.3", zorder=3)
        if len(indices):
            cycle = points[np.append(indices, indices[0])]
            ax.plot(cycle[:, 0], cycle[:, 1], "-", color="tab:red", lw=1.5)
            ax.scatter(*points[indices[0]], s=60, facecolors="none", edgecolors="tab:red",
                       zorder=4, label="first output")
            ax.legend(loc="upper right", fontsize=8)
        for i, (x, y) in enumerate(points):
            ax.annotate(str(i), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_aspect("equal")
    ax.set_title(f"{task_name}: {len(points)} points", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_ntm(inputs, target, output, writes, reads, title, path):
    """As Graves et al. Fig. 6: inputs, targets and outputs (channels down), then the
    first write and read head's weightings (memory rows down), time across."""
    plt = _pyplot()
    panels = [("inputs", inputs), ("targets", target), ("outputs", output),
              ("write weightings", writes[:, 0]), ("read weightings", reads[:, 0])]
    heights = [1, 1, 1, 2, 2]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(6, 0.12 * len(inputs) + 2), 9),
                             sharex=True, gridspec_kw={"height_ratios": heights})
    for ax, (name, image) in zip(axes, panels, strict=True):
        ax.imshow(np.asarray(image).T, cmap="gray_r", aspect="auto", interpolation="nearest",
                  vmin=0.0, vmax=1.0)
        ax.set_ylabel(name, fontsize=8)
        ax.set_yticks([])
    axes[-1].set_xlabel("time step")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_hop_attention(sentences, attention, question, answer, path):
    """Heatmap: story sentences (oldest first) down, hops across."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(2.5 + 0.8 * attention.shape[0],
                                    max(2.5, 0.35 * len(sentences) + 1.2)))
    image = ax.imshow(attention.T, cmap="viridis", aspect="auto", vmin=0.0)
    ax.set_xticks(range(attention.shape[0]), [f"hop {k + 1}" for k in range(attention.shape[0])])
    ax.set_yticks(range(len(sentences)), sentences, fontsize=8)
    ax.set_title(f"{question} → {answer}", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_alignment(source, translation, alignment, path):
    """Heatmap: source tokens across, output tokens (and [END]) down."""
    plt = _pyplot()

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


def _check_paths(parser, args):
    """Missing inputs stop here with one line (exit status 2), not a traceback."""
    run_dir = getattr(args, "run_dir", None)
    if run_dir is not None and not os.path.isfile(os.path.join(run_dir, "meta.json")):
        parser.error(f"argument --run-dir: {run_dir!r} holds no meta.json (expected a "
                     "--work-dir of `train`, or an export's assets.extra/)")
    data = getattr(args, "data", None)
    if data is not None and not os.path.exists(data):
        parser.error(f"argument --data: no such file or folder: {data!r}")


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_paths(parser, args)
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
    if args.command == "predict":
        predict(args)
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
