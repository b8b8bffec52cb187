"""Where and how the benchmarks write their figures."""

import json
import os
import platform
import subprocess
import time

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


def machine():
    """The CPU a run had: `{"cpus", "platform", "processor", "instructions"}`, the model
    name as Linux reports it (`platform.processor()` is empty there) and the vector
    extensions that change a kernel's numerics (AVX-512, AMX)."""
    model, flags = platform.processor(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                if model and flags:
                    break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "processor": model,
            "instructions": sorted(f for f in flags if f in ("avx2", "avx512f", "amx_tile"))}


def revision():
    """`{"date", "commit"}` of this run: today and the checkout's short commit, with
    `"+changes"` when tracked files differ from it (`None` outside a git checkout)."""
    here = os.path.dirname(os.path.abspath(__file__))

    def git(*command):
        return subprocess.run(["git", "-C", here, *command], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        if git("status", "--porcelain", "--untracked-files=no"):
            commit += "+changes"
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"date": time.strftime("%Y-%m-%d"), "commit": commit}


def header(name, args):
    """The fields every benchmark's JSON opens with, on any backend."""
    import keras

    return {
        "benchmark": name,
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "machine": machine(),
        "config": vars(args),
    }


def tf_cpu_header(name, args):
    """`header`, with TensorFlow's version, for the TensorFlow CPU benchmarks."""
    import tensorflow as tf

    result = header(name, args)
    result["tensorflow"] = tf.__version__
    return result


def worker_backend():
    """The Keras backend of worker processes: JAX when installed (the fastest on
    these CPUs), else TensorFlow; `KERAS_BACKEND` overrides it."""
    import importlib.util

    default = "jax" if importlib.util.find_spec("jax") else "tensorflow"
    return os.environ.get("KERAS_BACKEND", default)


def _use_backend(backend):
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def worker_pool(workers, backend):
    """A process pool of fresh interpreters ("spawn") that run Keras on `backend`.

    A forked worker inherits Keras as the parent imported it, with the parent's
    backend, and a job's arguments are unpickled (importing Keras) before the
    job runs: the backend is set first, by the pool's initializer, or it would
    be silently ignored (a run labelled JAX trained on TensorFlow).
    """
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_use_backend, initargs=(backend,))
