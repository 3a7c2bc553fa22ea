"""``LOADER_RECORD`` seen from Python: a warning when the file it names cannot be created.

The library records every loader a process creates to the file the environment variable
``LOADER_RECORD`` names (docs/RECORDING.md); one that cannot be created leaves the loader
unrecorded and says nothing, since the variable is for a program whose code does not change
and must not fail for a debugging aid. Python says it: a :class:`RuntimeWarning`, not an
error, for the same reason (``Loader(record=path)``, asked for in the code, raises
:class:`~libloader.RecordFailedError` instead). The library does not tell whether a loader
records, so the check is made on the path: its directory must exist and be writable, and
the path must not be a directory or a file that cannot be written. The process's first
loader records to the path, the n-th to the path with ``.n`` appended: the same directory.
"""

from __future__ import annotations

import os
import warnings
from typing import Optional

ENV = "LOADER_RECORD"
"""The environment variable the library reads at each loader's creation."""


def _why_not(path: str) -> Optional[str]:
    """Why the file at ``path`` cannot be created or truncated for writing, or None."""
    directory = os.path.dirname(path) or os.curdir
    if not os.path.isdir(directory):
        return f"the directory {directory!r} does not exist"
    if os.path.isdir(path):
        return "it is a directory"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "the file is not writable"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"the directory {directory!r} is not writable"
    return None


def warn_if_unrecordable(stacklevel: int) -> None:
    """Warns (:class:`RuntimeWarning`) when ``LOADER_RECORD`` is set and names a file that
    cannot be created; does nothing when it is unset or empty, as the library does.
    ``stacklevel`` as for :func:`warnings.warn`, counted from the caller."""
    path = os.environ.get(ENV)
    if not path:
        return
    why = _why_not(path)
    if why is not None:
        warnings.warn(f"{ENV}={path!r} cannot be created ({why}): the loader is not "
                      "recorded", RuntimeWarning, stacklevel=stacklevel + 1)
