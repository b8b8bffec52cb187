"""SavedModel export for TF Serving: what every task's export shares.

This module, the tasks' `export.py` modules and the serving checks are the only
project code that imports TensorFlow; they run on the TensorFlow Keras backend.
Exports go to `<root>/<model>/<version>/`, written to a temporary folder beside
it and renamed, so TF Serving (which polls `<root>/<model>/`) never sees half a
version, with the modes the umask gives (another user's server can read them).

The graphs' own operations (text to ids and back, input checks) are in
`keras_attn.models.preprocessor_graph`, beside the models that export them.
"""

import os
import re
import shutil
import tempfile

import tensorflow as tf

_loaded = {}


def loaded_signature(version_dir, name="serving_default"):
    """`tf.saved_model.load(version_dir).signatures[name]`, loaded once per process
    (a load takes seconds; the explore page answers each request from this)."""
    key = os.path.realpath(version_dir)
    if key not in _loaded:
        _loaded[key] = tf.saved_model.load(version_dir)
    return _loaded[key].signatures[name]


def next_version(model_root):
    """1 + the largest numeric version folder under `model_root` (1 if none)."""
    if not os.path.isdir(model_root):
        return 1
    versions = [int(n) for n in os.listdir(model_root) if n.isdigit()]
    return max(versions, default=0) + 1


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publishable(folder):
    """Gives `folder` and everything in it the modes a new file or folder gets under
    the umask (`mkdtemp` makes its folder owner-only, `0o700`, whatever the umask)."""
    mask = _umask()
    os.chmod(folder, 0o777 & ~mask)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, (0o777 if os.access(path, os.X_OK) else 0o666) & ~mask)


TMP_PREFIX = ".tmp-export-"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_exports(model_root):
    """Removes the temporary folders that killed exports left in `model_root`.

    Each is named `.tmp-export-<pid>-…` after the process writing it; one whose
    process is gone is stale (a live one is another export under way)."""
    for name in os.listdir(model_root):
        if not name.startswith(TMP_PREFIX):
            continue
        pid = name[len(TMP_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(model_root, name), ignore_errors=True)


def write_atomically(model_root, write_fn):
    """Calls `write_fn(tmp_dir)`, then renames `tmp_dir` to the next version."""
    os.makedirs(model_root, exist_ok=True)
    remove_stale_exports(model_root)
    tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=model_root)
    try:
        write_fn(tmp)
        publishable(tmp)
        while True:
            target = os.path.join(model_root, str(next_version(model_root)))
            try:
                os.rename(tmp, target)  # atomic on one filesystem; fails if taken
                return target
            except OSError:
                if not os.path.exists(target):
                    raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_version(model_root, archive, files=()):
    """Writes `archive` as the next version of `model_root`, atomically, with the
    `files` (of the run folder: the `.keras` model, `meta.json`, the task's
    assets) copied into `assets.extra/` for `evaluate`, `predict` and fine-tuning."""

    def write(tmp):
        archive.write_out(tmp, verbose=False)
        extra = os.path.join(tmp, "assets.extra")
        os.makedirs(extra, exist_ok=True)
        for path in files:
            target = os.path.join(extra, os.path.basename(path))
            if os.path.isdir(path):
                shutil.copytree(path, target)
            elif os.path.exists(path):
                shutil.copy(path, target)

    return write_atomically(model_root, write)


def write_serving_config(export_root, base_path=None):
    """Writes `<root>/models.config` listing every model with a numeric version.

    Each `base_path` is the folder the server will see: `base_path/<model>` when
    given (`/models` for a container that mounts `export_root` there), else the
    model folder's absolute path on this machine.
    """
    entries = []
    for name in sorted(os.listdir(export_root)) if os.path.isdir(export_root) else []:
        base = os.path.join(export_root, name)
        if os.path.isdir(base) and any(v.isdigit() for v in os.listdir(base)):
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"model folder name {name!r} is not a valid serving name")
            served = (base_path.rstrip("/") + "/" + name) if base_path else os.path.abspath(base)
            entries.append(
                "  config {\n"
                f'    name: "{name}"\n'
                f'    base_path: "{served}"\n'
                '    model_platform: "tensorflow"\n'
                "  }\n"
            )
    path = os.path.join(export_root, "models.config")
    os.makedirs(export_root, exist_ok=True)
    with open(path, "w") as f:
        f.write("model_config_list {\n" + "".join(entries) + "}\n")
    return path, len(entries)
