"""The `keras-attn` command line.

    keras-attn train TASK [flags]              train, evaluate and export a task
    keras-attn evaluate TASK --run-dir DIR     figures of a trained run
    keras-attn export TASK --run-dir DIR       a SavedModel for TF Serving
    keras-attn predict MODEL_DIR [inputs]      run an export of any task [--plot FILE]
    keras-attn translate MODEL_DIR TEXT ...    another name for predict
    keras-attn serving-config                  TF Serving's models.config
    keras-attn explore [SAVED_MODELS_DIR]      a local web page that runs the exports
    keras-attn layers                          the registered layers

It names no task: every task comes from the registry (`keras_attn.training.tasks`)
and brings its own flags. The backend is Keras's: set `KERAS_BACKEND`, or pass
`--backend` (anywhere on the line). Keras reads it once, when `keras_attn` is
imported, so the `keras-attn` script (bin/keras-attn) sets it before that;
`python -m keras_attn.training.cli` starts again in a fresh interpreter when
`--backend` names another backend than the one Keras started on. TensorFlow is
imported only to export and to serve.
"""

import argparse
import copy
import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version

BACKENDS = ("tensorflow", "jax", "torch")
# TensorFlow's C++ start-up lines (CUDA probing, CPU features) on every command;
# a level the user set wins. Set before Keras starts TensorFlow.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


import keras  # noqa: E402  (after TensorFlow's log level)

import keras_attn  # noqa: E402
from keras_attn.training import options, runner, tasks  # noqa: E402
from keras_attn.training.arguments import port  # noqa: E402
from keras_attn.training.errors import UsageError  # noqa: E402
from keras_attn.training.plotting import require_matplotlib  # noqa: E402
from keras_attn.training.task import RunMeta  # noqa: E402


def requested_backend(argv):
    """The backend a `--backend` anywhere in `argv` names (`None` if none, or not a
    backend: the full parser reports that)."""
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend")
    known, _ = backend.parse_known_args(argv)
    return known.backend if known.backend in BACKENDS else None


