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


def tf_cpu_header(name, args):
    """The fields every TensorFlow CPU benchmark's JSON opens with."""
    import keras
    import tensorflow as tf

    return {
        "benchmark": name,
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "tensorflow": tf.__version__,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "config": vars(args),
    }
