"""The `Task` interface: what one model family knows, behind the runner and the CLI.

A task is a plug-in. `keras_attn.training.runner` owns what every task shares
(the common flags, seed, precision, callbacks, the run folder and its
`RunMeta`, the export's version folders, the export subprocess); a task owns
its flags, data, model, training loop if it is not `fit`, figures, export
signature, and how `predict` reads its inputs and shows its outputs. Adding a
model is one folder under `training/tasks/` and one line in its registry.
"""

import abc
import argparse
import dataclasses
import json
from typing import Any

from keras_attn.models.configured import META_FORMAT
from keras_attn.training import distribution
from keras_attn.training.errors import UsageError
from keras_attn.training.options import Options

FORMAT = META_FORMAT  # RunMeta's layout


@dataclasses.dataclass
class RunMeta:
    """A run folder's `meta.json` (and an export's `assets.extra/meta.json`).

    Attributes:
        task: the task's registry name.
        name: the model's name: its run folder and its export folder.
        config: the model's constructor arguments (`runner.model_config`).
        settings: what the task needs besides the model to evaluate, export and
            predict (lengths, preprocessing, the export's decoder, ...).
        data: where the data came from (`{"source": "built-in"}` or a path and
            its size), so a model is never published over another dataset's.
        training: how it was trained: backend, seed, batch size, epochs or
            steps run, seconds, devices.
        format: the layout's version.
    """

    task: str
    name: str
    config: dict
    settings: dict
    data: dict
    training: dict = dataclasses.field(default_factory=dict)
    format: int = FORMAT

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dataclasses.asdict(self), f, indent=2, ensure_ascii=False)

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("format") != FORMAT:
            raise UsageError(
                f"{path}: a run or export of an older keras-attn (meta.json format "
                f"{data.get('format', 1)}, expected {FORMAT}); retrain it, or load its "
                "model.keras with keras.saving.load_model"
            )
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


