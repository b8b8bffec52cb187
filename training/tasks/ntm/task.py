"""The bit-sequence tasks of the external-memory models: the neural Turing
machine's `ntm-copy`, `ntm-repeat-copy`, `ntm-associative-recall` and
`ntm-priority-sort` (Graves et al. 2014, §4), and the same copy tasks for the
differentiable neural computer, `dnc-copy` and `dnc-repeat-copy` (Graves et al.
2016; repeat copy is the training task of DeepMind's reference code).

Every batch is generated from the seed (`algorithmic`), so there is no dataset
to ship and no epoch: training runs until `--sequences` have been seen,
checking the mean bit errors on a fixed validation set every `--check-every`
sequences, and stops early once they have stayed below `--target-errors` for
`--patience` checks in a row. The model keeps the weights of its best check (the
fewest validation bit errors), not the last: RMSprop's late spikes would otherwise
decide what is exported. The learning curve (cost and bit errors against
sequences seen) is saved with the run.
"""

import argparse
import dataclasses
import functools
import math
import time
from typing import Callable

import keras
import numpy as np

from keras_attn.choices import NTM_CONTROLLERS, NTM_MEMORY_INITS
from keras_attn.models.dnc import DNCSequenceModel
from keras_attn.models.ntm import NTMSequenceModel, bit_errors, bits_per_sequence, compile_ntm
from keras_attn.training.arguments import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from keras_attn.training.task import Task
from keras_attn.training.tasks.ntm import algorithmic

# Sequences are padded to a multiple of this many steps: one compiled step per
# bucket instead of one per length (or one for the longest, three times slower).
STEP_BUCKET = 8


@dataclasses.dataclass(frozen=True)
class BitTask:
    """One NTM task.

    Attributes:
        name: the registry name.
        summary: one line for `--help`.
        make: `fn(rng, batch_size, total_steps=None, **params) → (inputs, targets)`.
        steps: `fn(**params) → T`.
        draw: `fn(rng, progress=1.0) → params` for one training batch; `progress` in
            [0, 1] is how far the curriculum has come (1: none, or done), and a draw
            never leaves the task's training range whatever it is.
        validation: the params of the convergence check (each gets `VALIDATION_EACH`
            sequences).
        tests: `{label: params}`, the figures reported after training.
        model: arguments of the model that differ from its defaults.
        sequences: the default training budget.
        example: the flag → param names `predict` accepts (`--length` → `length`).
        architecture: `"ntm"` (`models.ntm.NTMSequenceModel`) or `"dnc"`
            (`models.dnc.DNCSequenceModel`).
        marker_channels: output channels that mark an event rather than carry data
            (repeat copy's end marker); the figures report their errors apart.
        encoding: the generator's encoding options this task takes (repeat copy's
            `start_marker` and `count_scale`) and the values it generates with (in
            `SPECS`, those a new run takes by default); `encoded` applies a run's.
    """

    name: str
    summary: str
    make: Callable
    steps: Callable
    draw: Callable
    validation: tuple
    tests: dict
    model: dict
    sequences: int
    example: tuple
    architecture: str = "ntm"
    marker_channels: tuple = ()
    encoding: dict = dataclasses.field(default_factory=dict)

    def batch(self, rng, batch_size, params, total_steps=None):
        return self.make(rng, batch_size, total_steps=total_steps, **params)

    def encoded(self, **options):
        """The task with these encoding options (of `encoding`; the rest keep theirs):
        its generator, step count and model input width follow them."""
        unknown = sorted(set(options) - set(self.encoding))
        if unknown:
            raise ValueError(f"{self.name} takes the encoding options {sorted(self.encoding)}; "
                             f"received {unknown}.")
        encoding = {**self.encoding, **options}
        start = int(bool(encoding.get("start_marker")))
        # From the plain generator, whatever encoding this task already has.
        make, steps = (f.func if isinstance(f, functools.partial) else f
                       for f in (self.make, self.steps))
        plain_bits = self.model["input_bits"] - int(bool(self.encoding.get("start_marker")))
        return dataclasses.replace(
            self, encoding=encoding, make=functools.partial(make, **encoding),
            steps=functools.partial(steps, start_marker=True) if start else steps,
            model={**self.model, "input_bits": plain_bits + start})


