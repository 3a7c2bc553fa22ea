"""``help()`` shows every public attribute's doc: each field of the public dataclasses, each
public instance attribute of :class:`Loader`, both feeds, the exceptions and ``FakeSource``,
and each documented enum member appears in ``pydoc.render_doc`` on a line of its own with its
description under it. And no attribute docstring is left where pydoc does not look (a string
under a field or under a ``self.x = ...`` in ``__init__``)."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import pydoc
import re
import textwrap
from typing import Any, Dict, List

import pytest

import libloader as L
from libloader import aio
from libloader.testing import FakeSource

PUBLIC_CLASSES: List[type] = [getattr(L, n) for n in L.__all__ if inspect.isclass(getattr(L, n))]
PUBLIC_CLASSES += [aio.Feed, FakeSource]


def rendered(cls: type) -> str:
    """help(cls) as text, without pydoc's ``|`` margin."""
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    return "\n".join(re.sub(r"^ \|", "", line) for line in text.splitlines())


def documented(text: str, name: str) -> bool:
    """``name`` on a line of its own (or with its default in brackets, as :class:`Config`
    shows it), with an indented description on the next line."""
    pattern = rf"^(?P<i>[ ]*){re.escape(name)}(?: \[[^\n]*\])?[ ]*\n(?P=i)[ ]+\S"
    return re.search(pattern, text, re.MULTILINE) is not None


def hidden_attribute_docs(cls: type) -> Dict[str, str]:
    """The docstrings in ``cls``'s source written under an attribute (a field, an enum member,
    a ``self.x = ...`` in ``__init__``): pydoc shows none of them."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    except (OSError, TypeError):
        return {}
    assert isinstance(tree, ast.ClassDef)
    found: Dict[str, str] = {}
    bodies = [tree.body] + [f.body for f in tree.body
                            if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
    for body in bodies:
        for a, b in zip(body, body[1:]):
            if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
                    and isinstance(b.value.value, str)):
                continue
            target = (a.target if isinstance(a, ast.AnnAssign)
                      else a.targets[0] if isinstance(a, ast.Assign) and len(a.targets) == 1
                      else None)
            name = (target.id if isinstance(target, ast.Name)
                    else target.attr if isinstance(target, ast.Attribute) else None)
            if name is not None and not name.startswith("_"):
                found[name] = b.value.value
    return found


@pytest.mark.parametrize("cls", PUBLIC_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_no_attribute_doc_is_hidden_from_help(cls: type) -> None:
    hidden = {}
    for klass in cls.__mro__:
        if klass.__module__.startswith("libloader"):
            hidden.update(hidden_attribute_docs(klass))
    assert not hidden, f"help({cls.__qualname__}) does not show the docs of {sorted(hidden)}"


@pytest.mark.parametrize("cls", [c for c in PUBLIC_CLASSES if dataclasses.is_dataclass(c)],
                         ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_help_shows_every_field_of_a_public_dataclass(cls: type) -> None:
    text = rendered(cls)
    missing = [f.name for f in dataclasses.fields(cls) if not documented(text, f.name)]
    assert not missing, f"help({cls.__qualname__}) does not document {missing}:\n{text}"


def test_help_shows_the_documented_enum_members() -> None:
    text = rendered(L.Direction)
    assert documented(text, "FORWARD") and documented(text, "BACKWARD"), text
    assert "just before the cursor, in source order" in " ".join(text.split())


def public_instance_attributes(obj: Any) -> List[str]:
    return sorted(n for n in vars(obj) if not n.startswith("_"))


def test_help_shows_every_public_attribute_of_the_loader_the_feeds_the_errors_and_fakesource(
        ) -> None:
    source: FakeSource[str] = FakeSource(3)
    objects: List[Any] = [source]
    loader = L.Loader(lambda r: None, lambda a: None)
    feed = L.Feed(source.load, max_workers=0)
    objects += [loader, feed]

    async def make_aio() -> None:
        afeed = aio.Feed(source.load)
        objects.append(afeed)
        await afeed.close()

    asyncio.run(make_aio())
    objects += [L.InvalidPageSizeError(L.Result.INVALID_PAGE_SIZE, "page_size is 0",
                                       "loader_new"),
                L.FeedStalledError(L.FeedProblem("cursor_stalled", "the cursor stalled"))]
    try:
        for obj in objects:
            cls = type(obj)
            text = rendered(cls)
            names = public_instance_attributes(obj) + [
                n for n in ("errors", "last_error") if isinstance(obj, (L.Feed, aio.Feed))]
            names = [n for n in dict.fromkeys(names) if not callable(getattr(obj, n))]
            missing = [n for n in names if not documented(text, n)]
            assert not missing, f"help({cls.__qualname__}) does not document {missing}"
        feed_text = " ".join(rendered(L.Feed).split())
        assert "The exception that failed the latest failed read" in feed_text
        assert "Exceptions the user's callbacks" in feed_text
    finally:
        loader.close()
        feed.close()
