"""The pointer-network tasks: `pointer-sort`, `pointer-hull` and `pointer-tsp`.

Each trains `keras_attn.models.pointer_net` by teacher forcing with `model.fit` on a
training set generated from the seed (`points`), point sets of mixed sizes
padded to the largest, and reports its figures on fresh test sets of one size
each (10,000 instances by default, seeded apart from training).
"""

import dataclasses
import time
from typing import Callable

import keras
import numpy as np

from keras_attn.choices import POINTER_ENCODERS
from keras_attn.models.pointer_net import (
    PointerNet,
    compile_pointer_net,
    decode,
    teacher_forcing,
)
from keras_attn.training.arguments import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from keras_attn.training.errors import UsageError
from keras_attn.training.task import Task
from keras_attn.training.tasks.pointer import points as geometry

VALIDATION_INSTANCES = 2000


@dataclasses.dataclass(frozen=True)
class PointTask:
    """One pointer task.

    Attributes:
        name, summary: the registry name and its `--help` line.
        point_dim: features per point.
        sizes: the default training sizes `(min N, max N)`.
        test_sizes: the `N` of each test figure.
        answers: `fn(points (count, n, D)) → (count, n)` indices, `-1` after the
            answer (a test instance's ground truth).
        score: `fn(points, truths, predictions) → dict` for one test size.
        model: `PointerNet` arguments of the task (`min_outputs`, `start_index`).
        instances, epochs: the default training set and passes over it.
        beam_widths: the test figures' decoders (1: greedy).
    """

    name: str
    summary: str
    point_dim: int
    sizes: tuple
    test_sizes: tuple
    answers: Callable
    score: Callable
    model: dict
    instances: int
    epochs: int
    beam_widths: tuple = (1,)