class Task(abc.ABC):
    """One model family on its data: the interface the runner and the CLI use.

    Attributes:
        name: the CLI name (`keras-attn train NAME`), also the default model name.
        summary: one line for `--help`.
        batch_size: the default of the shared `--batch-size`.
        uses_fit: whether `fit` trains with `keras.Model.fit` (a task with its own
            loop of `train_on_batch` sets `False`).
        assets: the files (or folders) `save_assets` writes into the run folder,
            which an export copies into its `assets.extra/`.
        restarts: the default of `--restarts`: how many models a run trains, at
            most, to keep the one `restart_rank` puts first; `None` leaves it to
            `resolve`, and `restarts_default` says the rule in `--help`.
        restarts_keep: what `--help` says `--restarts` keeps.
    """

    name: str
    summary: str
    batch_size: int = 32
    uses_fit: bool = True
    assets: tuple = ()
    restarts: int | None = 1
    restarts_default: str = ""
    restarts_keep: str = ("the one with the lowest training error, as the MemN2N paper picks "
                          "among its runs")

    # -- flags -------------------------------------------------------------------------
    @abc.abstractmethod
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Adds the task's own `train` flags (the runner adds the shared ones)."""

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Adds the task's own `evaluate` flags (the runner adds `--run-dir`)."""
        return None  # optional: nothing by default

    def add_predict_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Adds the flags `predict` takes for this task's exports."""
        return None  # optional: nothing by default

    def jit_default(self, backend: str) -> bool:
        """Whether the training step is compiled when neither `--jit` nor `--no-jit`
        is given: yes, except on torch (where Keras's own `"auto"` is off too:
        `torch.compile` failed on the DNC's step)."""
        return backend != "torch"

    def resolve(self, options):
        """The options with the defaults that depend on other flags filled in, once,
        where the command line becomes options (`cli.task_options`); a
        `dataclasses.replace` copy. By default they are as parsed."""
        return options

    # -- data and model ----------------------------------------------------------------
    def base_name(self, args: Options) -> str:
        """The model's name with the built-in data (the task's name by default)."""
        return self.name

    def data_source(self, args: Options) -> dict:
        """Where `args` take the data from; `path` (a file or folder) for a user's own
        data, which names the model (`<base name>-<stem>`) unless `--name` is given."""
        return {"source": "built-in"}

    @abc.abstractmethod
    def prepare(self, args: Options) -> Any:
        """Loads or generates the data (and prints what it holds)."""

    @abc.abstractmethod
    def build_model(self, args: Options, data: Any, jit_compile: bool):
        """The compiled model, sized by `args` and `data`: a `ConfiguredModel`, whose
        constructor arguments become `RunMeta.config`."""

    def fit(self, model, data, args, callbacks, verbose) -> dict:
        """Trains `model`; returns what ran (`{"epochs": …}` or `{"sequences": …}`,
        kept in `RunMeta.training`) and, under `"records"`, curves to save in the run
        folder as `<name>.json`. The default runs `model.fit` on `fit_arguments`."""
        arguments = distribution.even_fit_arguments(self.fit_arguments(model, data, args))
        history = model.fit(**arguments, callbacks=callbacks, verbose=verbose)
        return {"epochs": len(history.epoch), "records": {"history": history.history}}

    def training_error(self, record: dict) -> float:
        """What `--restarts` keeps the lowest of, from `fit`'s record: by default the
        training loss of the epoch whose weights the model keeps (`kept_epoch`)."""
        return float(at_kept_epoch(record, "loss"))

    def restart_rank(self, record: dict) -> dict:
        """The figures `--restarts` ranks a run by, from `fit`'s record, most important
        first (the lowest wins; the names go into `record["restarts"]`): by default
        `training_error`, ties (two runs at 0 % error) to the kept epoch's loss."""
        return {"training_error": self.training_error(record),
                "training_loss": float(at_kept_epoch(record, "loss"))}

    def restarts_settled(self, record: dict) -> bool:
        """Whether a run is good enough that `--restarts` trains no more (by default
        never: every restart trains)."""
        return False

    def fit_arguments(self, model, data, args) -> dict:
        """The data and epochs of `model.fit` (`x`, `y`, `validation_data`, …)."""
        raise NotImplementedError(f"{type(self).__name__} must define fit or fit_arguments")

    def callbacks(self, model, data, args) -> list:
        """Callbacks of the task's own (a progress report, a schedule)."""
        return []

    @abc.abstractmethod
    def settings(self, args: Options, data: Any, model) -> dict:
        """`RunMeta.settings`: what evaluating, exporting and predicting need."""

    def save_assets(self, run_dir: str, data: Any, meta: RunMeta) -> None:
        """Writes `assets` beside the model (vocabularies, the test split)."""
        return None  # optional: nothing by default

    def load_assets(self, run_dir: str, meta: RunMeta) -> Any:
        """What `save_assets` wrote, read back."""
        return None

    # -- figures -----------------------------------------------------------------------
    @abc.abstractmethod
    def evaluate(self, model, meta: RunMeta, assets, args=None, data=None) -> dict:
        """The held-out figures, printed and returned: after training on `data`'s test
        split, or for `keras-attn evaluate` on what `args` name (`--data`)."""

    def show_samples(self, model, meta: RunMeta, assets, data) -> None:
        """Prints a few held-out predictions after training."""
        return None  # optional: nothing by default

    # -- serving -----------------------------------------------------------------------
    @abc.abstractmethod
    def export_archive(self, model, meta: RunMeta, assets):
        """The `keras.export.ExportArchive` of the SavedModel (TensorFlow backend);
        the runner writes it as the next version, atomically."""

    @abc.abstractmethod
    def predict(self, version_dir: str, meta: RunMeta, args: Options) -> Any:
        """Runs the export on the inputs `args` give (TensorFlow only), prints the
        result and returns what `plot` draws."""

    def plot(self, prediction, path: str) -> None:
        """Draws `predict`'s result (the attention) to `path`."""
        raise UsageError(f"predict: a {self.name} export has no figure")

    def check_predict_arguments(self, meta: RunMeta, args: Options) -> None:
        """Refuses inputs the export cannot take, before TensorFlow loads it."""
        return None  # optional: nothing by default

    # -- the explore page (`keras-attn explore`) --------------------------------------
    def explore_form(self, meta: RunMeta, extra_dir: str) -> list:
        """The inputs the page offers for this task's exports: dicts with `name`,
        `label`, `kind` (`text`, `textarea` or `integer`), `default` and, for an
        integer, `min` and `max`. `extra_dir` is the export's `assets.extra/`, for a
        default drawn from its held-out data. Empty: the page lists the export and
        says it cannot run it."""
        return []

    def explore_example(self, meta: RunMeta, extra_dir: str, seed: int) -> dict:
        """Random inputs for the page's "random" button, named as `explore_form`'s."""
        return {}

    def explore(self, version_dir: str, meta: RunMeta, inputs: dict) -> dict:
        """Runs the export on the page's `inputs` (TensorFlow only): `{"answer": text,
        "figures": [Plotly figure dicts]}`. Input the export cannot take raises
        `ValueError` with the message the page shows."""
        raise ValueError(f"a {self.name} export has no explore page")


def at_kept_epoch(record, name):
    """`fit`'s history value `name` at the epoch whose weights the model keeps: the
    last, unless a callback restored an earlier one (`record["kept_epoch"]`, 1-based,
    as the translator's `--patience` keeps its best validation epoch)."""
    values = record["records"]["history"][name]
    # A resumed fit's history starts at the epoch it resumed from.
    index = record.get("kept_epoch", 0) - record.get("resumed_from_epoch", 1)
    return values[index] if 0 <= index < len(values) else values[-1]
