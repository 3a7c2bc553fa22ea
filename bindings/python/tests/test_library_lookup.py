"""The library is found in the documented order, and a failure says what was tried."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import libloader
from libloader import _library

NAME = _library.library_filename()


def fake_repo(root: Path) -> Path:
    (root / "target" / "release").mkdir(parents=True)
    (root / "Cargo.toml").write_text("[package]\n")
    lib = root / "target" / "release" / NAME
    lib.write_bytes(b"")
    return lib


def test_the_environment_variable_comes_first_and_alone(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / NAME).write_bytes(b"")
    chosen = tmp_path / "elsewhere" / NAME
    explicit, paths = _library.candidates({"LIBLOADER_PATH": str(chosen)}, pkg, tmp_path)
    assert explicit and paths == [chosen]
    # A directory names the file inside it.
    explicit, paths = _library.candidates({"LIBLOADER_PATH": str(pkg)}, pkg, tmp_path)
    assert paths == [pkg / NAME]


def test_then_the_package_directory_then_the_repository(tmp_path: Path) -> None:
    repo_lib = fake_repo(tmp_path / "repo")
    pkg = tmp_path / "repo" / "bindings" / "python" / "libloader"
    pkg.mkdir(parents=True)
    cwd_repo_lib = fake_repo(tmp_path / "other")
    explicit, paths = _library.candidates({}, pkg, tmp_path / "other" / "sub")
    assert not explicit
    assert paths == [pkg / NAME, repo_lib, cwd_repo_lib]


def test_an_installed_package_finds_the_repository_from_the_working_directory(
        tmp_path: Path) -> None:
    site = tmp_path / "venv" / "site-packages" / "libloader"
    site.mkdir(parents=True)
    repo_lib = fake_repo(tmp_path / "repo")
    _, paths = _library.candidates({}, site, tmp_path / "repo" / "examples")
    assert paths == [site / NAME, repo_lib]


def test_the_error_names_every_place_tried(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({}, pkg, tmp_path)
    msg = str(e.value)
    assert "LIBLOADER_PATH: not set" in msg
    assert str(pkg / NAME) in msg and "no such file" in msg
    assert "cargo build --release" in msg
    assert isinstance(e.value, OSError) and e.value.tried


def test_a_bad_explicit_path_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / NAME).write_bytes(b"not a library")
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({"LIBLOADER_PATH": str(tmp_path / "nope.so")}, pkg, tmp_path)
    assert f"LIBLOADER_PATH={tmp_path / 'nope.so'}: no such file" in str(e.value)
    # A file that exists but is no library: the loader's own error is shown.
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({"LIBLOADER_PATH": str(pkg / NAME)}, pkg, tmp_path)
    assert "failed to load" in str(e.value)


def test_importing_works_without_the_library_and_using_it_fails_clearly(
        tmp_path: Path) -> None:
    code = ("import libloader\n"
            "try:\n"
            "    libloader.version()\n"
            "except libloader.LibraryNotFoundError as e:\n"
            "    print('ERR', e)\n")
    env = {"LIBLOADER_PATH": str(tmp_path / "missing.so"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, check=True).stdout
    assert out.startswith("ERR libloader: cannot load the shared library")
    assert "missing.so" in out


def test_the_library_in_use_is_the_one_found() -> None:
    assert libloader.library_path().name == NAME
    assert libloader.library_path().is_file()
