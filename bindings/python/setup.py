"""Builds the wheel: cargo compiles the repository's cdylib, which ships inside the package.

The metadata is in pyproject.toml; this file holds only what cannot be declared there: where
the library goes and the wheel's tag.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools_rust import Binding, RustExtension, Strip, build_rust

HERE = Path(__file__).resolve().parent
# The crate is the repository itself, two levels up: the build needs the whole checkout (a
# local path or a git URL with #subdirectory=bindings/python), not an sdist of this directory.
CARGO_TOML = HERE.parent.parent / "Cargo.toml"
if not CARGO_TOML.is_file():
    sys.exit(f"ledgered-loader: {CARGO_TOML} not found. Build from a checkout of the whole "
             "repository: pip install ./bindings/python")


def _library_filename() -> str:
    """The file name the package looks for, from the package's own lookup module.

    Loaded by path: importing the package itself here would need it to be installed.
    """
    spec = importlib.util.spec_from_file_location("_library", HERE / "libloader" / "_library.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    name: str = module.library_filename()
    return name


class BuildLibrary(build_rust):
    """Puts the cdylib next to ``__init__.py`` under the name ctypes will load.

    setuptools-rust names a library like an extension module (``.cpython-3XX-….so``); this one
    is no extension module, and the package looks for the platform's plain library name.
    """

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        default = super().get_dylib_ext_path(ext, target_fname)
        return os.path.join(os.path.dirname(default), _library_filename())


class PlatformWheel(bdist_wheel):
    """Tags the wheel ``py3-none-<platform>``: ctypes loads the library from any Python 3,
    so the wheel depends on the machine, not on the interpreter's version or ABI."""

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    rust_extensions=[
        RustExtension(
            "libloader.libloader",
            path=str(CARGO_TOML),
            binding=Binding.NoBinding,
            # The release profile keeps line tables for the repository's debuggers; the wheel
            # drops them (strip -S: 6.4 MB down to 0.6 MB).
            strip=Strip.Debug,
        )
    ],
    cmdclass={"build_rust": BuildLibrary, "bdist_wheel": PlatformWheel},
    # A shared library cannot be imported from a zip archive.
    zip_safe=False,
)
