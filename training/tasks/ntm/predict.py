"""`keras-attn predict` for NTM and DNC exports: output bits, errors and weightings."""

import numpy as np
import tensorflow as tf

from keras_attn.training.errors import UsageError
from keras_attn.training.plotting import pyplot
from keras_attn.training.tasks.ntm.inputs import example, read_sequence


def _bit_rows(bits):
    """`(T, C)` 0/1 → a line per channel, `█` for 1 and `·` for 0."""
    return ["".join("█" if b else "·" for b in channel) for channel in np.asarray(bits).T]


def run_bit_sequence(task, version_dir, meta, args):
    """Runs an NTM or DNC export on a generated example (or `--sequence-file`) and prints
    the output bits and, for an example, the bit errors. Returns what `plot_ntm`
    draws."""
    spec = task.spec_for(meta.settings)
    try:
        if args.sequence_file:
            sequence = read_sequence(args.sequence_file, meta.settings["input_bits"])
            target, label = None, args.sequence_file
        else:
            (sequence, target), params = example(
                spec, args.seed, **{k: getattr(args, k) for k in spec.example}
            )
            label = ", ".join(f"{k} {v}" for k, v in params.items()) or "the task's layout"
    except ValueError as error:
        raise UsageError(f"predict: {error}") from None
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    out = {k: v.numpy() for k, v in serve(sequence=tf.constant(sequence)).items()}
    probabilities = out["output"][0]
    print(f"{task.name} ({label}): {sequence.shape[1]} steps")
    weightings = out["write_weightings"][0], out["read_weightings"][0]
    if target is None:
        print("output bits (a line per channel):")
        for row in _bit_rows(probabilities > 0.5):
            print("  " + row)
        return sequence[0], None, probabilities, *weightings, f"{task.name}: {label}"
    counted = target[0, :, -1] > 0
    expected, got = target[0, counted, :-1], probabilities[counted] > 0.5
    errors = int(np.sum(expected != got))
    print(f"bit errors: {errors} of {expected.size} output bits")
    for name, bits in (("target", expected), ("output", got)):
        print(f"{name}:")
        for row in _bit_rows(bits):
            print("  " + row)
    return (sequence[0], target[0, :, :-1], probabilities, *weightings,
            f"{task.name}: {label}, {errors} bit errors")


def plot_ntm(inputs, target, output, writes, reads, title, path):
    """As Graves et al. Fig. 6: inputs, targets and outputs (channels down), then the
    first write and read head's weightings (memory rows down), time across."""
    plt = pyplot(title)
    panels = [("inputs", inputs), ("targets", target), ("outputs", output),
              ("write weightings", writes[:, 0]), ("read weightings", reads[:, 0])]
    heights = [1, 1, 1, 2, 2]
    if target is None:  # a given sequence: no target to show
        panels, heights = panels[:1] + panels[2:], heights[1:]
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
    print(f"figure saved to {path}")