def _uniform(*names, low, high):
    """Each of `names` drawn on its own in `low … high`; while a curriculum runs, in
    `low … curriculum_limit(progress, low, high)`. With no curriculum (progress 1) the
    draws are the same as without one."""

    def draw(rng, progress=1.0):
        limit = curriculum_limit(progress, low, high)
        return {name: int(rng.integers(low, limit + 1)) for name in names}

    return draw


def curriculum_limit(progress, low, high):
    """The largest size a curriculum shows at `progress` ∈ [0, 1]: `low` at the
    start, one more at each equal step of progress, `high` from `progress` 1 on."""
    if not 0.0 <= progress <= 1.0:
        raise ValueError(f"`progress` must be in [0, 1]; received {progress!r}.")
    return low + math.floor(progress * (high - low) + 1e-9)


def curriculum_progress(seen, sequences):
    """How far a curriculum of `sequences` is after `seen` sequences: in [0, 1]."""
    return 1.0 if sequences <= 0 else min(1.0, seen / sequences)


def _priority_sort_draw(rng, progress=1.0, low=2, inputs=20, outputs=16):
    """Priority sort with a curriculum over the list's size: `n` vectors drawn in
    `low … limit` while the curriculum runs, `inputs` once it is done; the top
    `round(n · outputs / inputs)` (at least 1) are the targets, as in the full task."""
    limit = curriculum_limit(progress, low, inputs)
    n = inputs if limit >= inputs else int(rng.integers(low, limit + 1))
    return {"inputs": n, "outputs": max(1, round(n * outputs / inputs))}


# Repeat copy's encoding before `--start-marker` and `--repeat-count` (pytorch-ntm's):
# what an export that records neither was trained on.
ORIGINAL_ENCODING = {"start_marker": False, "count_scale": None}

SPECS = {
    "ntm-copy": BitTask(
        name="ntm-copy",
        summary="NTM copy: 8-bit vectors, lengths 1–20 (tested to length 50)",
        make=algorithmic.copy_batch,
        steps=algorithmic.copy_steps,
        draw=_uniform("length", low=1, high=20),
        validation=tuple({"length": n} for n in range(1, 21)),
        tests={f"length {n}": {"length": n} for n in (10, 20, 30, 40, 50)},
        model={"input_bits": 9, "output_bits": 8},
        sequences=50_000,
        example=("length",),
    ),
    "ntm-repeat-copy": BitTask(
        name="ntm-repeat-copy",
        summary="NTM repeat copy: lengths 1–10, 1–10 repeats, then an end marker",
        make=algorithmic.repeat_copy_batch,
        steps=algorithmic.repeat_copy_steps,
        draw=_uniform("length", "repeats", low=1, high=10),
        validation=tuple({"length": n, "repeats": r} for n in (1, 4, 7, 10) for r in (1, 4, 7, 10)),
        tests={
            "length 5 × 5": {"length": 5, "repeats": 5},
            "length 10 × 10": {"length": 10, "repeats": 10},
            "length 10 × 15": {"length": 10, "repeats": 15},
            "length 15 × 10": {"length": 15, "repeats": 10},
            "length 20 × 10": {"length": 20, "repeats": 10},
        },
        model={"input_bits": 10, "output_bits": 9},
        sequences=100_000,
        example=("length", "repeats"),
        marker_channels=(8,),
        # The start marker and the scaled count made the fewest errors at seed 0, but
        # with both, seed 1 did not converge and seed 4 diverged (benchmarks/results/
        # ntm_repeat_copy_start_marker_scaled_count_seeds.json): options, not defaults.
        encoding=dict(ORIGINAL_ENCODING),
    ),
    "ntm-associative-recall": BitTask(
        name="ntm-associative-recall",
        summary="NTM associative recall: items of 3 six-bit vectors, 2–6 items (tested to 12)",
        make=algorithmic.associative_recall_batch,
        steps=algorithmic.associative_recall_steps,
        draw=_uniform("items", low=2, high=6),
        validation=tuple({"items": n} for n in range(2, 7)),
        tests={f"{n} items": {"items": n} for n in (6, 8, 12, 15)},
        model={"input_bits": 8, "output_bits": 6},
        sequences=200_000,
        example=("items",),
    ),
    "ntm-priority-sort": BitTask(
        name="ntm-priority-sort",
        summary="NTM priority sort: 20 vectors with priorities in [−1, 1] → the top 16 in order",
        make=algorithmic.priority_sort_batch,
        steps=algorithmic.priority_sort_steps,
        draw=_priority_sort_draw,
        validation=({},),
        tests={"20 → 16": {}},
        model={"input_bits": 10, "output_bits": 8, "read_heads": 5, "write_heads": 5},
        sequences=100_000,
        example=(),
    ),
}


