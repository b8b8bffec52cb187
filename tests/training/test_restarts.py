"""`--restarts N`: N models on the same data, the one of lowest training error kept
(for the bit tasks, the fewest validation bit errors, stopping once one converges),
each restart with its own seed and its own backup to resume from."""

import os

import keras
import numpy as np
import pytest

from keras_attn.training import cli, runner
from tests.training.toy_tasks import TrainOnlyTask, registered


class StopInRestart(keras.callbacks.Callback):
    """Interrupts `fit` at the end of one epoch of one restart, as Ctrl-C would."""

    def __init__(self, seed, epoch):
        super().__init__()
        self.seed, self.epoch = seed, epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


class NoisyLineTask(TrainOnlyTask):
    """A line fit from few noisy points with a big step: where training ends depends
    on the initial weights, so restarts differ. It keeps each restart's weights and
    training loss for the test to compare (a test task; real tasks keep no state)."""

    name = "toy-restarts"
    summary = "toy: restarts"
    batch_size = 8

    def __init__(self):
        self.trained, self.starts, self.interrupt = {}, {}, None

    def add_arguments(self, parser):
        parser.add_argument("--epochs", type=int, default=4)

    def prepare(self, args):
        rng = np.random.default_rng(args.seed)
        x = rng.uniform(-1, 1, (32, 2)).astype("float32")
        return {"x": x, "y": np.tanh(3 * x @ np.array([[1.0], [-2.0]], "float32"))}

    def build_model(self, args, data, jit_compile):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="tanh"),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=keras.optimizers.SGD(0.3), loss="mse")
        self.starts[args.seed] = [w.copy() for w in model.get_weights()]
        return model

    def callbacks(self, model, data, args):
        stop = self.interrupt
        return [StopInRestart(*stop)] if stop and stop[0] == args.seed else []

    def fit(self, model, data, args, callbacks, verbose):
        record = super().fit(model, data, args, callbacks, verbose)
        self.trained[args.seed] = ([w.copy() for w in model.get_weights()],
                                   record["records"]["history"]["loss"][-1])
        return record

    def fit_arguments(self, model, data, args):
        return {"x": data["x"], "y": data["y"], "batch_size": args.batch_size,
                "epochs": args.epochs, "shuffle": True}


@pytest.fixture
def toy():
    with registered(NoisyLineTask()) as task:
        yield task


def _args(*flags):
    return cli.task_options(
        ["train", "toy-restarts", "--quiet", "--no-export", "--no-tensorboard", *flags])


def test_restarts_train_from_their_own_seeds_and_keep_the_lowest_training_error(toy):
    data, model, record = runner.fit_in_process(toy, _args("--restarts", "3", "--seed", "4"))
    seeds = [4, 4 + runner.RESTART_SEED_STEP, 4 + 2 * runner.RESTART_SEED_STEP]
    assert [r["seed"] for r in record["restarts"]] == seeds
    # Each restart started from other weights, on the same data (the seed-4 split).
    firsts = [toy.starts[s][0] for s in seeds]
    assert not np.allclose(firsts[0], firsts[1]) and not np.allclose(firsts[1], firsts[2])
    np.testing.assert_array_equal(data["x"], toy.prepare(_args("--seed", "4"))["x"])
    losses = {s: toy.trained[s][1] for s in seeds}
    assert [r["training_error"] for r in record["restarts"]] == [losses[s] for s in seeds]
    assert len(set(losses.values())) == 3
    best = min(losses, key=losses.get)
    assert record["kept_seed"] == best
    for kept, expected in zip(model.get_weights(), toy.trained[best][0], strict=True):
        np.testing.assert_array_equal(kept, expected)
    assert record["seconds"] == pytest.approx(sum(r["seconds"] for r in record["restarts"]))


def test_one_restart_is_the_plain_run(toy):
    _, model, record = runner.fit_in_process(toy, _args("--seed", "4"))
    assert "restarts" not in record and "kept_seed" not in record
    assert list(toy.trained) == [4]


def test_restarts_must_be_a_positive_count(toy, capsys):
    with pytest.raises(SystemExit):
        _args("--restarts", "0")
    assert "--restarts" in capsys.readouterr().err


BIT_TASK_SMALL = ["--memory-size", "8", "--memory-width", "4", "--controller-units", "8",
                  "--batch-size", "4", "--sequences", "8", "--check-every", "4", "--quiet",
                  "--no-export", "--no-tensorboard", "--test-sequences", "2"]


def test_the_bit_tasks_keep_the_restart_of_fewest_validation_bit_errors(monkeypatch):
    """A bit task trains in its own loop; its restarts are ranked by the kept check's
    validation bit errors (then cost), every restart checked on the same sequences."""
    from keras_attn.training import tasks
    from keras_attn.training.tasks.ntm import task as ntm

    checked = []
    real = ntm.errors_and_cost

    def spy(model, x, y, **kwargs):
        checked.append(x)
        return real(model, x, y, **kwargs)

    monkeypatch.setattr(ntm, "errors_and_cost", spy)
    # A target of 0 errors is never met: every restart trains its whole budget.
    args = cli.task_options(["train", "ntm-copy", *BIT_TASK_SMALL, "--target-errors", "0",
                             "--restarts", "3", "--seed", "5"])
    bit_task = tasks.get("ntm-copy")
    data, model, record = runner.fit_in_process(bit_task, args)
    step = runner.RESTART_SEED_STEP
    assert [r["seed"] for r in record["restarts"]] == [5, 5 + step, 5 + 2 * step]
    ranks = {r["seed"]: (r["validation_bit_errors"], r["validation_cost_bits"])
             for r in record["restarts"]}
    assert len(set(ranks.values())) == 3  # the restarts differ: the choice is a real one
    assert record["kept_seed"] == min(ranks, key=ranks.get)
    assert record["kept"]["validation_bit_errors"] == ranks[record["kept_seed"]][0]
    # 2 checks a restart, each on the seed-5 validation set, which the kept model scores
    # as its kept check did.
    assert len(checked) == 6
    expected, _ = ntm.validation_set(bit_task.spec_for(args), 5)
    for x in checked:
        np.testing.assert_array_equal(x, expected)
    errors, _, _ = real(model, *data["validation"])
    assert float(np.mean(errors)) == pytest.approx(ranks[record["kept_seed"]][0])


