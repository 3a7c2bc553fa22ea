"""The library is found in the documented order, and a failure says what was tried."""

from __future__ import annotations

import os
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
    explicit, paths = _library.candidates({"LIBLOADER_PATH": str(chosen)}, pkg)
    assert explicit and paths == [chosen]
    # A directory names the file inside it.
    explicit, paths = _library.candidates({"LIBLOADER_PATH": str(pkg)}, pkg)
    assert paths == [pkg / NAME]


def test_then_the_package_directory_then_the_repository(tmp_path: Path) -> None:
    repo_lib = fake_repo(tmp_path / "repo")
    pkg = tmp_path / "repo" / "bindings" / "python" / "libloader"
    pkg.mkdir(parents=True)
    explicit, paths = _library.candidates({}, pkg)
    assert not explicit
    assert paths == [pkg / NAME, repo_lib]


def test_a_cargo_project_without_the_library_does_not_hide_the_one_above(
        tmp_path: Path) -> None:
    # The checkout sits inside another Cargo project (as bindings/ would under fuzz/): the
    # nearest Cargo.toml has no build of the library, the repository's does.
    repo_lib = fake_repo(tmp_path / "repo")
    inner = tmp_path / "repo" / "fuzz"
    (inner / "target" / "release").mkdir(parents=True)
    (inner / "Cargo.toml").write_text("[package]\n")
    pkg = inner / "bindings" / "python" / "libloader"
    pkg.mkdir(parents=True)
    _, paths = _library.candidates({}, pkg)
    assert paths == [pkg / NAME, inner / "target" / "release" / NAME, repo_lib]
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({}, pkg)
    # The empty stand-in is found past the inner project and rejected only for not loading.
    assert (str(inner / "target" / "release" / NAME), "no such file") in e.value.tried
    assert any(place == str(repo_lib) and reason.startswith("failed to load")
               for place, reason in e.value.tried)


def test_the_working_directory_plays_no_part(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # An installed package run from inside some repository: that repository's build is not
    # a candidate, only the package's own library.
    site = tmp_path / "venv" / "site-packages" / "libloader"
    site.mkdir(parents=True)
    fake_repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    assert _library.candidates({}, site) == (False, [site / NAME])


def test_the_error_names_every_place_tried(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({}, pkg)
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
        _library.load({"LIBLOADER_PATH": str(tmp_path / "nope.so")}, pkg)
    assert f"LIBLOADER_PATH={tmp_path / 'nope.so'}: no such file" in str(e.value)
    # A file that exists but is no library: the loader's own error is shown.
    with pytest.raises(libloader.LibraryNotFoundError) as e:
        _library.load({"LIBLOADER_PATH": str(pkg / NAME)}, pkg)
    assert "failed to load" in str(e.value)


def test_importing_works_without_the_library_and_using_it_fails_clearly(
        tmp_path: Path) -> None:
    code = ("import libloader\n"
            "try:\n"
            "    libloader.version()\n"
            "except libloader.LibraryNotFoundError as e:\n"
            "    print('ERR', e)\n")
    # The package the tests use, installed or from the sources.
    env = {"LIBLOADER_PATH": str(tmp_path / "missing.so"), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(Path(libloader.__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path, check=True).stdout
    assert out.startswith("ERR libloader: cannot load the shared library")
    assert "missing.so" in out


def test_the_library_in_use_is_the_one_found() -> None:
    used = libloader.library_path()
    assert used.name == NAME and used.is_file()
    explicit = os.environ.get("LIBLOADER_PATH")
    if explicit:
        assert used.resolve() == Path(explicit).resolve()
    else:
        # No override: the first existing candidate, which for an installed package is the
        # copy it carries.
        _, paths = _library.candidates()
        assert used == next(p for p in paths if p.is_file())