def _for_dnc(task):
    """The same task with a DNC: the NTM's data, checks and export; only the model differs."""
    name = task.name.replace("ntm-", "dnc-", 1)
    return dataclasses.replace(task, name=name, summary=task.summary.replace("NTM", "DNC"),
                               architecture="dnc")


SPECS.update({task.name: task for task in map(_for_dnc, (SPECS["ntm-copy"],
                                                         SPECS["ntm-repeat-copy"]))})
VALIDATION_EACH = 16


def bucketed(steps):
    return STEP_BUCKET * math.ceil(steps / STEP_BUCKET)


def add_arguments(parser, task):
    if task.architecture == "dnc":
        model = parser.add_argument_group("model (DNC, LSTM controller)")
        model.add_argument("--memory-size", type=positive_int, default=64,
                           help="N, memory rows (the link matrix is N × N)")
    else:
        model = parser.add_argument_group("model (defaults: Graves et al. 2014, LSTM controller)")
        model.add_argument("--memory-size", type=positive_int, default=128, help="N, memory rows")
    model.add_argument("--memory-width", type=positive_int, default=20, help="a row's size")
    model.add_argument("--read-heads", type=positive_int, default=task.model.get("read_heads", 1))
    model.add_argument("--controller-units", type=positive_int, default=100)
    if task.architecture == "ntm":
        model.add_argument("--write-heads", type=positive_int,
                           default=task.model.get("write_heads", 1))
        model.add_argument("--controller", choices=NTM_CONTROLLERS, default="lstm")
        model.add_argument("--shift-range", type=non_negative_int, default=1)
        model.add_argument("--memory-init", choices=NTM_MEMORY_INITS,
                           default="constant")
        model.add_argument("--state-gradient-clip", type=positive_float, default=None,
                           metavar="C", help="clip the gradient each step passes back to "
                           "the one before to [-C, C] (default: not clipped)")
    fit = parser.add_argument_group("training")
    fit.add_argument("--sequences", type=positive_int, default=task.sequences,
                     help="the training budget, in sequences")
    fit.add_argument("--curriculum", type=non_negative_int, default=0,
                     help="sequences over which the training sizes grow to the task's "
                     "(0: the full task from the start)")
    fit.add_argument("--learning-rate", type=positive_float,
                     default=3e-4, help="RMSprop, momentum 0.9")
    fit.add_argument("--clipnorm", type=positive_float, default=10.0)
    fit.add_argument("--check-every", type=positive_int,
                     default=1000, help="sequences between checks")
    fit.add_argument("--target-errors", type=non_negative_float, default=0.1,
                     help="converged: mean bit errors per validation sequence below this")
    fit.add_argument("--patience", type=non_negative_int, default=3,
                     help="stop after this many converged checks in a row (0: never stop early)")
    fit.add_argument("--test-sequences", type=positive_int,
                     default=1000, help="per figure after training")
    if task.encoding:
        encoding = parser.add_argument_group("encoding of the task's sequences")
        encoding.add_argument(
            "--start-marker", action=argparse.BooleanOptionalAction,
            default=task.encoding["start_marker"],
            help="a first step flagging the start, on its own input channel")
        encoding.add_argument(
            "--repeat-count", choices=REPEAT_COUNTS, default=_count_name(
                task.encoding["count_scale"]),
            help=f"the count as R / {algorithmic.COUNT_SCALE} (scaled), or normalised to mean 0 "
            "and variance 1 over 1–10 (normalised: pytorch-ntm's, and that of exports made "
            "before this flag)")


REPEAT_COUNTS = ("scaled", "normalised")


def _count_name(count_scale):
    return "normalised" if count_scale is None else "scaled"


def encoding_of(task, settings):
    """The run's encoding options from its flags or its export's settings (an export
    without them has the task's original encoding, `ORIGINAL_ENCODING`)."""
    if not task.encoding:
        return {}
    get = settings.get if isinstance(settings, dict) else lambda key, default: getattr(
        settings, key, default)
    count = get("repeat_count", _count_name(ORIGINAL_ENCODING["count_scale"]))
    return {"start_marker": bool(get("start_marker", ORIGINAL_ENCODING["start_marker"])),
            "count_scale": algorithmic.COUNT_SCALE if count == "scaled" else None}


