"""The translator's learning curve: `keras-attn train translator --data` on the first
N training lines of the Spanish–English corpus, each export scored on the same 5,000
held-out pairs.

    python benchmarks/translator_sizes.py --data ../shared/data/spa-eng/spa.txt \
        [--sizes 2000,8000,32000,all] [--systems rnn,transformer] [--output PATH]

Another corpus in the same form (`english<TAB>other[<TAB>…]`, as
`benchmarks/gettext_corpus.py` writes one) runs the same way, translated into English.
The split is `translator_real.py`'s (the file's lines shuffled with seed 0, the first
`--test-size` held out, 5,000 by default); the training lines a run sees are the first
N of the rest, as a user would give `--data` a smaller file, and the task splits them
into its own training, validation and test pairs. A system is the command's defaults with its
flags (`SYSTEMS`, or `name=--flag value …` given to `--systems`), so a row says
exactly what a user would type. A profile is chosen by the run's own validation
BLEU (greedy, at the epoch it keeps: the command prints it each epoch), never by the
held-out pairs. Each export is scored through its SavedModel
signature as TF Serving would call it: sacreBLEU's default BLEU (cased, 13a),
lower-cased BLEU, chrF, the share of outputs with `[UNK]`; with the minutes, the
epochs trained and kept, and the model's configuration from the export's
`meta.json`. Results are written after every run.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from results_io import default_path, machine, revision, write_results  # noqa: E402

VALIDATION_LINE = re.compile(r"epoch (\d+): validation \(n=\d+, greedy\) BLEU ([0-9.]+)")


def text_profile_flags():
    """The flags that set every small-corpus lever to the text profile's value: the
    defaults every file had before the small-text profile (derived from the profiles,
    so the system follows them)."""
    from keras_attn.training.tasks.translator.flags import PROFILES, SMALL_CORPUS

    flags = []
    for name in sorted(SMALL_CORPUS):
        value, flag = PROFILES["text"][name], name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            flags += [f"--{flag}", str(value)]
    return flags


SYSTEMS = {
    "rnn": [],  # the command's defaults: the profile it picks for the file's size
    "transformer": ["--model", "transformer"],
    "rnn-regularised": ["--dropout", "0.3", "--word-dropout", "0.1",
                        "--label-smoothing", "0.1"],
    "rnn-text-profile": text_profile_flags,  # every small-corpus lever off
}


def parse_systems(text):
    """`"rnn,small=--dropout 0.3"` → `{"rnn": [], "small": ["--dropout", "0.3"]}`."""
    systems = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, flags = item.partition("=")
        if not flags and name not in SYSTEMS:
            raise SystemExit(f"--systems: {name!r} is not one of {sorted(SYSTEMS)}; give "
                             "NAME=FLAGS for another")
        known = SYSTEMS.get(name)
        systems[name] = (shlex.split(flags) if flags
                         else known() if callable(known) else known)
    return systems


def score_export(version_dir, test_pairs):
    import tensorflow as tf
    from translator_real import text_scores

    signature = tf.saved_model.load(version_dir).signatures["serving_default"]
    sources, references = [s for s, _ in test_pairs], [t for _, t in test_pairs]
    hypotheses = []
    for i in range(0, len(sources), 256):
        out = signature(text=tf.constant(sources[i:i + 256]))
        hypotheses += [t.decode("utf-8") for t in out["translation"].numpy()]
    return text_scores(hypotheses, references), list(zip(sources[:3], hypotheses[:3],
                                                        strict=True))


def one_run(size, name, flags, train_lines, test_pairs, folder, keras_attn_command):
    lines = train_lines if size == "all" else train_lines[:int(size)]
    data = os.path.join(folder, f"train-{size}.tsv")
    with open(data, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    run_name = f"sizes-{size}-{name}"
    command = [*keras_attn_command, "train", "translator", "--data", data, "--reverse",
               "--name", run_name, "--output-dir", os.path.join(folder, "saved"),
               "--work-dir", os.path.join(folder, "work", run_name), "--quiet", *flags]
    print(f"\n== {len(lines)} lines, {name}: keras-attn {' '.join(command[len(keras_attn_command):])}",
          flush=True)
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True)
    minutes = (time.time() - start) / 60
    if result.returncode != 0:
        print(result.stdout[-3000:] + result.stderr[-3000:])
        raise SystemExit(f"the run {run_name} failed (exit {result.returncode})")
    printed = [line for line in result.stdout.splitlines() if line.strip()]
    version = os.path.join(folder, "saved", run_name, "1")
    with open(os.path.join(version, "assets.extra", "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    scores, samples = score_export(version, test_pairs)
    training = meta.get("training") or {}
    # The run's own validation split (greedy, each epoch): what a profile is chosen by.
    validation = {int(m.group(1)): float(m.group(2)) for m in map(VALIDATION_LINE.match, printed)
                  if m}
    kept = training.get("kept_epoch") or max(validation, default=None)
    row = {"size": len(lines), "system": name, "flags": flags, "minutes": round(minutes, 1),
           **scores, "samples": samples, "config": meta.get("config"),
           "settings": meta.get("settings"), "training": {
               k: training.get(k) for k in ("epochs", "kept_epoch", "seconds", "stopped")},
           "validation_bleu": validation.get(kept), "validation_curve": validation,
           "printed_data_line": next((p for p in printed if p.startswith("data:")), None)}
    print(f"  validation BLEU {row['validation_bleu']} (the run's own split, greedy, kept "
          f"epoch); test: BLEU {scores['bleu']:.2f} cased, {scores['bleu_lowercase']:.2f} lower-cased, "
          f"chrF {scores['chrf']:.2f}, [UNK] {100 * scores['unk_share']:.2f} %; "
          f"{minutes:.1f} min; epochs {row['training']['epochs']}, kept "
          f"{row['training']['kept_epoch']}", flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the tutorial's spa.txt, or another "
                        "english<TAB>other corpus")
    parser.add_argument("--sizes", default="2000,8000,32000,all",
                        help="training lines a run takes (the first N), or all")
    parser.add_argument("--systems", default="rnn,transformer",
                        help=f"comma-separated: {sorted(SYSTEMS)} or NAME=FLAGS")
    parser.add_argument("--test-size", type=int, default=5000)
    parser.add_argument("--output", help="JSON path (default benchmarks/results/"
                        "translator_sizes.json)")
    args = parser.parse_args(argv)
    from translator_real import split_corpus

    systems = parse_systems(args.systems)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    output = args.output or default_path("translator_sizes")
    train_lines, test_pairs = split_corpus(args.data, args.test_size)
    keras_attn_command = [os.path.join(os.path.dirname(sys.executable), "keras-attn")]
    result = {"benchmark": "translator_sizes", "command": " ".join(
        ["python", "benchmarks/translator_sizes.py", *(argv or sys.argv[1:])]),
        "test_pairs": len(test_pairs), "machine": machine(),
        **revision(), "runs": []}
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            for name, flags in systems.items():
                result["runs"].append(one_run(size, name, flags, train_lines, test_pairs,
                                              folder, keras_attn_command))
                write_results(result, output, quiet=True)
    print("\n| lines | system | validation BLEU | BLEU (cased) | BLEU lower-cased | chrF | "
          "minutes | epochs (kept) |")
    print("|---|---|---|---|---|---|---|---|")
    for row in result["runs"]:
        print(f"| {row['size']:,} | {row['system']} | {row['validation_bleu']} | {row['bleu']:.2f} | "
              f"{row['bleu_lowercase']:.2f} | {row['chrf']:.2f} | {row['minutes']} | "
              f"{row['training']['epochs']} ({row['training']['kept_epoch']}) |")
    return write_results(result, output)


if __name__ == "__main__":
    main()
