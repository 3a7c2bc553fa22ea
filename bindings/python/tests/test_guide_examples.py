"""The Python examples of docs/HOST_GUIDE.md, taken from the guide and run: a Feed over a
100,000-row list opened deep with ``jump``, scrolled up with backward reads and repaired around
the window only; and a Feed over keyset SQL (sqlite3 in memory) whose load function answers
bounded reads, told of one inserted row and one deleted row by ``invalidate_range``; and a
log follower (``follow``, ``appended``, "go to line" through ``locate``) in at most 40 lines. Each must
print exactly what the guide says it prints."""

from __future__ import annotations

from doc_examples import example, run

GUIDE = "docs/HOST_GUIDE.md"


def test_the_directions_example_prints_what_the_guide_says() -> None:
    code, expected = example(GUIDE, "python-directions-example")
    assert "Direction.FORWARD" in code and "feed.jump(" in code
    assert run(code, "guide python-directions-example") == expected


def test_the_ranged_example_prints_what_the_guide_says() -> None:
    code, expected = example(GUIDE, "python-ranged-example")
    assert "invalidate_range(" in code and "until" in code
    assert run(code, "guide python-ranged-example") == expected


def test_the_follow_example_prints_what_the_guide_says() -> None:
    code, expected = example(GUIDE, "python-follow-example")
    assert "feed.follow()" in code and "feed.appended()" in code and "locate=" in code
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 40, f"the log follower is {len(lines)} lines: at most 40"
    assert run(code, "guide python-follow-example") == expected
