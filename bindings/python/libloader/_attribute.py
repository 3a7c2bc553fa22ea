"""An instance attribute with a docstring that ``help()`` shows.

``help()`` (pydoc) shows no docstring written under an attribute assigned in ``__init__``.
A :class:`Documented` class attribute carries it instead: pydoc lists it among the class's
data descriptors with its text, and the value still lives in the instance's own ``__dict__``,
read and assigned as a plain attribute is."""

from __future__ import annotations

from typing import Any, Generic, TypeVar, Union, overload

V = TypeVar("V")


class Documented(Generic[V]):
    """A documented instance attribute of type ``V``; unset, reading it raises
    AttributeError, as a plain attribute does."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: Any = None) -> "Documented[V]": ...

    @overload
    def __get__(self, obj: object, owner: Any = None) -> V: ...

    def __get__(self, obj: object, owner: Any = None) -> Union[V, "Documented[V]"]:
        if obj is None:
            return self
        try:
            value: V = obj.__dict__[self._name]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute "
                                 f"{self._name!r}") from None
        return value

    def __set__(self, obj: object, value: V) -> None:
        obj.__dict__[self._name] = value
