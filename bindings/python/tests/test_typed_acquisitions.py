"""Acquisitions are typed end to end: a ``Loader[list[int]]`` takes ``list[int]`` in settle and
gives it back in on_release and in every view page. ``make py-mypy`` checks this file with
``mypy --strict``; pytest runs it, and (when mypy is installed) checks that mypy rejects a
program that mixes the types up, so the annotations cannot silently decay to ``Any``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, List

import pytest

import libloader as L

if TYPE_CHECKING:
    from typing import assert_type
else:
    def assert_type(value: Any, _type: Any) -> Any:
        return value


def _answer_all(loader: L.Loader[List[int]], reads: List[L.Read]) -> None:
    """Answers every pending read from the source ``0, 1, 2, ...`` (ends at item 6)."""
    while reads:
        read = reads.pop(0)
        at = int.from_bytes(read.cursor, "big") if read.cursor else 0
        if read.direction is L.Direction.BACKWARD:   # the items before the cursor
            lo = max(at - read.limit, 0)
            rows = list(range(lo, at))
            answer = loader.settle(read, rows, next_cursor=lo.to_bytes(8, "big") if lo else b"",
                                   end_of_source=lo == 0)
        else:
            rows = list(range(at, min(at + read.limit, 6)))
            end = at + len(rows)
            answer = loader.settle(read, rows, next_cursor=end.to_bytes(8, "big"),
                                   end_of_source=end == 6)
        assert_type(answer, L.Answer)


def test_a_typed_loader_gives_typed_pages() -> None:
    reads: List[L.Read] = []
    released: List[List[int]] = []
    config = L.Config(page_size=3, prefetch_distance=0)
    with L.Loader[List[int]](reads.append, released.append, config=config) as loader:
        assert_type(loader, L.Loader[List[int]])
        loader.set_window(0, 6)
        _answer_all(loader, reads)
        view = loader.view()
        assert_type(view, L.View[List[int]])
        page = view.pages[0]
        assert_type(page, L.Page[List[int]])
        assert_type(page.acquisition, List[int])
        first: int = page.acquisition[0]
        assert first == 0
        assert [x for p in view.pages for x in p.acquisition] == list(range(6))
    assert sorted(x for acq in released for x in acq) == list(range(6))


def test_the_acquisition_type_is_inferred_from_on_release() -> None:
    reads: List[L.Read] = []
    released: List[List[int]] = []
    with L.Loader(reads.append, released.append) as loader:
        assert_type(loader, L.Loader[List[int]])
        assert_type(loader.view().pages, tuple[L.Page[List[int]], ...])


MISTYPED = '''
from typing import List
import libloader as L

released: List[List[int]] = []
loader = L.Loader[List[int]](lambda r: None, released.append)
loader.settle(1, "not a list of ints")
name: str = loader.view().pages[0].acquisition
'''


def test_mypy_rejects_a_mistyped_acquisition(tmp_path: Any) -> None:
    api = pytest.importorskip("mypy.api")
    program = tmp_path / "mistyped.py"
    program.write_text(MISTYPED)
    out, err, status = api.run(["--strict", "--no-incremental",
                                "--python-version", f"{sys.version_info[0]}.{sys.version_info[1]}",
                                str(program)])
    assert status == 1, out + err
    assert 'Argument 2 to "settle" of "Loader" has incompatible type "str"' in out, out
    assert 'Incompatible types in assignment (expression has type "list[int]"' in out, out
