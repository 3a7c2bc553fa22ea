"""The built wheel is self-contained: it carries the library, and the installed package loads it.

Run by ``make py-wheel-test``, which builds the wheel, installs it into a fresh venv outside
the repository and runs this suite from there with ``LIBLOADER_PATH`` unset, naming the wheel
in ``LIBLOADER_WHEEL``. Without that variable (the suite run against the sources) these tests
are skipped.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

import libloader
from libloader import _library

NAME = _library.library_filename()
REPO = Path(__file__).resolve().parents[3]
WHEEL = os.environ.get("LIBLOADER_WHEEL")

if not WHEEL:
    pytest.skip("LIBLOADER_WHEEL not set: run by `make py-wheel-test` against an installed "
                "wheel", allow_module_level=True)


def wheel_metadata(name: str) -> Message:
    assert WHEEL
    with zipfile.ZipFile(WHEEL) as z:
        info = next(n for n in z.namelist() if n.endswith(".dist-info/" + name))
        return Parser().parsestr(z.read(info).decode())


def test_the_wheel_is_tagged_for_any_python3_on_this_platform() -> None:
    # ctypes loads the library: the interpreter's version and ABI do not matter, the machine does.
    wheel = wheel_metadata("WHEEL")
    assert wheel["Root-Is-Purelib"] == "false"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert wheel.get_all("Tag") == [f"py3-none-{platform}"]
    assert WHEEL and Path(WHEEL).name.endswith(f"-py3-none-{platform}.whl")
    assert wheel_metadata("METADATA")["Name"] == "ledgered-loader"


def test_the_wheel_carries_the_library_the_package_loads() -> None:
    assert WHEEL
    with zipfile.ZipFile(WHEEL) as z:
        shipped = z.read(f"libloader/{NAME}")
    assert shipped[:4] == b"\x7fELF" or sys.platform != "linux"
    used = libloader.library_path()
    assert used == Path(libloader.__file__).resolve().parent / NAME
    assert hashlib.sha256(used.read_bytes()).digest() == hashlib.sha256(shipped).digest()


def test_the_package_in_use_is_the_installed_one() -> None:
    # Not the checkout's sources, and no override: the suite checks what a user installs.
    assert "LIBLOADER_PATH" not in os.environ
    package = Path(libloader.__file__).resolve()
    assert REPO not in package.parents
    assert Path(sys.prefix).resolve() in package.parents


def test_it_loads_from_any_working_directory_and_the_variable_still_overrides(
        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LIBLOADER_PATH", "PYTHONPATH")}
    code = "import libloader; print(libloader.version(), libloader.library_path())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, check=True).stdout.split()
    assert out == [libloader.version(), str(libloader.library_path())]
    env["LIBLOADER_PATH"] = str(tmp_path / "elsewhere" / NAME)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert p.returncode != 0
    assert f"LIBLOADER_PATH={tmp_path / 'elsewhere' / NAME}: no such file" in p.stderr