def _padded(rows, width):
    out = np.full((len(rows), width), -1, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


def sort_answers(points):
    return geometry.sort_order(points)


def hull_answers(points):
    return _padded(geometry.hull_orders(points), points.shape[1])


def tsp_answers(points):
    return geometry.held_karp(points)[0]


def sort_score(points, truths, predictions):
    rows = [geometry.answer(row) for row in predictions]
    values = points[..., 0]
    return {
        "accuracy": float(np.mean([geometry.is_sorted_output(v, r)
                                   for v, r in zip(values, rows, strict=True)])),
        "valid": float(np.mean([geometry.is_permutation(r, len(v))
                                for v, r in zip(values, rows, strict=True)])),
        "n": len(rows),
    }


def hull_score(points, truths, predictions):
    rows = [geometry.answer(row) for row in predictions]
    truths = [t[t >= 0] for t in truths]
    figures = geometry.hull_figures(points, truths, rows)
    figures["valid"] = float(np.mean([len(set(r.tolist())) == len(r) and len(r) > 0
                                      for r in rows]))
    return figures


def tsp_score(points, truths, predictions):
    rows = [geometry.answer(row) for row in predictions]
    n = points.shape[1]
    lengths = np.array([geometry.tour_length(p, r) for p, r in zip(points, rows, strict=True)])
    optimal = np.array([geometry.tour_length(p, t) for p, t in zip(points, truths, strict=True)])
    nearest = geometry.nearest_neighbour_tours(points)
    return {
        "nearest_neighbour_mean_length": float(np.mean(
            [geometry.tour_length(p, t) for p, t in zip(points, nearest, strict=True)])),
        "mean_length": float(np.mean(lengths)),
        "optimal_mean_length": float(np.mean(optimal)),
        "ratio_to_optimal": float(np.mean(lengths) / np.mean(optimal)),
        "optimal_found": float(np.mean(lengths <= optimal + 1e-5)),
        "valid": float(np.mean([geometry.is_permutation(r, n) and r[0] == 0 for r in rows])),
        "n": len(rows),
    }


SPECS = {
    "pointer-sort": PointTask(
        name="pointer-sort",
        summary="pointer network: sort N ∈ [5, 10] uniform floats (indices in increasing order)",
        point_dim=1, sizes=(5, 10), test_sizes=(5, 10, 15), answers=sort_answers,
        score=sort_score, model={}, instances=200_000, epochs=2,
    ),
    "pointer-hull": PointTask(
        name="pointer-hull",
        summary="pointer network: planar convex hull of N ∈ [5, 20] points, counter-clockwise",
        point_dim=2, sizes=(5, 20), test_sizes=(5, 10, 20, 50), answers=hull_answers,
        score=hull_score, model={"min_outputs": 3}, instances=200_000, epochs=3,
    ),
    "pointer-tsp": PointTask(
        name="pointer-tsp",
        summary="pointer network: Euclidean TSP, N ∈ [5, 10], optimal (Held–Karp) tours",
        point_dim=2, sizes=(5, 10), test_sizes=(5, 10), answers=tsp_answers,
        score=tsp_score, model={"start_index": 0}, instances=400_000, epochs=2,
        beam_widths=(1, 32),
    ),
}


def add_arguments(parser, task):
    data = parser.add_argument_group("data")
    data.add_argument("--min-points", type=positive_int,
                      default=task.sizes[0], help="smallest training N")
    data.add_argument("--max-points", type=positive_int,
                      default=task.sizes[1], help="largest training N")
    data.add_argument("--train-instances", type=positive_int, default=task.instances)
    data.add_argument("--validation-instances", type=positive_int, default=VALIDATION_INSTANCES,
                      help="mixed-size instances for each epoch's validation loss")
    data.add_argument("--test-instances", type=positive_int, default=10_000, help="per test size")
    data.add_argument("--test-sizes", default=",".join(map(str, task.test_sizes)),
                      help="the N of each test figure, comma-separated")
    model = parser.add_argument_group("model")
    model.add_argument("--encoder", choices=POINTER_ENCODERS, default="set",
                       help="set: self-attention, order-invariant; lstm: Vinyals et al. 2015")
    model.add_argument("--units", type=positive_int, default=128)
    model.add_argument("--encoder-layers", type=positive_int, default=3)
    model.add_argument("--heads", type=positive_int, default=8)
    model.add_argument("--glimpses", type=non_negative_int, default=1)
    model.add_argument("--logit-clip", type=non_negative_float, default=10.0, help="0: no clipping")
    model.add_argument("--supported-points", type=positive_int, default=100,
                       help="the longest point set the model (and its export) accepts")
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=positive_int, default=task.epochs)
    fit.add_argument("--learning-rate", type=positive_float, default=1e-3,
                     help="Adam: warmed up linearly, then cosine-decayed to 1/20")
    fit.add_argument("--warmup-steps", type=non_negative_int, default=500)
    fit.add_argument("--clipnorm", type=positive_float, default=1.0)
    fit.add_argument("--beam-width", type=positive_int, default=max(task.beam_widths),
                     help="the export's decoder (1: greedy)")
# -- data ----------------------------------------------------------------------------------
def instances(task, rng, count, n):
    """`count` point sets of exactly `n` points with their answers `(count, n)`."""
    points = geometry.uniform_points(rng, count, n, task.point_dim)
    return points, task.answers(points)


