"""Training speed of the memory models against their PyTorch reference implementations.

    python benchmarks/memory_speed.py --peer-python PYTHON [--pytorch-ntm CLONE]
                                      [--batch-sizes 1,16] [--length 10] [--rounds 5]
                                      [--threads 1]

Side by side, in one run, on the copy task (8-bit vectors, `--length` of them, a
delimiter, the copy: `2 · length + 1` steps), a full training step each
(forward, backward, RMSprop with momentum 0.9, gradients clipped to norm 10):

* **DNC**: ours (`models.dnc.DNCSequenceModel`) against the `dnc` package of the package
  registry (ixaxaar/pytorch-dnc, `dnc.DNC`), both an LSTM controller of 100 units
  (one layer), a memory of 64 × 20 and one read head.
* **NTM**: ours (`models.ntm.NTMSequenceModel`) against a PyTorch NTM written here after
  pytorch-ntm's design (an `LSTMCell` controller of 100 fed the input and the last
  read, one read and one write head, content then location addressing with a shift
  of ±1 and sharpening, a memory of 128 × 20), the same sizes; and, with
  `--pytorch-ntm CLONE`, against loudinthecloud/pytorch-ntm's own code
  (`ntm.aio.EncapsulatedNTM(9, 8, 100, 1, 1, 128, 20)`, stepped as its `train.py`
  steps it) from a local clone (no PyTorch NTM package exists; the clone is never a
  dependency of this project).

Ours runs on TensorFlow and on JAX (each a compiled step, as `keras-attn train`
compiles it). Each peer runs twice: eagerly, a Python loop over the steps, as its
project does (`torch`, `pytorch-ntm`), and with its forward pass under
`torch.compile` (`torch.compile`, `pytorch-ntm.compile`; the backward pass and the
optimiser stay as they are). What differs beyond the framework: the peers'
initialisations are their projects' own (orthogonal and Xavier in pytorch-dnc,
PyTorch's defaults in the rewrite), which change no step's cost.

Each implementation runs in its own long-lived worker process, warmed up (compiled)
before timing; the rounds alternate between the workers of one (model, batch) so
that a change in the machine's load falls on all of them; the figure is the median
round's sequences per second, and each of our backends' ratio to each peer.
`--peer-python` is a Python with `torch` and `dnc` installed (never a dependency of this project: `pip install torch dnc` in a venv of
its own); ours run with this Python. `--threads` bounds every framework's threads
alike (default: all cores).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

BITS = 8
SIZES = {"dnc": {"controller_units": 100, "memory_size": 64, "memory_width": 20,
                 "read_heads": 1},
         "ntm": {"controller_units": 100, "memory_size": 128, "memory_width": 20,
                 "read_heads": 1, "write_heads": 1}}
LEARNING_RATE, CLIPNORM = 1e-4, 10.0


def copy_data(batch_size, length, seed=0):
    """One copy batch as NumPy: inputs (B, T, 9) and targets (B, T, 8 + 1 mask channel)."""
    import importlib.util

    import numpy as np

    # By its path: the peer's Python has no Keras, which `keras_attn` would import.
    path = os.path.join(ROOT, "training", "tasks", "ntm", "algorithmic.py")
    spec = importlib.util.spec_from_file_location("algorithmic", path)
    algorithmic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(algorithmic)
    return algorithmic.copy_batch(np.random.default_rng(seed), batch_size, length, bits=BITS)


# -- our models (Keras) ---------------------------------------------------------------
def keras_step(model_name, batch_size, length):
    import keras  # noqa: F401  (the backend is set by the environment)

    from keras_attn.models.dnc import DNCSequenceModel
    from keras_attn.models.ntm import NTMSequenceModel, compile_ntm

    model_class = DNCSequenceModel if model_name == "dnc" else NTMSequenceModel
    model = model_class(input_bits=BITS + 1, output_bits=BITS, **SIZES[model_name])
    compile_ntm(model, learning_rate=LEARNING_RATE, clipnorm=CLIPNORM, jit_compile=True)
    x, y = copy_data(batch_size, length)
    # train_on_batch returns the loss as a Python float: each step is waited for.
    return lambda: model.train_on_batch(x, y)


# -- the PyTorch peers ----------------------------------------------------------------
def torch_ntm_class():
    import torch
    from torch import nn

    class PeerNTM(nn.Module):
        """An NTM after pytorch-ntm's design: LSTMCell controller, one read and one
        write head (content, interpolation, 3-tap circular shift, sharpening)."""

        def __init__(self, inputs, outputs, units, memory_size, memory_width):
            super().__init__()
            self.n, self.m = memory_size, memory_width
            self.controller = nn.LSTMCell(inputs + memory_width, units)
            head = memory_width + 1 + 1 + 3 + 1  # key, β, g, shift, γ
            self.read_head = nn.Linear(units, head)
            self.write_head = nn.Linear(units, head + 2 * memory_width)  # + erase, add
            self.output = nn.Linear(units + memory_width, outputs)
            self.register_buffer("memory_bias", torch.full((memory_size, memory_width), 1e-6))
            self.read_bias = nn.Parameter(torch.randn(1, memory_width) * 0.01)
            self.units = units

        def address(self, memory, params, previous):
            m = self.m
            key, beta = params[:, :m], nn.functional.softplus(params[:, m])
            gate = torch.sigmoid(params[:, m + 1])
            shift = torch.softmax(params[:, m + 2 : m + 5], dim=1)
            gamma = 1 + nn.functional.softplus(params[:, m + 5])
            similarity = nn.functional.cosine_similarity(
                memory + 1e-16, key.unsqueeze(1) + 1e-16, dim=-1)
            content = torch.softmax(beta.unsqueeze(1) * similarity, dim=1)
            gated = gate.unsqueeze(1) * content + (1 - gate.unsqueeze(1)) * previous
            shifted = (shift[:, :1] * torch.roll(gated, 1, 1) + shift[:, 1:2] * gated
                       + shift[:, 2:] * torch.roll(gated, -1, 1))
            sharp = shifted ** gamma.unsqueeze(1)
            return sharp / (sharp.sum(1, keepdim=True) + 1e-16)

        def forward(self, x):
            batch, steps, _ = x.shape
            memory = self.memory_bias.expand(batch, -1, -1)
            read = self.read_bias.expand(batch, -1)
            h = x.new_zeros(batch, self.units)
            c = x.new_zeros(batch, self.units)
            w_read = x.new_zeros(batch, self.n)
            w_write = x.new_zeros(batch, self.n)
            outputs = []
            for t in range(steps):
                h, c = self.controller(torch.cat([x[:, t], read], 1), (h, c))
                w_read = self.address(memory, self.read_head(h), w_read)
                read = torch.bmm(w_read.unsqueeze(1), memory).squeeze(1)
                write = self.write_head(h)
                w_write = self.address(memory, write[:, : self.m + 6], w_write)
                erase = torch.sigmoid(write[:, self.m + 6 : 2 * self.m + 6])
                add = write[:, 2 * self.m + 6 :]
                memory = (memory * (1 - w_write.unsqueeze(2) * erase.unsqueeze(1))
                          + w_write.unsqueeze(2) * add.unsqueeze(1))
                outputs.append(self.output(torch.cat([h, read], 1)))
            return torch.stack(outputs, 1)

    return PeerNTM


def reference_ntm(path):
    """pytorch-ntm's `EncapsulatedNTM` from a clone at `path`, and a forward pass
    over a `(B, T, inputs)` batch as its `train.py` steps it, one time step a call."""
    import torch

    sys.path.insert(0, os.path.abspath(path))
    from ntm.aio import EncapsulatedNTM

    sizes = SIZES["ntm"]
    net = EncapsulatedNTM(BITS + 1, BITS, sizes["controller_units"], 1,
                          sizes["write_heads"], sizes["memory_size"], sizes["memory_width"])

    def forward(x):
        net.init_sequence(x.shape[0])
        return torch.stack([net(x[:, t])[0] for t in range(x.shape[1])], 1)

    return net, forward


def torch_step(model_name, batch_size, length, compiled=False, pytorch_ntm=None):
    import torch

    sizes = SIZES[model_name]
    # pytorch-ntm's network ends in a sigmoid (its loss is BCELoss); the others give logits.
    probabilities = pytorch_ntm is not None
    if probabilities:
        net, forward = reference_ntm(pytorch_ntm)
    elif model_name == "dnc":
        from dnc import DNC

        net = DNC(input_size=BITS + 1, hidden_size=sizes["controller_units"], rnn_type="lstm",
                  num_layers=1, num_hidden_layers=1, nr_cells=sizes["memory_size"],
                  cell_size=sizes["memory_width"], read_heads=sizes["read_heads"],
                  batch_first=True, gpu_id=-1)

        def forward(x):
            output, _ = net(x, (None, None, None), reset_experience=True,
                            pass_through_memory=True)
            return output[..., :BITS]
    else:
        net = torch_ntm_class()(BITS + 1, BITS, sizes["controller_units"],
                                sizes["memory_size"], sizes["memory_width"])
        forward = net
    if compiled:
        forward = torch.compile(forward)
    optimizer = torch.optim.RMSprop(net.parameters(), lr=LEARNING_RATE, momentum=0.9)
    x, y = (torch.from_numpy(a) for a in copy_data(batch_size, length))
    target, counted = y[..., :-1], y[..., -1:]

    def step():
        optimizer.zero_grad()
        outputs = forward(x)
        nats = (torch.nn.functional.binary_cross_entropy(outputs, target, reduction="none")
                if probabilities else torch.nn.functional.binary_cross_entropy_with_logits(
                    outputs, target, reduction="none"))
        loss = (nats * counted).sum() / batch_size
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), CLIPNORM)
        optimizer.step()
        return float(loss.detach())

    return step


def worker(args):
    """Builds one step, warms it up, then answers `N` lines with N steps' seconds."""
    peer, _, mode = args.framework.partition(".")
    if peer in PEERS:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        step = torch_step(args.model, args.batch_size, args.length, compiled=mode == "compile",
                          pytorch_ntm=args.pytorch_ntm if peer == "pytorch-ntm" else None)
    else:
        step = keras_step(args.model, args.batch_size, args.length)
    for _ in range(3):
        step()
    print("ready", flush=True)
    for line in sys.stdin:
        start = time.perf_counter()
        for _ in range(int(line)):
            step()
        print(time.perf_counter() - start, flush=True)


