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

# Shared by the children: a loader driven in a loop whose callbacks give the GIL up and take it
# again, which is where CPython ends a daemon thread at exit.
CHURN = textwrap.dedent("""
    import sys, threading, time
    import libloader as L

    def churn(entered, steps=None):
        loader = None

        def issue(read):
            entered.set()
            time.sleep(0.0005)          # gives the GIL up and takes it again, in the callback
            loader.settle(read, object(), count=0, end_of_source=True)

        loader = L.Loader(issue, lambda a: time.sleep(0.0005), config=L.Config(page_size=1))
        step = 0
        while steps is None or step < steps:
            step += 1
            loader.set_window(step % 50, 3)
            loader.invalidate()
""")

# Daemon threads inside libloader calls when the interpreter exits.
CHILD = CHURN + textwrap.dedent("""
    WORKERS = 6
    inside = [threading.Event() for _ in range(WORKERS)]
    for n in range(WORKERS):
        threading.Thread(target=churn, args=(inside[n],), daemon=True).start()
    for event in inside:
        if not event.wait(10):
            sys.exit("a worker never reached its callback")
    time.sleep(0.05)
    print("exiting with workers inside callbacks", flush=True)
""")

# An event loop on a daemon thread whose tasks drive loaders: the interpreter exits while the
# loop's thread is inside a libloader call made from a task.
CHILD_ASYNCIO = CHURN + textwrap.dedent("""
    import asyncio

    inside = threading.Event()

    async def drive():
        while True:
            churn(inside, steps=100)
            await asyncio.sleep(0)

    def run_loop():
        loop = asyncio.new_event_loop()
        for _ in range(3):
            loop.create_task(drive())
        loop.run_forever()

    threading.Thread(target=run_loop, daemon=True).start()
    if not inside.wait(10):
        sys.exit("the loop never reached a callback")
    time.sleep(0.05)
    print("exiting with workers inside callbacks", flush=True)
""")

# Loads on a thread pool, as an executor-driven host runs them: the pool's threads are not
# daemons, so the interpreter waits for the loads in flight at exit; they must finish and the
# process must exit cleanly.
CHILD_EXECUTOR = CHURN + textwrap.dedent("""
    from concurrent.futures import ThreadPoolExecutor

    inside = threading.Event()
    pool = ThreadPoolExecutor(max_workers=4)
    for n in range(4):
        pool.submit(churn, inside, 200)
    if not inside.wait(10):
        sys.exit("no load reached a callback")
    print("exiting with workers inside callbacks", flush=True)
""")


def run_children(child: str, runs: int = RUNS) -> None:
    for run in range(runs):
        p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                           timeout=60)
        assert "exiting with workers inside callbacks" in p.stdout, (run, p.stdout, p.stderr)
        assert "FATAL" not in p.stderr, (run, p.stderr)
        assert p.returncode == 0, (run, p.returncode, p.stderr)


def test_exiting_with_daemon_threads_inside_calls_does_not_abort() -> None:
    run_children(CHILD)


def test_exiting_with_an_event_loop_thread_inside_calls_does_not_abort() -> None:
    run_children(CHILD_ASYNCIO, RUNS // 2)


def test_exiting_with_executor_loads_in_flight_does_not_abort() -> None:
    run_children(CHILD_EXECUTOR, RUNS // 2)


if __name__ == "__main__":
    # `make py-exit-versions` runs this file directly with each Python it finds (pytest is
    # not needed): the exit path differs between interpreter versions.
    for test in (test_exiting_with_daemon_threads_inside_calls_does_not_abort,
                 test_exiting_with_an_event_loop_thread_inside_calls_does_not_abort,
                 test_exiting_with_executor_loads_in_flight_does_not_abort):
        test()
    print(f"exit tests passed on Python {sys.version.split()[0]}")
