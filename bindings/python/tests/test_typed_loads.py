"""A load function's signature is checked statically: ``mypy --strict`` rejects a load of the
wrong parameters or result for :class:`libloader.Feed`, :class:`libloader.aio.Feed` and
:func:`libloader.testing.check_load`, and accepts every documented form (with or without
``until=None``, ``**kwargs``, a lambda, an ``async def`` or a plain function for asyncio).
The cases are the files in ``typing_cases/``: each line of ``loads_rejected.py`` marked
``# rejected`` must get an error and no other line may; ``loads_accepted.py`` must get none."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, Set

import pytest

import libloader

CASES = Path(__file__).resolve().parent / "typing_cases"

_ERROR = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): error: ", re.MULTILINE)


def _marked(path: Path) -> Set[int]:
    return {n for n, text in enumerate(path.read_text().splitlines(), 1) if "# rejected" in text}


def test_mypy_rejects_loads_of_the_wrong_signature_and_accepts_the_right_ones(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api = pytest.importorskip("mypy.api")
    # The package checked is the one the tests import, wherever it is.
    monkeypatch.setenv("MYPYPATH", str(Path(libloader.__file__).resolve().parents[1]))
    rejected, accepted = CASES / "loads_rejected.py", CASES / "loads_accepted.py"
    out, err, _status = api.run(["--strict", "--no-incremental", "--show-traceback",
                                 "--python-version",
                                 f"{sys.version_info[0]}.{sys.version_info[1]}",
                                 str(rejected), str(accepted)])
    lines: Dict[str, Set[int]] = {rejected.name: set(), accepted.name: set()}
    for m in _ERROR.finditer(out):
        lines.setdefault(Path(m["path"]).name, set()).add(int(m["line"]))
    assert lines[accepted.name] == set(), out + err
    missed = sorted(_marked(rejected) - lines[rejected.name])
    assert not missed, f"mypy accepted the wrong loads on lines {missed}:\n{out}{err}"
    extra = sorted(lines[rejected.name] - _marked(rejected))
    assert not extra, f"mypy rejected unmarked lines {extra}:\n{out}{err}"
    assert set(lines) == {rejected.name, accepted.name}, out + err