# -- the side-by-side run -------------------------------------------------------------
#: The peers' implementations: `torch` is the `dnc` package for the DNC and the
#: rewrite above for the NTM; `pytorch-ntm` is that project's code (NTM only).
PEERS = ("torch", "pytorch-ntm")


def peers_of(model, args):
    """The peer workers of a row, each eager and under `torch.compile`."""
    names = ["torch"] + (["pytorch-ntm"] if model == "ntm" and args.pytorch_ntm else [])
    return [f"{name}{mode}" for name in names for mode in ("", ".compile")]


def is_peer(framework):
    return framework.partition(".")[0] in PEERS

def environment(framework, threads):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if framework in ("tensorflow", "jax"):
        env["KERAS_BACKEND"] = framework
    if threads:
        env |= {"TF_NUM_INTRAOP_THREADS": str(threads), "TF_NUM_INTEROP_THREADS": str(threads),
                "OMP_NUM_THREADS": str(threads)}
        if threads == 1:
            env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return env


class Worker:
    def __init__(self, python, framework, model, batch_size, args):
        self.framework = framework
        command = [python, os.path.abspath(__file__), "--worker", "--framework", framework,
                   "--model", model, "--batch-size", str(batch_size), "--length",
                   str(args.length), "--threads", str(args.threads)]
        if framework.startswith("pytorch-ntm"):
            command += ["--pytorch-ntm", args.pytorch_ntm]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=environment(framework, args.threads))
        if self.process.stdout.readline().strip() != "ready":
            raise SystemExit(f"memory_speed: the {framework} {model} worker did not start "
                             f"(exit {self.process.wait()})")

    def seconds(self, steps):
        self.process.stdin.write(f"{steps}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def steps_for(worker_, budget_seconds=4.0):
    """Steps that take about `budget_seconds` on this worker (measured once)."""
    once = worker_.seconds(1)
    return max(1, round(budget_seconds / max(once, 1e-4)))


def compare(model, batch_size, args, peer_python):
    frameworks = [(sys.executable, backend) for backend in args.backends.split(",")]
    frameworks += [(peer_python, peer) for peer in peers_of(model, args)]
    workers = [Worker(python, framework, model, batch_size, args)
               for python, framework in frameworks]
    try:
        steps = {w.framework: steps_for(w) for w in workers}
        rates = {w.framework: [] for w in workers}
        for _ in range(args.rounds):
            for w in workers:
                rates[w.framework].append(
                    steps[w.framework] * batch_size / w.seconds(steps[w.framework]))
    finally:
        for w in workers:
            w.close()
    median = {name: statistics.median(values) for name, values in rates.items()}
    ours = [name for name in median if not is_peer(name)]
    peers = [name for name in median if is_peer(name)]
    return {"model": model, "batch_size": batch_size, "rounds": rates,
            "sequences_per_second": median,
            "ratios": {f"{o}/{p}": median[o] / median[p] for o in ours for p in peers}}


def print_table(rows):
    print(f"\nsequences / s, training steps on copy (length {rows[0]['length']}), median of "
          "rounds; then each of ours against each peer")
    for row in rows:
        rate = row["sequences_per_second"]
        print(f"  {row['model']} batch {row['batch_size']}: "
              + ", ".join(f"{name} {value:.1f}" for name, value in rate.items()))
        print("    " + ", ".join(f"{pair} {ratio:.2f}×" for pair, ratio in row["ratios"].items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default=sys.executable,
                        help="a Python with torch and dnc installed")
    parser.add_argument("--pytorch-ntm", metavar="CLONE",
                        help="a clone of loudinthecloud/pytorch-ntm: its NTM joins the peers")
    parser.add_argument("--models", default="dnc,ntm")
    parser.add_argument("--batch-sizes", default="1,16")
    parser.add_argument("--backends", default="tensorflow,jax", help="ours")
    parser.add_argument("--length", type=int, default=10, help="copy length (2L + 1 steps)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="0: each framework's default")
    parser.add_argument("--output", help="JSON path (default benchmarks/results/memory_speed.json)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--framework", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    from results_io import default_path, header, revision, write_results

    peer = subprocess.run([args.peer_python, "-c", "import torch, dnc; print(torch.__version__)"],
                          capture_output=True, text=True)
    if args.pytorch_ntm and not os.path.isfile(os.path.join(args.pytorch_ntm, "ntm", "aio.py")):
        raise SystemExit(f"memory_speed: --pytorch-ntm must be a clone of "
                         f"loudinthecloud/pytorch-ntm (with ntm/aio.py); received "
                         f"{args.pytorch_ntm!r}")
    if peer.returncode:
        raise SystemExit(f"memory_speed: --peer-python {args.peer_python!r} cannot import torch "
                         f"and dnc (pip install torch dnc there): {peer.stderr.strip()[-200:]}")
    ran = revision()  # what the workers run, before anything can change it
    rows = []
    for model in args.models.split(","):
        for batch_size in map(int, args.batch_sizes.split(",")):
            row = compare(model, batch_size, args, args.peer_python) | {"length": args.length}
            rows.append(row)
            print(f"  {model} batch {batch_size}: " + json.dumps(
                {k: round(v, 1) for k, v in row["sequences_per_second"].items()}), flush=True)
    print_table(rows)
    result = header("memory_speed", args) | ran | {
        "command": " ".join(["python", "benchmarks/memory_speed.py", *sys.argv[1:]]),
        "torch": peer.stdout.strip(), "sizes": SIZES, "rows": rows,
    }
    write_results(result, args.output or default_path("memory_speed"))


if __name__ == "__main__":
    main()