def new_model(task, args):
    """The untrained model of the task's architecture, sized by the flags."""
    shared = {
        "input_bits": task.model["input_bits"],
        "output_bits": task.model["output_bits"],
        "memory_size": args.memory_size,
        "memory_width": args.memory_width,
        "read_heads": args.read_heads,
        "controller_units": args.controller_units,
    }
    if task.architecture == "dnc":
        return DNCSequenceModel(**shared)
    return NTMSequenceModel(
        **shared,
        write_heads=args.write_heads,
        controller=args.controller,
        shift_range=args.shift_range,
        memory_init=args.memory_init,
        state_gradient_clip=args.state_gradient_clip,
    )


def validation_set(task, seed):
    """One array pair: every validation setting, padded to the longest."""
    rng = np.random.default_rng((seed, 1))
    longest = max(task.steps(**p) for p in task.validation)
    pairs = [task.batch(rng, VALIDATION_EACH, p, longest) for p in task.validation]
    return np.concatenate([x for x, _ in pairs]), np.concatenate([y for _, y in pairs])


def errors_and_cost(model, x, y, batch_size=500, marker_channels=()):
    """Per sequence: (bit errors, cost in bits, bit errors on `marker_channels`),
    from the Keras model."""
    ops = keras.ops
    logits = np.asarray(model.predict(x, batch_size=batch_size, verbose=0), "float32")

    def errors_on(channels):  # `bit_errors` on these output channels alone
        target = np.concatenate([y[..., :-1][..., channels], y[..., -1:]], axis=-1)
        return ops.convert_to_numpy(bit_errors(ops.convert_to_tensor(target),
                                               ops.convert_to_tensor(logits[..., channels])))

    cost = bits_per_sequence(ops.convert_to_tensor(y), ops.convert_to_tensor(logits))
    return (errors_on(slice(None)), ops.convert_to_numpy(cost),
            errors_on(list(marker_channels)))


def summarize(errors, cost, marker_errors=None):
    """The figures of one setting; with `marker_errors`, the errors split into the
    data bits' and the markers'."""
    summary = {"n": int(len(errors)), "bit_errors": float(np.mean(errors)),
               "error_free": float(np.mean(errors == 0)), "cost_bits": float(np.mean(cost))}
    if marker_errors is not None:
        data_errors = errors - marker_errors
        summary |= {"data_bit_errors": float(np.mean(data_errors)),
                    "data_error_free": float(np.mean(data_errors == 0)),
                    "marker_errors": float(np.mean(marker_errors))}
    return summary


def figures(model, task, seed, sequences=1000):
    """The task's test figures on `sequences` fresh sequences per setting (seeded
    apart from training and validation)."""
    rng = np.random.default_rng((seed, 2))
    longest = max(task.steps(**params) for params in task.tests.values())
    # One padded array, so one compiled prediction serves every setting (steps
    # after a sequence's end change nothing before it).
    pairs = [task.batch(rng, sequences, params, longest) for params in task.tests.values()]
    errors, cost, markers = errors_and_cost(model, np.concatenate([x for x, _ in pairs]),
                                            np.concatenate([y for _, y in pairs]),
                                            marker_channels=task.marker_channels)
    rows = [slice(i * sequences, (i + 1) * sequences) for i in range(len(task.tests))]
    return {
        label: {"params": params,
                **summarize(errors[part], cost[part],
                            markers[part] if task.marker_channels else None)}
        for part, (label, params) in zip(rows, task.tests.items(), strict=True)
    }


def print_figures(figures_):
    for label, entry in figures_.items():
        split = (f"   data bits {entry['data_bit_errors']:7.3f} "
                 f"({100 * entry['data_error_free']:5.1f} % error-free), markers "
                 f"{entry['marker_errors']:6.3f}" if "marker_errors" in entry else "")
        print(f"  {label:<16} bit errors / sequence {entry['bit_errors']:7.3f}   "
              f"error-free {100 * entry['error_free']:5.1f} %   cost {entry['cost_bits']:8.3f} "
              f"bits{split}   (n={entry['n']})")


def training_batch(task, seed, batch_size, check, index, progress=1.0):
    """The `index`-th batch of check `check`: reproducible from the seed, padded to
    its step bucket; `progress`, the curriculum's (see `BitTask.draw`)."""
    rng = np.random.default_rng((seed, 0, check, index))
    params = task.draw(rng, progress)
    return task.batch(rng, batch_size, params, bucketed(task.steps(**params)))