def use_backend(argv, may_restart):
    """Makes Keras run on the `--backend` of `argv`.

    Keras reads `KERAS_BACKEND` once, when it is imported; for another backend the
    command starts again with it set (`may_restart`: `python -m`), or stops with
    one line (a call from Python, whose Keras is in use).
    """
    backend = requested_backend(argv)
    if backend is None or backend == keras.backend.backend():
        return
    if not may_restart:
        raise UsageError(f"--backend {backend}: Keras already runs on "
                         f"{keras.backend.backend()} in this process; set KERAS_BACKEND="
                         f"{backend} before importing keras_attn")
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", "keras_attn.training.cli", *argv])


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """`--help` with every flag's default, helped or not (argparse's own formatter
    shows it only beside a help text)."""

    def _format_action(self, action):
        if not action.help and self._shows_default(action):
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    @staticmethod
    def _shows_default(action):
        return bool(action.option_strings) and action.default not in (
            None, argparse.SUPPRESS, False)

    def _get_help_string(self, action):
        text = action.help or ""
        if self._shows_default(action) and "%(default)" not in text and "default:" not in text:
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """Shows defaults in `--help`, and on a bad flag prints one usage line (not every
    flag of the command) and the error."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"usage: {self.prog} [flags]  (see {self.prog} --help)\n"
                     f"{self.prog}: error: {message}\n")


def _backend_flag(parser, default=None):
    parser.add_argument("--backend", choices=BACKENDS, default=default,
                        help="sets KERAS_BACKEND (anywhere on the command line)")


def _version():
    try:
        return version("keras-attn")
    except PackageNotFoundError:
        return keras_attn.__version__


def build_parser():
    parser = Parser(prog="keras-attn",
                    description="Attention and external-memory networks for Keras 3.")
    parser.add_argument("--version", action="version", version=f"keras-attn {_version()}")
    _backend_flag(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.add_parser("layers", help="list the registered layers")
    train = commands.add_parser("train", help="train, evaluate and export a task")
    evaluate = commands.add_parser("evaluate", help="evaluate a trained run")
    export = commands.add_parser("export", help="export a trained run as a SavedModel")
    train_tasks, evaluate_tasks, export_tasks = (
        p.add_subparsers(dest="task", metavar="TASK", required=True, parser_class=Parser)
        for p in (train, evaluate, export)
    )
    for name in tasks.names():
        task = tasks.get(name)
        sub = train_tasks.add_parser(name, help=task.summary, description=task.summary)
        task.add_arguments(sub)
        runner.add_shared_arguments(sub, task)
        _backend_flag(sub, argparse.SUPPRESS)
        options.attach(sub, _class_name(name, "TrainOptions"))
        sub = evaluate_tasks.add_parser(name, help=task.summary)
        runner.add_evaluate_arguments(sub, task)
        _backend_flag(sub, argparse.SUPPRESS)
        options.attach(sub, _class_name(name, "EvaluateOptions"))
        sub = export_tasks.add_parser(name, help=task.summary)
        runner.add_export_arguments(sub)
        sub.add_argument("--json", action="store_true",
                         help="print the version folder as JSON (for the training process)")
        _backend_flag(sub, argparse.SUPPRESS)
    for command, help_ in (("predict", "run an export of any task (TensorFlow only)"),
                           ("translate", "another name for predict")):
        sub = commands.add_parser(command, help=help_, add_help=False)
        sub.add_argument("model_dir", nargs="?",
                         help="a version folder, or a model folder (its latest version)")
        sub.add_argument("rest", nargs=argparse.REMAINDER,
                         help="the inputs and flags of the export's task (predict MODEL_DIR "
                         "--help lists them)")
    explore = commands.add_parser(
        "explore", help="a local web page that runs the exports and draws their attention "
        "(pip install 'keras-attn[explore]')")
    explore.add_argument("saved_models", nargs="?", default=runner.EXPORT_ROOT,
                         metavar="SAVED_MODELS_DIR", help="the export root")
    explore.add_argument("--host", default="127.0.0.1",
                         help="the address to listen on (another than 127.0.0.1 opens the "
                         "page to the network)")
    explore.add_argument("--port", type=port, default=8000)
    config = commands.add_parser("serving-config", help="write OUTPUT_DIR/models.config")
    config.add_argument("--output-dir", default=runner.EXPORT_ROOT, help="the export root")
    config.add_argument(
        "--base-path",
        help="the export root as the server sees it, e.g. /models where a container mounts "
        "it (default: its absolute path here)")
    return parser


def _class_name(task_name, suffix):
    return "".join(part[:1].upper() + part[1:] for part in task_name.split("-")) + suffix


def task_options(argv):
    """`train TASK …` or `evaluate TASK …` parsed into the task's frozen options, with
    its defaults that depend on other flags resolved (what `main` passes to the
    runner; benchmarks and tests call it with their own lines)."""
    args = build_parser().parse_args(argv)
    if args.command not in ("train", "evaluate"):
        raise ValueError(f"task_options: argv must start with 'train' or 'evaluate'; "
                         f"received {argv[:1]}")
    return _frozen(args)


def _frozen(args):
    """The parsed `train`/`evaluate` line as the task's options (`train`'s resolved)."""
    frozen = options.freeze(args)
    return tasks.get(args.task).resolve(frozen) if args.command == "train" else frozen


def list_layers(out=None):
    """Prints every registered `keras_attn` layer with its one-line summary."""
    out = out or sys.stdout
    layers = keras_attn.registered_layers()
    width = max(len(name) for name in layers)
    for name, cls in layers.items():
        doc = (cls.__doc__ or "").strip()
        print(f"{name:<{width}}  {doc.splitlines()[0] if doc else ''}", file=out)
    return 0


def resolve_version_dir(model_dir, parser):
    """A SavedModel folder: `model_dir` itself, or its largest numeric version."""
    if not os.path.isdir(model_dir):
        parser.error(f"argument MODEL_DIR: no such folder: {model_dir!r}")
    if os.path.exists(os.path.join(model_dir, "saved_model.pb")):
        return model_dir
    latest = runner.latest_version(model_dir)
    if latest is None:
        parser.error(f"argument MODEL_DIR: {model_dir!r} is not an export: it holds no "
                     "saved_model.pb and no numeric version folder")
    return latest


def export_meta(version_dir, parser):
    """The export's `assets.extra/meta.json`: which task it is, its settings."""
    path = os.path.join(version_dir, "assets.extra", runner.META_FILE)
    if not os.path.exists(path):
        parser.error(f"argument MODEL_DIR: {version_dir!r} has no assets.extra/meta.json; "
                     "is it a keras-attn export?")
    return RunMeta.load(path)


