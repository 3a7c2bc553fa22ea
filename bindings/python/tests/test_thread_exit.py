"""An interpreter that exits while daemon threads are inside libloader calls must exit
cleanly. At shutdown CPython ends such a thread with ``pthread_exit`` as soon as it tries to
take the GIL again, which it does inside a callback here: the forced unwind then passes through
the library. Before the library let it pass, the process aborted with "FATAL: exception not
rethrown"."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RUNS = 20

CHILD = textwrap.dedent("""
    import sys, threading, time
    import libloader as L

    WORKERS = 6
    inside = [threading.Event() for _ in range(WORKERS)]

    def worker(n):
        loader = None

        def issue(read):
            inside[n].set()
            time.sleep(0.0005)          # gives the GIL up and takes it again, in the callback
            loader.settle(read, object(), count=0, end_of_source=True)

        def release(acquisition):
            time.sleep(0.0005)

        loader = L.Loader(issue, release, config=L.Config(page_size=1))
        step = 0
        while True:
            step += 1
            loader.set_window(step % 50, 3)
            loader.invalidate()

    for n in range(WORKERS):
        threading.Thread(target=worker, args=(n,), daemon=True).start()
    for event in inside:
        if not event.wait(10):
            sys.exit("a worker never reached its callback")
    time.sleep(0.05)
    print("exiting with workers inside callbacks", flush=True)
""")


def test_exiting_with_daemon_threads_inside_calls_does_not_abort() -> None:
    for run in range(RUNS):
        p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                           timeout=60)
        assert "exiting with workers inside callbacks" in p.stdout, (run, p.stdout, p.stderr)
        assert "FATAL" not in p.stderr, (run, p.stderr)
        assert p.returncode == 0, (run, p.returncode, p.stderr)
