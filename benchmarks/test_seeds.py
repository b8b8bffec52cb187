"""Training tests across seeds and oneDNN settings: a table of which pass.

A test that asserts a learned figure must hold on any seed and CPU, not only on the
suite's default seed. This reruns the given tests (pytest node ids) once per seed
(`KERAS_ATTN_TEST_SEED`) and oneDNN setting (`TF_ENABLE_ONEDNN_OPTS`), two at a time,
and writes each outcome and duration to JSON:

    python benchmarks/test_seeds.py --seeds 0-9 \\
        tests/training/test_dnc_babi.py::test_the_model_fits_a_few_questions_and_round_trips

With `--one-process` the tests of one seed and setting share one pytest process (its
start-up, some 10 s, paid once), and each test's outcome is read from pytest's JUnit XML.
"""

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from concurrent.futures import ThreadPoolExecutor

from results_io import default_path, machine, revision, write_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seeds(text):
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def environment(seed, onednn):
    return {**os.environ, "KERAS_ATTN_TEST_SEED": str(seed), "TF_ENABLE_ONEDNN_OPTS": onednn,
            "TF_CPP_MIN_LOG_LEVEL": "3"}


def run(test, seed, onednn):
    env = environment(seed, onednn)
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                           "no:cacheprovider", test], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    failure = [line for line in done.stdout.splitlines() if line.startswith("E ")][:3]
    return {"test": test, "seed": seed, "onednn": onednn, "passed": done.returncode == 0,
            "seconds": round(time.time() - start, 1), "failure": failure}


def run_together(tests, seed, onednn):
    """One pytest process for `tests`: a row for each test case it collected."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.xml")
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p",
                               "no:cacheprovider", f"--junitxml={report}", *tests], cwd=ROOT,
                              env=environment(seed, onednn), capture_output=True, text=True)
        if not os.path.exists(report):
            raise RuntimeError(f"pytest wrote no report:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        cases = ElementTree.parse(report).getroot().iter("testcase")
        rows = []
        for case in cases:
            failed = case.find("failure") if case.find("failure") is not None else case.find("error")
            name = case.get("file", case.get("classname").replace(".", "/") + ".py")
            rows.append({"test": f"{name}::{case.get('name')}", "seed": seed, "onednn": onednn,
                         "passed": failed is None and case.find("skipped") is None,
                         "seconds": round(float(case.get("time")), 1),
                         "failure": [] if failed is None else [failed.get("message", "")[:300]]})
        return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="+", help="pytest node ids")
    parser.add_argument("--seeds", type=seeds, default=seeds("0-9"), help="e.g. 0-9")
    parser.add_argument("--onednn", default="0,1", help="TF_ENABLE_ONEDNN_OPTS values")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--output", default=default_path("test_seeds"))
    parser.add_argument("--one-process", action="store_true",
                        help="run the tests of one seed and setting in one pytest process")
    args = parser.parse_args()
    ran = revision()  # what the tests run on, before anything can change it
    settings = list(itertools.product(args.seeds, args.onednn.split(",")))
    with ThreadPoolExecutor(args.workers) as pool:
        if args.one_process:
            rows = [row for rows in pool.map(lambda case: run_together(args.tests, *case), settings)
                    for row in rows]
        else:
            cases = [(test, *setting) for test in args.tests for setting in settings]
            rows = list(pool.map(lambda case: run(*case), cases))
    for row in rows:
        print(f"{row['test'].rsplit('::', 1)[-1][:60]:<60} seed {row['seed']} oneDNN "
              f"{row['onednn']}: {'pass' if row['passed'] else 'FAIL'} ({row['seconds']} s)"
              + (f"  {row['failure'][0]}" if row["failure"] else ""))
    write_results({"benchmark": "test_seeds", **ran, "machine": machine(), "config": vars(args), "rows": rows}, args.output)


if __name__ == "__main__":
    main()
