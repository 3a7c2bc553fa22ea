"""The README's Python quickstarts, taken from the README and run: a :class:`libloader.Loader`
answered by hand, and a :class:`libloader.aio.Feed` with one failed load and an invalidation.
Each must print exactly what the README says it prints."""

from __future__ import annotations

from doc_examples import example, run


def test_the_loader_quickstart_prints_what_the_readme_says() -> None:
    code, expected = example("README.md", "python-example")
    assert "import libloader" in code and len(code.splitlines()) <= 25
    assert run(code, "README python-example") == expected


def test_the_feed_quickstart_prints_what_the_readme_says() -> None:
    code, expected = example("README.md", "python-feed-example")
    assert "libloader.aio.Feed" in code
    assert run(code, "README python-feed-example") == expected


def test_the_locate_example_reads_four_pages_for_a_far_move() -> None:
    code, expected = example("README.md", "python-locate-example")
    assert "load.locate = locate" in code
    assert run(code, "README python-locate-example") == expected
    # Without locate, the same move walks: the output differs.
    assert run(code.replace("load.locate = locate", "pass"), "no locate") != expected


def test_a_changed_output_would_fail() -> None:
    code, expected = example("README.md", "python-example")
    assert run(code.replace('"event {i}"', '"row {i}"'), "changed") != expected