def predict(args, parser, command):
    """`predict MODEL_DIR …`: the export's task parses the rest of the line."""
    prog = f"keras-attn {command} MODEL_DIR"
    if args.model_dir in (None, "-h", "--help"):
        print(f"usage: {prog} [inputs] [flags]\n\nRuns an export of any task; "
              f"`{prog} --help` lists the flags of that export's task.")
        return None
    version_dir = resolve_version_dir(args.model_dir, parser)
    meta = export_meta(version_dir, parser)
    task = tasks.get(meta.task)
    task_parser = Parser(prog=prog, description=f"{task.summary} (a {meta.task} export)")
    task.add_predict_arguments(task_parser)
    task_parser.add_argument("--plot", help="save a figure of the attention here (matplotlib)")
    _backend_flag(task_parser, argparse.SUPPRESS)
    options.attach(task_parser, _class_name(meta.task, "PredictOptions"))
    task_args, unknown = task_parser.parse_known_args(args.rest)
    if unknown:
        flags = [a for action in task_parser._actions for a in action.option_strings
                 if a.startswith("--") and a not in ("--help", "--backend", "--plot")]
        positional = [action.dest for action in task_parser._actions if not action.option_strings]
        raise UsageError(f"predict: a {meta.task} export takes {flags}"
                         + (f" and {positional[0]}" if positional else "")
                         + f"; received {unknown}")
    task_args = options.freeze(task_args)
    if task_args.plot:
        require_matplotlib()
    task.check_predict_arguments(meta, task_args)
    prediction = task.predict(version_dir, meta, task_args)
    if task_args.plot and prediction is not None:
        task.plot(prediction, task_args.plot)
    return prediction


def _check_paths(parser, args):
    """Missing inputs stop here with one line (exit status 2), not a traceback."""
    run_dir = getattr(args, "run_dir", None)
    if run_dir is not None and not os.path.isfile(os.path.join(run_dir, runner.META_FILE)):
        parser.error(f"argument --run-dir: {run_dir!r} holds no meta.json (expected a "
                     "--work-dir of `train`, or an export's assets.extra/)")
    data = getattr(args, "data", None)
    if data is not None and not os.path.exists(data):
        parser.error(f"argument --data: no such file or folder: {data!r}")


def main(argv=None, may_restart=False):
    argv = sys.argv[1:] if argv is None else list(argv)
    use_backend(argv, may_restart)
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_paths(parser, args)
    if args.command == "layers":
        return list_layers()
    if args.command in ("train", "evaluate", "export"):
        task = tasks.get(args.task)
        if args.command == "train":
            runner.train(task, _frozen(args))
        elif args.command == "evaluate":
            runner.evaluate(task, _frozen(args))
        else:
            path = runner.export(args.run_dir, args.output_dir)
            print(json.dumps({"export": path}) if args.json else f"exported to {path}")
        return 0
    if args.command in ("predict", "translate"):
        predict(args, parser, args.command)
        return 0
    if args.command == "explore":
        from keras_attn.training.explore import serve

        if not os.path.isdir(args.saved_models):
            parser.error(f"argument SAVED_MODELS_DIR: no such folder: {args.saved_models!r}")
        serve(args.saved_models, args.host, args.port)
        return 0
    if args.command == "serving-config":
        from keras_attn.training.export import write_serving_config

        path, count = write_serving_config(args.output_dir, args.base_path)
        print(f"wrote {path} ({count} models)")
        return 0
    parser.print_help()
    return 0


def run(may_restart=False):
    """The process's command: `main`, with a refusal (a `UsageError`, or a
    `SystemExit` carrying its message) printed as one line, `keras-attn: error: …`,
    and exit status 2, as the parser's own errors; Ctrl-C outside training stops
    with one line too."""
    try:
        return main(may_restart=may_restart)
    except UsageError as refusal:
        print(f"keras-attn: error: {refusal}", file=sys.stderr)
        return 2
    except SystemExit as stop:
        if isinstance(stop.code, str):
            print(f"keras-attn: error: {stop.code}", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        print("keras-attn: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run(may_restart=True))
