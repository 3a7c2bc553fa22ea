"""Finds and loads the shared library ``libloader.so``.

Lookup order:

1. ``LIBLOADER_PATH``: a path to the library file, or to a directory holding it. When it is
   set, it is the only place tried: an explicit choice that points nowhere is an error, not a
   reason to pick up some other build silently.
2. The package directory: an installed wheel carries the library next to ``__init__.py``.
3. ``target/release`` of every directory above the package that holds a ``Cargo.toml``,
   nearest first: the package used straight from a source checkout (``PYTHONPATH``), where
   the repository root is not the first such directory when the checkout sits inside another
   Cargo project.

The working directory plays no part: an installed package finds its own library, and one
used from a checkout finds the checkout's build, wherever the program runs.

A failure raises :class:`LibraryNotFoundError`, whose message lists every place tried and why
each was rejected.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

ENV_VAR = "LIBLOADER_PATH"


def library_filename() -> str:
    """The platform's file name for the library."""
    if sys.platform == "darwin":
        return "libloader.dylib"
    if sys.platform == "win32":
        return "loader.dll"
    return "libloader.so"


class LibraryNotFoundError(OSError):
    """The shared library could not be found or loaded. ``tried`` lists (place, reason)."""

    def __init__(self, tried: Sequence[Tuple[str, str]]) -> None:
        self.tried: List[Tuple[str, str]] = list(tried)
        lines = [f"  {place}: {reason}" for place, reason in self.tried]
        hint = (
            f"Install the package with `pip install ./bindings/python` (it builds the "
            f"library into the package), build it with `cargo build --release` in the "
            f"repository, or set {ENV_VAR} to the path of {library_filename()}."
        )
        super().__init__("libloader: cannot load the shared library. Tried:\n"
                         + "\n".join(lines) + "\n" + hint)


def _repo_candidates(package_dir: Path) -> List[Path]:
    """``target/release/<lib>`` of each directory above the package holding a ``Cargo.toml``.

    Every such directory, not only the nearest: a ``Cargo.toml`` with no build of this
    library (another crate around the checkout) must not hide the repository's own.
    """
    name = library_filename()
    return [d / "target" / "release" / name
            for d in package_dir.parents if (d / "Cargo.toml").is_file()]


def candidates(
    env: Optional[Mapping[str, str]] = None,
    package_dir: Optional[Path] = None,
) -> Tuple[bool, List[Path]]:
    """The paths to try, in order, and whether they come from ``LIBLOADER_PATH`` alone."""
    env = os.environ if env is None else env
    package_dir = Path(__file__).resolve().parent if package_dir is None else package_dir
    name = library_filename()
    explicit = env.get(ENV_VAR)
    if explicit:
        p = Path(explicit).expanduser()
        return True, [p / name if p.is_dir() else p]
    return False, [package_dir / name, *_repo_candidates(package_dir)]


def load(
    env: Optional[Mapping[str, str]] = None,
    package_dir: Optional[Path] = None,
) -> Tuple[ctypes.CDLL, Path]:
    """Loads the first candidate that exists and loads; raises LibraryNotFoundError."""
    explicit, paths = candidates(env, package_dir)
    tried: List[Tuple[str, str]] = []
    if not explicit:
        tried.append((ENV_VAR, "not set"))
    for p in paths:
        label = f"{ENV_VAR}={p}" if explicit else str(p)
        if not p.is_file():
            tried.append((label, "no such file"))
            continue
        try:
            return ctypes.CDLL(str(p)), p
        except OSError as e:
            tried.append((label, f"failed to load: {e}"))
    if not explicit and len(paths) == 1:
        tried.append(("repository target/release",
                      "no Cargo.toml above the package directory"))
    raise LibraryNotFoundError(tried)
