"""One cpu executable run from 8 threads, 100 runs each (the GIL is released while it runs): every
output identical to a single-threaded run's. Also run under the sanitizers."""

import threading

import numpy as np


def test_eight_threads_share_one_executable(small_cnn_cpu, small_cnn_input):
    expected = small_cnn_cpu(small_cnn_input).tobytes()
    threads, runs = 8, 100
    outputs = [[] for _ in range(threads)]
    errors = []
    start = threading.Barrier(threads)

    def work(i):
        try:
            start.wait()
            for _ in range(runs):
                # Each thread feeds its own copy, so a borrowed feed is freed from many threads.
                outputs[i].append(small_cnn_cpu.run(None, {"image": small_cnn_input.copy()})[0])
        except Exception as e:  # Reported below: an exception in a thread would not fail the test.
            errors.append(e)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    # Checked after all runs, so an output overwritten by a later run shows too.
    assert all(len(o) == runs for o in outputs)
    assert all(out.tobytes() == expected for o in outputs for out in o)


def test_a_run_releases_the_gil():
    import time

    import tessel
    from conftest import SMALL_CNN

    # A batch large enough that one run lasts many GIL switch intervals (5 ms) on a slow host too.
    exe = tessel.compile(SMALL_CNN, target="cpu", batch=1024, threads=1)
    x = np.zeros((1024, 1, 28, 28), np.float32)
    exe(x)  # Warm: the timed run is the run alone.
    took = {}

    def work():
        start = time.perf_counter()
        exe(x)
        took["run"] = time.perf_counter() - start

    # This thread keeps taking the GIL while the other runs; were the run to hold it, one gap
    # would last the whole run.
    worker = threading.Thread(target=work)
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert took["run"] > 0.02
    assert longest < took["run"] / 2, (longest, took["run"])
