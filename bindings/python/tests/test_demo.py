"""The SQLite demo, run briefly: its report's checks hold, and they can fail."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List

import pytest

import libloader

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "sqlite_feed.py"


def run_demo(*args: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ)
    # The package the tests use, installed or not.
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(libloader.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_demo_reports_every_check_passing() -> None:
    p = run_demo("--duration", "2.5", "--seed", "3", "--fail-rate", "0.1", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r: Dict[str, Any] = json.loads(p.stdout)
    assert r["ok"] is True
    assert all(r["checks"].values()), r["checks"]
    assert set(r["checks"]) == {"quiescent", "view_matches_sql", "view_covers_window",
                                "invariants_held", "released_exactly_once", "no_errors"}
    acq = r["acquisitions"]
    assert acq["made"] == acq["released"] > 0
    assert r["source"]["invalidations"] > 0 and r["source"]["inserted"] > 0
    assert r["reads_by_kind"]["finite"] > 0 and r["reads_by_kind"]["chain"] > 0
    assert r["answers"]["current"] > 0
    fl = r["failures"]
    assert fl["injected"] > 0 and fl["own"] > 0
    # A failure injected into a load whose read was already answered (cancelled) fails
    # nothing; every other one failed its read, own or superseded.
    assert fl["own"] + fl["superseded"] <= fl["injected"]
    assert 0 <= fl["injected_while_settling"] <= fl["injected"]
    assert r["retries"]["by_backoff_timer"] > 0
    # A ranged change that nothing held or in flight can contain takes no epoch.
    assert r["final"]["cover_epoch"] == r["final"]["epoch"] > 0
    assert r["final"]["items"] > 0 and r["invariants"]["samples"] > 10
    # The window went deep into the 100,000 rows; repairs read back from the anchor page.
    assert r["source"]["rows_at_start"] == 100_000 and r["final"]["window"][0] > 1_000
    assert r["reads_by_direction"]["backward"] > 0 and r["reads_by_direction"]["forward"] > 0
    rec = r["recovery"]
    assert rec["window"] == 100 and rec["recoveries"] > 0
    assert 0 < rec["rows_loaded_per_recovery"] < r["source"]["rows_at_start"]
    assert 0 <= r["fresh_fraction"] <= 1
    # The writer reports each changed row as a one-row range; a library without ranged
    # invalidation falls back to whole invalidations, and the report says so.
    rg = r["ranged"]
    assert rg["whole_invalidation_rows_by_formula"] == 100 + 2 * rec["prefetch"]
    if hasattr(libloader._ffi.lib(), "loader_invalidate_range"):
        assert rg["mode"] == "ranged" and rg["fallback"] is None
        changed = r["source"]["inserted"] + r["source"]["deleted"]
        assert rg["ranged_invalidations"] == r["source"]["invalidations"] == changed
        assert rg["ranged_repairs"] > 0 and rg["bounded_loads"] > 0
        assert rg["rows_per_ranged_repair"] == round(
            rg["rows_reread"] / rg["ranged_repairs"], 1)
        assert rg["rows_per_ranged_repair"] < rg["whole_invalidation_rows_by_formula"]
    else:
        assert rg["mode"] == "whole" and "loader_invalidate_range" in rg["fallback"]
        assert rg["ranged_invalidations"] == rg["bounded_loads"] == 0
    # Progress went to stderr as plain lines (not a TTY), each within 80 columns.
    lines = p.stderr.splitlines()
    assert lines and "\r" not in p.stderr
    for line in lines:
        assert len(line) <= 80, line
        assert "window at row" in line and "in flight" in line and "failure" in line
        assert "fresh" in line or "refreshing" in line


def test_the_human_report() -> None:
    p = run_demo("--duration", "1", "--seed", "5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "all checks passed" in p.stdout
    for word in ("reads", "recovery", "rows loaded per recovery", "backward", "answers",
                 "failures", "retries", "acquisitions", "final view"):
        assert word in p.stdout
    ranged = hasattr(libloader._ffi.lib(), "loader_invalidate_range")
    assert ("rows re-read" in p.stdout and "(formula)" in p.stdout) if ranged else (
        "no loader_invalidate_range" in p.stdout)
    assert "in flight" in p.stdout and "fresh" in p.stdout
    assert p.stdout.rstrip().endswith("all checks passed")   # the report comes last


def test_the_control_run_invalidates_whole() -> None:
    p = run_demo("--duration", "1", "--seed", "5", "--invalidate", "whole", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    assert r["ok"] is True and r["ranged"]["mode"] == "whole"
    assert r["ranged"]["fallback"] is None and r["ranged"]["ranged_invalidations"] == 0


def test_bad_flags_are_usage_errors() -> None:
    p = run_demo("--fail-rate", "2")
    assert p.returncode == 2 and "--fail-rate" in p.stderr


def load_demo(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("sqlite_feed", DEMO)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "sqlite_feed", mod)
    spec.loader.exec_module(mod)
    return mod


def test_a_source_that_skips_rows_fails_the_check(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's checks are worth something only if a wrong view fails them."""
    demo = load_demo(monkeypatch)
    honest = demo.rows_after

    def skipping(conn: Any, cursor: bytes, limit: int) -> List[Any]:
        rows: List[Any] = honest(conn, cursor, limit + 1)
        return rows[:1] + rows[2:]              # a buggy host drops the second row

    monkeypatch.setattr(demo, "rows_after", skipping)
    status = demo.main(["--duration", "0.3", "--json", "--fail-rate", "0"])
    r = json.loads(capsys.readouterr().out)
    assert status == 1 and r["ok"] is False
    assert r["checks"]["view_matches_sql"] is False
    assert r["checks"]["released_exactly_once"] is True
