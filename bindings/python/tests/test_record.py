"""Recording a loader's run (``Loader(record=path)``, ``LOADER_RECORD``) for
``loader-check --replay``."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import libloader as L
from hosts import CountingHost
from libloader.testing import FakeSource


def recorded_host(path: Path) -> CountingHost:
    """The C suite's host, its loader recording to ``path``."""
    h = CountingHost(5, 40)
    h.loader.close()
    h.loader = L.Loader(h._issue, h._release, on_change=h._change, on_cancel=h._cancel,
                        config=L.Config(page_size=5, prefetch_distance=0), record=path)
    return h


def test_a_loader_records_its_run(tmp_path: Path, repo: Path) -> None:
    log = tmp_path / "run.log"
    h = recorded_host(log)
    h.loader.set_window(0, 12)
    while h.pending:
        h.answer(h.take())
    h.loader.invalidate()
    while h.pending:
        h.answer(h.take())
    h.loader.close()
    assert h.ledger.released_exactly_once()
    lines = log.read_text().splitlines()
    assert lines[0] == "loader-log 1"
    assert lines[1].startswith("config page_size=5 prefetch_distance=0 ")
    assert "w 0 12 = ok" in lines
    assert "v = ok" in lines
    assert sum(1 for x in lines if x.startswith("s ")) >= 6
    assert lines[-2:] == ["x", lines[-1]] and lines[-1].startswith("> ")
    checker = repo / "target" / "testing" / "release" / "loader-check"
    if checker.exists():
        out = subprocess.run([str(checker), "--replay", str(log)], capture_output=True,
                             text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "all as recorded" in out.stdout


def test_recording_starts_only_before_the_first_call(tmp_path: Path) -> None:
    h = CountingHost(5, 40)
    h.loader.set_window(0, 5)
    lib = L._ffi.lib()
    late = tmp_path / "late.log"
    assert lib.loader_record(h.loader.handle, os.fsencode(late)) == L.Result.RECORD_FAILED
    assert not late.exists()
    h.loader.close()


def test_a_file_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    with pytest.raises(L.RecordFailedError):
        recorded_host(tmp_path / "no such directory" / "run.log")


def test_the_environment_records_every_loader(tmp_path: Path) -> None:
    log = tmp_path / "env.log"
    script = (
        "import libloader as L\n"
        "for _ in range(2):\n"
        "    ld = L.Loader(lambda r: None, lambda a: None)\n"
        "    ld.set_window(0, 10)\n"
        "    ld.close()\n"
    )
    env = {**os.environ, "LOADER_RECORD": str(log)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    first = log.read_text().splitlines()
    second = Path(f"{log}.2").read_text().splitlines()
    for lines in (first, second):
        assert lines[0] == "loader-log 1"
        assert "w 0 10 = ok" in lines
        assert "x" in lines
    # A loader the environment records cannot be given a second recording.
    script = ("import libloader as L\n"
              "L.Loader(lambda r: None, lambda a: None, record=r'" + str(tmp_path / "b.log")
              + "')\n")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True)
    assert out.returncode != 0 and "RecordFailedError" in out.stderr


def test_an_unwritable_environment_path_records_nothing_and_warns(tmp_path: Path) -> None:
    # A host that cannot change its code must not fail because the log cannot be written,
    # but it is told, once per place that makes loaders (the warnings module's default).
    script = ("import libloader as L\n"
              "for _ in range(3):\n"
              "    ld = L.Loader(lambda r: None, lambda a: None)\n"
              "    ld.set_window(0, 10)\n"
              "    ld.close()\n"
              "print('ran')\n")
    missing = tmp_path / "missing"
    env = {**os.environ, "LOADER_RECORD": str(missing / "run.log")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "ran"
    assert not missing.exists()
    assert out.stderr.count("RuntimeWarning") == 1, out.stderr
    assert f"LOADER_RECORD={str(missing / 'run.log')!r} cannot be created (the directory " \
        f"{str(missing)!r} does not exist): the loader is not recorded" in out.stderr, out.stderr
    assert "<string>:3" in out.stderr, out.stderr   # the line that made the loader


@pytest.mark.parametrize("where", ["missing directory", "a directory"])
def test_every_loader_and_feed_warns_when_the_environment_path_cannot_be_created(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    path = tmp_path / "missing" / "run.log" if where == "missing directory" else tmp_path
    monkeypatch.setenv("LOADER_RECORD", str(path))
    with pytest.warns(RuntimeWarning, match="LOADER_RECORD=.* cannot be created .*not recorded"):
        L.Loader(lambda r: None, lambda a: None).close()
    with pytest.warns(RuntimeWarning, match="LOADER_RECORD=.* cannot be created"):
        L.Feed(FakeSource(5).load, max_workers=0).close()


def test_a_writable_environment_path_does_not_warn(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for path in (tmp_path / "run.log", tmp_path / "run.log"):   # created, then truncated
        monkeypatch.setenv("LOADER_RECORD", str(path))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            L.Loader(lambda r: None, lambda a: None).close()
    monkeypatch.setenv("LOADER_RECORD", "")   # empty: off, as in the library
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L.Loader(lambda r: None, lambda a: None).close()