def test_bit_task_restarts_stop_once_a_run_converges(capsys):
    from keras_attn.training import tasks

    # A target every model meets: the first restart converges, and no other trains.
    args = cli.task_options(["train", "dnc-copy", *BIT_TASK_SMALL, "--target-errors", "1e9",
                             "--patience", "1", "--seed", "2"])
    assert args.restarts == 3  # the default
    _, _, record = runner.fit_in_process(tasks.get("dnc-copy"), args)
    assert [r["seed"] for r in record["restarts"]] == [2] and record["kept_seed"] == 2
    assert "restart 1 is good enough: no more restarts" in capsys.readouterr().out


@pytest.mark.parametrize("flags, restarts", [
    (["memn2n", "--data-dir", "babi", "--tasks", "13"], 3),  # one bAbI task: the paper's way
    (["memn2n", "--data-dir", "babi", "--tasks", "13", "--restarts", "1"], 1),
    (["memn2n", "--data-dir", "babi", "--tasks", "1,2"], 1),  # jointly
    (["memn2n", "--data-dir", "babi"], 1),
    (["memn2n"], 1),  # the built-in stories
    (["dnc-babi", "--data-dir", "babi", "--tasks", "13"], 1),
    (["translator", "--restarts", "2"], 2),
    (["ntm-repeat-copy"], 3),  # no more once one converges
    (["dnc-copy", "--restarts", "1"], 1),
])
def test_the_default_restarts(flags, restarts):
    assert cli.task_options(["train", *flags]).restarts == restarts


def test_a_folder_of_one_tasks_file_is_one_task(tmp_path):
    # As `--tasks N`: the best of 3 by training error; a folder of two tasks, jointly.
    (tmp_path / "qa2_two-supporting-facts_train.txt").write_text("1 A b.\n", encoding="utf-8")
    (tmp_path / "qa2_two-supporting-facts_test.txt").write_text("1 A b.\n", encoding="utf-8")
    assert cli.task_options(["train", "memn2n", "--data-dir", str(tmp_path)]).restarts == 3
    (tmp_path / "qa3_three-supporting-facts_train.txt").write_text("1 A b.\n", encoding="utf-8")
    assert cli.task_options(["train", "memn2n", "--data-dir", str(tmp_path)]).restarts == 1


def test_an_interrupted_restart_resumes_from_its_own_backup(toy, tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    # Seed 0 given: the suite's KERAS_ATTN_TEST_SEED moves the default seed.
    flags = ("--restarts", "2", "--epochs", "4", "--work-dir", run_dir, "--seed", "0")
    second = runner.RESTART_SEED_STEP
    toy.interrupt = (second, 1)  # the second restart stops after its epoch 2 of 4
    with pytest.raises(SystemExit) as stopped:
        runner.train(toy, _args(*flags))
    assert stopped.value.code == 130
    assert capsys.readouterr().err.strip().endswith(
        f"resume from the backup in {os.path.join(run_dir, 'backup-2')}")
    # The first restart finished (its backup deleted); the second's backup is its own.
    assert not os.path.exists(os.path.join(run_dir, "backup"))
    assert os.path.exists(os.path.join(run_dir, "backup-2"))
    capsys.readouterr()

    toy.interrupt = None
    results = runner.train(toy, _args(*flags))
    printed = capsys.readouterr().out
    assert f"resuming from epoch 3 (the backup in {os.path.join(run_dir, 'backup-2')})" in printed
    assert printed.count("resuming") == 1  # the first restart trained again from its seed
    assert [r["seed"] for r in results["training"]["restarts"]] == [0, second]
    assert not os.path.exists(os.path.join(run_dir, "backup-2"))


class KeepFirstEpoch(keras.callbacks.Callback):
    """Restores the first epoch's weights at the end, as `--patience` keeps the best
    validation epoch's, and says so (`kept_epoch`, 1-based)."""

    def __init__(self):
        super().__init__()
        self.kept_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            self.first = self.model.get_weights()

    def on_train_end(self, logs=None):
        self.model.set_weights(self.first)
        self.kept_epoch = 1


def test_restarts_compare_the_weights_each_run_keeps(toy, monkeypatch):
    """The training error of the epoch whose weights a run keeps, not the last one's:
    the translator's `--patience` keeps its best validation epoch."""
    monkeypatch.setattr(NoisyLineTask, "callbacks", lambda self, *a: [KeepFirstEpoch()])
    _, model, record = runner.fit_in_process(toy, _args("--restarts", "3", "--seed", "4"))
    assert record["kept_epoch"] == 1
    assert all(r["training_loss"] == r["training_error"] for r in record["restarts"])
    histories = {}
    for r in record["restarts"]:
        histories[r["seed"]] = r["training_error"]
    # Each restart's figure is its first epoch's loss, which differs from its last.
    firsts = [r["training_error"] for r in record["restarts"]]
    lasts = [toy.trained[r["seed"]][1] for r in record["restarts"]]
    assert firsts != lasts
    assert record["kept_seed"] == min(histories, key=histories.get)
