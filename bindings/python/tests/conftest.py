"""Shared fixtures: the repository's paths and the C suite's host."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

from hosts import CountingHost

REPO = Path(__file__).resolve().parents[3]
"""The repository root (bindings/python/tests/ is three levels below it)."""


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def header() -> Path:
    return Path(os.environ.get("LIBLOADER_HEADER", REPO / "include" / "loader.h"))


@pytest.fixture
def make_host() -> Iterator[Callable[..., CountingHost]]:
    """``make_host(page_size, length, **config)``; every host is closed after the test."""
    made: List[CountingHost] = []

    def make(page_size: int, length: int, **config: object) -> CountingHost:
        h = CountingHost(page_size, length, **config)
        made.append(h)
        return h

    yield make
    for h in made:
        h.loader.close()
