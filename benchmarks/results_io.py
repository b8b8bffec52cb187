"""Where and how the benchmarks write their figures."""

import json
import os
import platform

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def default_path(name):
    return os.path.join(RESULTS_DIR, f"{name}.json")


def write_results(result, path, quiet=False):
    """Writes `result` as indented JSON to `path` and (unless `quiet`) says so."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    if not quiet:
        print(f"\nwrote {path}")
    return result


def header(name, args):
    """The fields every benchmark's JSON opens with, on any backend."""
    import keras

    return {
        "benchmark": name,
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "config": vars(args),
    }


def tf_cpu_header(name, args):
    """`header`, with TensorFlow's version, for the TensorFlow CPU benchmarks."""
    import tensorflow as tf

    result = header(name, args)
    result["tensorflow"] = tf.__version__
    return result
