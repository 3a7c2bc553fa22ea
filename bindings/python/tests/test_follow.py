"""Follow mode and appends through the Python bindings: ``Loader.follow``/``appended``,
``Feed.follow``/``appended``/``following`` and the same on ``aio.Feed``: the window pinned
to a growing source's end, each append loaded alone, a move away unpinning and a move back
pinning again."""

from __future__ import annotations

import asyncio
from typing import Dict

from libloader import Config, Feed, aio
from libloader.testing import FakeSource

LEN = 20


def config(**kw: object) -> Config:
    base: Dict[str, object] = dict(page_size=10, prefetch_distance=0)
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def make(src: "FakeSource[str]") -> "Feed[str]":
    return Feed(src.load, config=config(), on_release=src.on_release)


def window(feed: "Feed[str]") -> list:  # type: ignore[type-arg]
    s = feed.state
    items = feed.items()
    skip = s.window_start - s.covered_start
    return items[skip:skip + s.window_len]


def test_a_followed_feed_shows_each_append_and_loads_only_it() -> None:
    src: FakeSource[str] = FakeSource(95, item=lambda i: f"line {i}")
    with make(src) as feed:
        feed.set_window(0, LEN)
        assert feed.settled(5)
        assert not feed.following
        feed.follow()
        assert feed.settled(5)
        assert feed.following
        assert window(feed) == src.rows[-LEN:]
        before = feed.stats().items_read
        for i in range(95, 130):
            src.append(f"line {i}", feed)
            assert feed.settled(5)
            assert window(feed) == src.rows[-LEN:]
        assert feed.stats().items_read - before == 35
        assert feed.following
    assert src.released_exactly_once()


def test_scrolling_away_unpins_and_back_to_the_end_pins_again() -> None:
    src: FakeSource[str] = FakeSource(200)
    with make(src) as feed:
        feed.set_window(0, LEN)
        feed.follow()
        assert feed.settled(5)
        feed.set_window(50, LEN)
        assert feed.settled(5)
        assert not feed.following
        before = feed.stats().items_read
        for i in range(5):
            src.append(f"new {i}", feed)
        assert feed.settled(5)
        assert feed.stats().items_read == before
        assert feed.state.window_start == 50
        feed.set_window(200 - LEN, LEN)
        assert feed.settled(5)
        assert feed.following
        assert window(feed) == src.rows[-LEN:]
        feed.follow(False)
        assert not feed.following
    assert src.released_exactly_once()


def test_the_asyncio_feed_follows() -> None:
    async def main() -> None:
        src: FakeSource[str] = FakeSource(60)
        async with aio.Feed(src.aload, config=config(), on_release=src.on_release) as feed:
            feed.set_window(0, LEN)
            feed.follow()
            await feed.settled(5)
            assert feed.following
            src.append("new", feed)
            await feed.settled(5)
            s = feed.state
            assert s.window_start == 61 - LEN and s.covered_end == 61 and s.end_of_source
            assert feed.items()[-1] == "new"
        assert src.released_exactly_once()
    asyncio.run(main())