def training_set(task, seed, count, min_points, max_points, stream=0):
    """Mixed sizes `min_points … max_points`, equally many of each, padded to
    `max_points` and shuffled: `(points, lengths, answers)`."""
    rng = np.random.default_rng((seed, stream))
    sizes = np.arange(min_points, max_points + 1)
    per_size = np.full(len(sizes), count // len(sizes))
    per_size[: count % len(sizes)] += 1
    points = np.zeros((count, max_points, task.point_dim), dtype=np.float32)
    answers = np.full((count, max_points), -1, dtype=np.int64)
    lengths = np.repeat(sizes, per_size).astype(np.int32)
    start = 0
    for n, k in zip(sizes, per_size, strict=True):
        p, a = instances(task, rng, int(k), int(n))
        points[start : start + k, :n], answers[start : start + k, :n] = p, a
        start += k
    order = rng.permutation(count)
    return points[order], lengths[order], answers[order]


@dataclasses.dataclass(frozen=True)
class PointSets:
    """A pointer run's prepared data: `(inputs, targets, weights)` of `model_inputs`
    for training and validation, and the seconds it took to make them."""

    train: tuple
    validation: tuple
    seconds: float


def model_inputs(task, points, lengths, answers):
    start = task.model.get("start_index")
    # A start point is given, not predicted: it is not a target.
    tokens, targets, weights = teacher_forcing(answers if start is None else answers[:, 1:],
                                               start)
    return {"points": points, "lengths": lengths, "decoder_tokens": tokens}, targets, weights


def test_sets(task, seed, count, sizes):
    """`{n: (points, answers)}`, fresh instances of each size (seeded apart)."""
    return {n: instances(task, np.random.default_rng((seed, 2, n)), count, n) for n in sizes}


# -- the model -----------------------------------------------------------------------------
def new_model(task, args):
    """The untrained `PointerNet`, sized by the flags."""
    return PointerNet(
        point_dim=task.point_dim, encoder=args.encoder, units=args.units,
        encoder_layers=args.encoder_layers, heads=args.heads, glimpses=args.glimpses,
        logit_clip=args.logit_clip or None, **task.model,
    )


def training_steps(args):
    """The run's optimizer steps: `--epochs` of `⌈--train-instances / --batch-size⌉`."""
    return args.epochs * -(-args.train_instances // args.batch_size)


def warmup_steps(args):
    """`--warmup-steps`, at most half of the run's steps."""
    return min(args.warmup_steps, training_steps(args) // 2)


def predict_indices(model, points, lengths=None, beam_width=1, select="log_prob", chunk=None):
    """Decoded indices `(count, N)` (and log-probabilities) in chunks."""
    ops = keras.ops
    chunk = chunk or (5000 if beam_width == 1 else max(200, 40_000 // beam_width))
    indices, log_probs = [], []
    for start in range(0, len(points), chunk):
        part = None if lengths is None else lengths[start : start + chunk]
        out = decode(model, points[start : start + chunk], part, beam_width, select)
        indices.append(ops.convert_to_numpy(out["indices"]))
        log_probs.append(ops.convert_to_numpy(out["log_prob"]))
    return np.concatenate(indices), np.concatenate(log_probs)


def decoders(task, beam_width):
    """The test decoders: `{label: (beam width, select)}`."""
    out = {"greedy": (1, "log_prob")}
    if beam_width > 1:
        out[f"beam {beam_width}"] = (beam_width, "log_prob")
        if task.model.get("start_index") is not None:
            out[f"beam {beam_width}, shortest"] = (beam_width, "tour_length")
    return out


def figures(model, task, seed, count, sizes, beam_width):
    """`{f"N={n}": {decoder: figures}}` on fresh test sets."""
    results = {}
    for n, (points, answers) in test_sets(task, seed, count, sizes).items():
        results[f"N={n}"] = {}
        for label, (width, select) in decoders(task, beam_width).items():
            start = time.time()
            predictions, _ = predict_indices(model, points, beam_width=width, select=select)
            results[f"N={n}"][label] = {**task.score(points, answers, predictions),
                                        "decode_seconds": time.time() - start}
    return results


def print_figures(results):
    for size, by_decoder in results.items():
        for label, entry in by_decoder.items():
            shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in entry.items() if k != "decode_seconds")
            print(f"  {size:<6} {label:<20} {shown}")


def test_sizes_of(text):
    try:
        sizes = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise UsageError(f"`--test-sizes` must be numbers separated by commas; received "
                         f"{text!r}") from None
    if not sizes or min(sizes) < 3:
        raise UsageError(f"`--test-sizes` must be at least 3 points each; received {text!r}")
    return sizes



class PointerTask(Task):
    """One `PointTask` as a registered `Task`."""

    batch_size = 128
    assets = ("history.json",)

    def __init__(self, spec):
        self.spec = spec
        self.name, self.summary = spec.name, spec.summary

    def add_arguments(self, parser):
        add_arguments(parser, self.spec)

    def prepare(self, args):
        task = self.spec
        if task.name == "pointer-tsp" and max(test_sizes_of(args.test_sizes)) > 12:
            raise UsageError("pointer-tsp scores against exact tours: --test-sizes ≤ 12")
        if not 3 <= args.min_points <= args.max_points <= args.supported_points:
            raise UsageError("need 3 ≤ --min-points ≤ --max-points ≤ --supported-points; "
                             f"received {args.min_points}, {args.max_points}, "
                             f"{args.supported_points}")
        if task.name == "pointer-tsp" and args.max_points > 12:
            raise UsageError(f"pointer-tsp trains on exact tours (Held–Karp, exponential in N): "
                             f"--max-points ≤ 12; received {args.max_points}")
        print(f"{task.name}: {task.summary}; {args.train_instances} instances × {args.epochs} "
              f"epochs, batch {args.batch_size}, on {keras.backend.backend()}", flush=True)
        start = time.time()
        train = training_set(task, args.seed, args.train_instances, args.min_points,
                             args.max_points)
        validation = training_set(task, args.seed, args.validation_instances, args.min_points,
                                  args.max_points, stream=1)
        seconds = time.time() - start
        if not args.quiet:
            print(f"generated {args.train_instances} training instances in "
                  f"{seconds:.0f} s", flush=True)
        return PointSets(train=model_inputs(task, *train),
                         validation=model_inputs(task, *validation), seconds=seconds)

    def build_model(self, args, data, jit_compile):
        steps, warmup = training_steps(args), warmup_steps(args)
        # Without the warm-up, the hull run of seed 0 sat on a plateau (loss 0.71, step
        # accuracy 0.26) for its whole first epoch; with it, it learns from the start.
        schedule = keras.optimizers.schedules.CosineDecay(
            0.0 if warmup else args.learning_rate, steps - warmup, alpha=0.05,
            warmup_target=args.learning_rate if warmup else None, warmup_steps=warmup)
        return compile_pointer_net(new_model(self.spec, args), learning_rate=schedule,
                                   clipnorm=args.clipnorm, jit_compile=jit_compile)

    def fit_arguments(self, model, data, args):
        x, y, w = data.train
        return {"x": x, "y": y, "sample_weight": w, "batch_size": args.batch_size,
                "epochs": args.epochs, "validation_data": data.validation}

    def settings(self, args, data, model):
        return {"seed": args.seed, "learning_rate": args.learning_rate,
                "warmup_steps": warmup_steps(args), "train_instances": args.train_instances,
                "validation_instances": args.validation_instances,
                "train_sizes": [args.min_points, args.max_points],
                "beam_width": args.beam_width, "data_seconds": data.seconds,
                "test_instances": args.test_instances,
                "test_sizes": list(test_sizes_of(args.test_sizes)),
                "point_dim": model.point_dim, "max_points": args.supported_points,
                "start_index": model.start_index}

    def evaluate(self, model, meta, assets, args=None, data=None):
        settings = meta.settings
        results = figures(model, self.spec, int(settings["seed"]),
                          int(settings["test_instances"]), tuple(settings["test_sizes"]),
                          int(settings["beam_width"]))
        print(f"{args.run_dir}:" if args is not None else
              f"test ({settings['test_instances']} fresh instances per size):")
        print_figures(results)
        return results

    def export_archive(self, model, meta, assets):
        from keras_attn.training.tasks.pointer.export import archive

        return archive(model, meta.settings)

    def add_predict_arguments(self, parser):
        parser.add_argument("--points", help="one point set, e.g. '0.1 0.2; 0.5 0.9; …'")
        parser.add_argument("--points-file", help="a point set (.npy, or text: a point a line)")
        parser.add_argument("--n", type=positive_int, help="a generated point set of N points")
        parser.add_argument("--seed", type=non_negative_int, default=0,
                            help="the generated point set's seed")

    def explore_form(self, meta, extra_dir):
        from keras_attn.training.tasks.pointer.explore import points_text, random_points

        kind = "numbers" if self.spec.point_dim == 1 else "points ('x y; x y; …')"
        return [{"name": "points", "label": f"The {kind}", "kind": "text",
                 "default": points_text(random_points(self.spec, meta, 0))}]

    def explore_example(self, meta, extra_dir, seed):
        from keras_attn.training.tasks.pointer.explore import points_text, random_points

        return {"points": points_text(random_points(self.spec, meta, seed))}

    def explore(self, version_dir, meta, inputs):
        from keras_attn.training.tasks.pointer.explore import explore

        return explore(self.spec, version_dir, meta, inputs)

    def predict(self, version_dir, meta, args):
        from keras_attn.training.tasks.pointer.predict import point_to

        return point_to(self, version_dir, meta, args)

    def plot(self, prediction, path):
        from keras_attn.training.tasks.pointer.predict import plot_points

        plot_points(*prediction, path)