class Monitor:
    """The learning curve, one point a check; the best check so far (fewest
    validation bit errors, then the lower validation cost), whose weights the run
    keeps; and the stop rule: converged for `patience` checks in a row, or a loss
    that is not finite."""

    def __init__(self, target, patience):
        self.target, self.patience = target, patience
        self.curve, self.converged_at, self.diverged, self._streak = [], None, False, 0
        self.best, self.improved = None, False

    def record(self, point):
        """Adds a point; returns whether to stop (`improved`: whether it is the best)."""
        self.curve.append(point)
        finite = math.isfinite(point["train_cost_bits"]) and math.isfinite(
            point["validation_cost_bits"])
        self.diverged = self.diverged or not finite
        rank = (point["validation_bit_errors"], point["validation_cost_bits"])
        self.improved = finite and (self.best is None or rank < (
            self.best["validation_bit_errors"], self.best["validation_cost_bits"]))
        if self.improved:
            self.best = point
        below = point["validation_bit_errors"] < self.target
        self._streak = self._streak + 1 if below else 0
        if below and self.converged_at is None:
            self.converged_at = point
        return self.diverged or bool(self.patience and self._streak >= self.patience)



class BitSequenceTask(Task):
    """One `BitTask` as a registered `Task` (trained by its own loop, not `fit`)."""

    batch_size = 8
    uses_fit = False
    assets = ("curve.json",)
    # One run in two to five of repeat copy stalls on a seed whatever its budget
    # (docs/results.md): the best of a few seeds by validation, with no more runs
    # once one has converged, so a run that converges costs nothing extra.
    restarts = 3
    restarts_keep = ("the one with the fewest validation bit errors; no more once one has "
                     "converged (validation bit errors below --target-errors)")

    def __init__(self, spec):
        self.spec = spec
        self.name, self.summary = spec.name, spec.summary

    def add_arguments(self, parser):
        add_arguments(parser, self.spec)

    def spec_for(self, settings):
        """The task as a run encodes it: from its flags, or its export's settings."""
        return self.spec.encoded(**encoding_of(self.spec, settings))

    def prepare(self, args):
        """The validation set (from the run's seed, so every restart is checked on
        the same sequences); the training batches are drawn as it trains."""
        print(f"{self.name}: {self.summary}; up to {args.sequences} sequences, batch "
              f"{args.batch_size}, on {keras.backend.backend()}", flush=True)
        return {"validation": validation_set(self.spec_for(args), args.seed)}

    def build_model(self, args, data, jit_compile):
        return compile_ntm(new_model(self.spec_for(args), args), learning_rate=args.learning_rate,
                           clipnorm=args.clipnorm, jit_compile=jit_compile)

    def fit(self, model, data, args, callbacks, verbose):
        """A loop of `train_on_batch`, not `fit`: each batch has its own number of steps,
        which `fit` on TensorFlow cannot take from a generator (it fixes the shapes it
        saw in the first two batches)."""
        task = self.spec_for(args)
        batches_per_check = max(1, args.batch_size and args.check_every // args.batch_size)
        check_every = batches_per_check * args.batch_size
        checks = math.ceil(args.sequences / check_every)
        x, y = data["validation"]
        monitor = Monitor(args.target_errors, args.patience)
        # A bar on a terminal, a line a check in a log (verbose 2), nothing when quiet.
        bar = keras.utils.Progbar(checks * check_every, unit_name="sequence",
                                  stateful_metrics=["cost", "validation_bit_errors"],
                                  verbose=1 if verbose == 1 else 0)
        start = time.time()
        for check in range(checks):
            losses = []
            for index in range(batches_per_check):
                # train_on_batch resets the metrics: its loss is the batch's own.
                seen = check * check_every + index * args.batch_size
                progress = curriculum_progress(seen, args.curriculum)
                losses.append(model.train_on_batch(
                    *training_batch(task, args.seed, args.batch_size, check, index, progress),
                    return_dict=True)["loss"])
                bar.update(check * check_every + (index + 1) * args.batch_size,
                           [("cost", losses[-1])])
            errors, cost, _ = errors_and_cost(model, x, y)
            point = {"sequences": (check + 1) * check_every,
                     "train_cost_bits": float(np.mean(losses)),
                     "validation_bit_errors": float(np.mean(errors)),
                     "validation_cost_bits": float(np.mean(cost)),
                     "seconds": time.time() - start}
            stop = monitor.record(point)
            if monitor.improved:  # RMSprop spikes late in training: keep the best check's
                best_weights = [np.array(w) for w in model.get_weights()]
            bar.update(point["sequences"],
                       [("validation_bit_errors", point["validation_bit_errors"])],
                       finalize=stop or check == checks - 1)
            if verbose == 2:
                print(f"  {point['sequences']:>7} sequences  cost {point['train_cost_bits']:8.3f} "
                      f"bits  validation bit errors {point['validation_bit_errors']:7.3f}  "
                      f"({point['seconds']:.0f} s)", flush=True)
            if stop:
                break
        seen = monitor.curve[-1]["sequences"] if monitor.curve else 0
        reached, best = monitor.converged_at, monitor.best
        print(f"validation bit errors < {args.target_errors} first after "
              f"{reached['sequences']} sequences" if reached else
              f"validation bit errors never < {args.target_errors}"
              + ("; stopped: the loss was not finite" if monitor.diverged else ""))
        if best is not None and best is not monitor.curve[-1]:
            model.set_weights(best_weights)
            print(f"kept the weights of the best check: {best['sequences']} sequences, "
                  f"validation bit errors {best['validation_bit_errors']:.3f} (the last: "
                  f"{monitor.curve[-1]['validation_bit_errors']:.3f})", flush=True)
        return {"sequences": seen, "converged_at": reached, "diverged": monitor.diverged,
                "kept": best, "records": {"curve": monitor.curve}}

    def restart_rank(self, record):
        kept = record["kept"] or {}  # none: every check's loss was not finite
        return {name: kept.get(name, math.inf)
                for name in ("validation_bit_errors", "validation_cost_bits")}

    def restarts_settled(self, record):
        return record["converged_at"] is not None

    def settings(self, args, data, model):
        return {"architecture": self.spec.architecture, "seed": args.seed,
                "learning_rate": args.learning_rate, "test_sequences": args.test_sequences,
                "curriculum": args.curriculum,
                "input_bits": model.input_bits, "output_bits": model.output_bits,
                "memory_size": model.memory_size, "read_heads": model.read_heads,
                "write_heads": getattr(model, "write_heads", 1),
                **({"start_marker": args.start_marker, "repeat_count": args.repeat_count}
                   if self.spec.encoding else {})}

    def evaluate(self, model, meta, assets, args=None, data=None):
        settings = meta.settings
        results = figures(model, self.spec_for(settings), int(settings["seed"]),
                          int(settings["test_sequences"]))
        print(f"{args.run_dir}:" if args is not None else
              f"test ({settings['test_sequences']} fresh sequences each):")
        print_figures(results)
        return results

    def export_archive(self, model, meta, assets):
        from keras_attn.training.tasks.ntm.export import archive

        return archive(model, meta.settings)

    def add_predict_arguments(self, parser):
        for name in self.spec.example:
            parser.add_argument(f"--{name}", type=positive_int,
                                help=f"the generated example's {name}")
        parser.add_argument("--seed", type=non_negative_int, default=0,
                            help="the generated example's seed")
        parser.add_argument("--sequence-file",
                            help="run this sequence instead (.npy, or text: a step a line) and "
                            "print the output")

    def explore_form(self, meta, extra_dir):
        fields = [{"name": name, "label": f"{name.capitalize()} (empty: drawn as in "
                   "training)", "kind": "integer", "default": "", "min": 1, "max": 100}
                  for name in self.spec.example]
        return fields + [{"name": "seed", "label": "Seed of the random bits",
                          "kind": "integer", "default": 0, "min": 0, "max": 10**6}]

    def explore_example(self, meta, extra_dir, seed):
        return {"seed": seed}

    def explore(self, version_dir, meta, inputs):
        from keras_attn.training.tasks.ntm.explore import explore

        return explore(self.spec_for(meta.settings), version_dir, meta, inputs)

    def predict(self, version_dir, meta, args):
        from keras_attn.training.tasks.ntm.predict import run_bit_sequence

        return run_bit_sequence(self, version_dir, meta, args)

    def plot(self, prediction, path):
        from keras_attn.training.tasks.ntm.predict import plot_ntm

        plot_ntm(*prediction, path)
