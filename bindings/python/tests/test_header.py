"""The bindings agree with include/loader.h: every function with its parameter and return
types, every struct field by name, order, type, size and offset, every callback typedef, enum
value and constant. Sizes and offsets come from the C compiler itself when one is installed."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import libloader
from libloader import _enums as enums, _ffi

# ---- a small parser for the subset of C that cbindgen writes ----


@dataclass
class Header:
    defines: Dict[str, int]
    enums: Dict[str, Dict[str, int]]
    structs: Dict[str, List[Tuple[str, str]]]
    callbacks: Dict[str, Tuple[str, List[str]]]
    typedefs: Dict[str, str]
    functions: Dict[str, Tuple[str, List[str]]]
    testing: List[str]
    """The functions declared under ``#if defined(LOADER_TESTING)``: the test ABI."""


def _norm(t: str) -> str:
    return re.sub(r"\s+", " ", t.replace("*", " * ")).strip()


def _split_param(p: str) -> str:
    """The type of a parameter declaration ``type name``."""
    m = re.match(r"^(.*?)(\w+)$", p.strip(), re.S)
    assert m, p
    return _norm(m.group(1))


def parse(text: str) -> Header:
    defines = {m[1]: int(m[2]) for m in re.finditer(r"#define\s+(\w+)\s+(\d+)", text)}
    testing = sorted({name for block in re.findall(
        r"^#if defined\(LOADER_TESTING\)$(.*?)^#endif$", text, flags=re.S | re.M)
        for name in re.findall(r"\b(loader_\w+)\s*\(", re.sub(r"/\*.*?\*/", "", block,
                                                              flags=re.S))})
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    code = re.sub(r"//[^\n]*", "", code)
    code = re.sub(r"^\s*#.*$", "", code, flags=re.M)
    code = re.sub(r'LOADER_DEPRECATED\("[^"]*"\)\s*', "", code)  # a deprecated function
    code = re.sub(r'extern "C" \{|^\s*\}\s*$', "", code, flags=re.M)

    enums_: Dict[str, Dict[str, int]] = {}
    for m in re.finditer(r"typedef enum (\w+) \{(.*?)\} \1;", code, re.S):
        members = {}
        for entry in m[2].split(","):
            if entry.strip():
                name, value = (s.strip() for s in entry.split("="))
                members[name] = int(value)
        enums_[m[1]] = members

    structs: Dict[str, List[Tuple[str, str]]] = {}
    for m in re.finditer(r"typedef struct (\w+) \{(.*?)\} \1;", code, re.S):
        fields = []
        for decl in m[2].split(";"):
            if decl.strip():
                mm = re.match(r"^(.*?)(\w+)$", decl.strip(), re.S)
                assert mm, decl
                fields.append((mm[2], _norm(mm[1])))
        structs[m[1]] = fields

    callbacks = {}
    for m in re.finditer(r"typedef (\w[\w ]*?) \(\*(\w+)\)\((.*?)\);", code, re.S):
        callbacks[m[2]] = (_norm(m[1]), [_split_param(p) for p in m[3].split(",")])

    typedefs = {m[2]: _norm(m[1]) for m in re.finditer(r"typedef (\w+) (\w+);", code)}

    rest = re.sub(r"typedef [^;{]*(\{.*?\}[^;]*)?;", "", code, flags=re.S)
    functions = {}
    for decl in rest.split(";"):
        fm = re.match(r"^\s*(.*?)\b(loader_\w+)\s*\((.*)\)\s*$", decl, re.S)
        if not fm:
            assert not decl.strip(), f"unparsed declaration: {decl!r}"
            continue
        params = [] if fm[3].strip() in ("", "void") else [_split_param(p)
                                                             for p in fm[3].split(",")]
        functions[fm[2]] = (_norm(fm[1]), params)
    return Header(defines, enums_, structs, callbacks, typedefs, functions, testing)


@pytest.fixture(scope="module")
def parsed() -> Header:
    path = Path(__file__).resolve().parents[3] / "include" / "loader.h"
    return parse(path.read_text())


# ---- what each C type must be in ctypes ----

SCALARS: Dict[str, Any] = {
    "char": ctypes.c_char,
    "uint8_t": ctypes.c_uint8,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "size_t": ctypes.c_size_t,
    "uintptr_t": ctypes.c_size_t,
    "double": ctypes.c_double,
    "bool": ctypes.c_bool,
    "void *": ctypes.c_void_p,
    "const char *": ctypes.c_char_p,
    "void": None,
}


def ctype_of(c: str, h: Header) -> Any:
    c = _norm(c)
    if c in SCALARS:
        return SCALARS[c]
    if c.startswith("const "):
        inner = c[len("const "):]
        if inner.endswith(" *"):
            return ctypes.POINTER(ctype_of(inner[:-2], h))
    if c.endswith(" *"):
        return ctypes.POINTER(ctype_of(c[:-2], h))
    if c.startswith("enum ") and c[5:] in h.enums:
        return ctypes.c_int
    if c.startswith("struct ") and c[7:] in h.structs:
        return getattr(_ffi, c[7:])
    if c in h.structs:
        return getattr(_ffi, c)
    if c.startswith("struct ") and c[7:] in _ffi.OPAQUE:
        return getattr(_ffi, c[7:])  # an opaque struct, handled only through pointers
    if c in h.callbacks:
        return _ffi.CALLBACK_TYPES[c]
    if c in h.typedefs:
        return ctype_of(h.typedefs[c], h)
    raise AssertionError(f"no ctypes mapping for C type {c!r}")


def same(a: Any, b: Any) -> bool:
    """ctypes types are equal, or both are pointers to equal types, or equal callbacks."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    if hasattr(a, "_type_") and hasattr(b, "_type_") and issubclass(a, ctypes._Pointer) \
            and issubclass(b, ctypes._Pointer):
        return same(a._type_, b._type_)
    if hasattr(a, "_argtypes_") and hasattr(b, "_argtypes_"):
        return (same(a._restype_, b._restype_) and len(a._argtypes_) == len(b._argtypes_)
                and all(same(x, y) for x, y in zip(a._argtypes_, b._argtypes_)))
    return False


# ---- the checks ----


def test_the_parser_sees_the_whole_header(parsed: Header) -> None:
    # Guard against a parser that silently finds nothing.
    assert len(parsed.functions) >= 18
    assert set(parsed.structs) >= {"loader_config", "loader_read", "loader_snapshot"}
    assert len(parsed.enums) >= 8 and len(parsed.callbacks) == 8


def test_the_test_abi_is_apart_from_the_public_one(parsed: Header) -> None:
    assert parsed.testing == sorted(_ffi.TESTING_FUNCTIONS)
    assert not set(parsed.testing) & set(_ffi.FUNCTIONS)


def test_every_header_function_is_declared_with_its_types(parsed: Header) -> None:
    bound = {**_ffi.FUNCTIONS, **_ffi.ADDED_FUNCTIONS, **_ffi.TESTING_FUNCTIONS}
    missing = sorted(set(parsed.functions) - set(bound))
    # An added function a header predates is bound ahead of it; its types are checked once
    # the header declares it.
    extra = sorted(set(bound) - set(parsed.functions) - set(_ffi.ADDED_FUNCTIONS))
    assert not missing, f"functions in loader.h without bindings: {missing}"
    assert not extra, f"bindings for functions not in loader.h: {extra}"
    assert not set(_ffi.ADDED_FUNCTIONS) & set(_ffi.FUNCTIONS)
    for name, (ret, params) in parsed.functions.items():
        restype, argtypes = bound[name]
        assert same(restype, ctype_of(ret, parsed)), f"{name}: return type {ret}"
        assert len(argtypes) == len(params), f"{name}: {len(params)} parameters in loader.h"
        for i, (have, c) in enumerate(zip(argtypes, params)):
            assert same(have, ctype_of(c, parsed)), f"{name}: parameter {i} is {c}"


def test_the_loaded_library_has_them_declared() -> None:
    lib = _ffi.lib()
    declared = {**_ffi.FUNCTIONS, **(_ffi.TESTING_FUNCTIONS if _ffi.has_testing() else {}),
                **{k: v for k, v in _ffi.ADDED_FUNCTIONS.items() if hasattr(lib, k)}}
    for name, (restype, argtypes) in declared.items():
        fn = getattr(lib, name)
        assert fn.restype is restype and list(fn.argtypes) == argtypes, name
    # A handle must never come back as a C int: it would be truncated.
    assert lib.loader_free.argtypes[0] is ctypes.c_uint64


def test_the_library_exports_exactly_the_header_functions(parsed: Header) -> None:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", str(libloader.library_path())],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines()
                if line.split() and line.split()[-1].startswith("loader_")}
    public = set(parsed.functions) - set(parsed.testing)
    # The test ABI comes all together or not at all.
    assert exported in (public, set(parsed.functions))
    assert (exported == set(parsed.functions)) == _ffi.has_testing()


def test_struct_fields_match_by_name_order_and_type(parsed: Header) -> None:
    assert {s.__name__ for s in _ffi.STRUCTS} == set(parsed.structs)
    for struct in _ffi.STRUCTS:
        c_fields = parsed.structs[struct.__name__]
        py_fields = struct._fields_  # type: ignore[attr-defined]
        assert [n for n, _ in py_fields] == [n for n, _ in c_fields], struct.__name__
        for (name, have), (_, c) in zip(py_fields, c_fields):
            assert same(have, ctype_of(c, parsed)), f"{struct.__name__}.{name} is {c}"


def test_callback_typedefs_match(parsed: Header) -> None:
    assert set(_ffi.CALLBACK_TYPES) == set(parsed.callbacks)
    for name, (ret, params) in parsed.callbacks.items():
        cb = _ffi.CALLBACK_TYPES[name]
        assert same(cb._restype_, ctype_of(ret, parsed)), name
        assert len(cb._argtypes_) == len(params), name
        for have, c in zip(cb._argtypes_, params):
            assert same(have, ctype_of(c, parsed)), f"{name}: {c}"


ENUMS = {
    "loader_result": ("LOADER_RESULT_", enums.Result),
    "loader_kind": ("LOADER_KIND_", enums.Kind),
    "loader_direction": ("LOADER_DIRECTION_", enums.Direction),
    "loader_answer": ("LOADER_ANSWER_", enums.Answer),
    "loader_debt": ("LOADER_DEBT_", enums.Debt),
    "loader_phase": ("LOADER_PHASE_", enums.Phase),
    "loader_failure": ("LOADER_FAILURE_", enums.Failure),
    "loader_coverage": ("LOADER_COVERAGE_", enums.Coverage),
    "loader_request_state": ("LOADER_REQUEST_STATE_", enums.RequestState),
}


def test_enum_values_and_constants_match(parsed: Header) -> None:
    assert set(ENUMS) == set(parsed.enums)
    for c_name, (prefix, py) in ENUMS.items():
        want = {k[len(prefix):]: v for k, v in parsed.enums[c_name].items()}
        assert {m.name: m.value for m in py} == want, c_name
    assert parsed.defines["LOADER_MAX_CURSOR_LEN"] == libloader.MAX_CURSOR_LEN
    assert parsed.defines["LOADER_MAX_PAGE_SIZE"] == libloader.MAX_PAGE_SIZE
    assert parsed.typedefs["loader_handle"] == "uint64_t"


def _layout_program(h: Header) -> str:
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "loader.h"',
             "int main(void) {"]
    for s, fields in h.structs.items():
        lines.append(f'  printf("struct {s} %zu %zu\\n", sizeof(struct {s}), '
                     f"_Alignof(struct {s}));")
        for f, _ in fields:
            lines.append(f'  printf("field {s} {f} %zu %zu\\n", offsetof(struct {s}, {f}), '
                         f"sizeof(((struct {s} *)0)->{f}));")
    for e, members in h.enums.items():
        lines.append(f'  printf("enum {e} %zu\\n", sizeof(enum {e}));')
        for m in members:
            lines.append(f'  printf("value {m} %lld\\n", (long long){m});')
    lines += ['  printf("handle %zu\\n", sizeof(loader_handle));', "  return 0;", "}"]
    return "\n".join(lines) + "\n"


def test_sizes_and_offsets_match_the_c_compiler(parsed: Header, tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler installed")
    include = Path(__file__).resolve().parents[3] / "include"
    src = tmp_path / "layout.c"
    src.write_text(_layout_program(parsed))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", f"-I{include}", str(src), "-o",
                    str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    checked = 0
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "struct":
            name, size, align = rest[0], int(rest[1]), int(rest[2])
            st = getattr(_ffi, name)
            assert (ctypes.sizeof(st), ctypes.alignment(st)) == (size, align), name
        elif kind == "field":
            name, field, offset, size = rest[0], rest[1], int(rest[2]), int(rest[3])
            desc = getattr(getattr(_ffi, name), field)
            assert (desc.offset, desc.size) == (offset, size), f"{name}.{field}"
        elif kind == "enum":
            assert int(rest[1]) == ctypes.sizeof(_ffi.c_enum), rest[0]
        elif kind == "value":
            assert parsed_value(parsed, rest[0]) == int(rest[1])
        elif kind == "handle":
            assert int(rest[0]) == ctypes.sizeof(_ffi.loader_handle)
        checked += 1
    assert checked > 60


def parsed_value(h: Header, member: str) -> int:
    for members in h.enums.values():
        if member in members:
            return members[member]
    raise KeyError(member)


def test_a_header_that_disagrees_is_caught() -> None:
    # The checks above are only worth something if a difference fails them.
    text = (Path(__file__).resolve().parents[3] / "include" / "loader.h").read_text()
    changed = parse(text.replace("uint32_t count;", "uint64_t count;")
                    .replace("enum loader_result loader_floor(loader_handle handle);",
                             "enum loader_result loader_floor(loader_handle handle);\n"
                             "enum loader_result loader_extra(loader_handle handle);"))
    page_fields = dict(changed.structs["loader_page"])
    assert not same({f[0]: f[1] for f in _ffi.loader_page._fields_}["count"],
                    ctype_of(page_fields["count"], changed))
    assert "loader_extra" in set(changed.functions) - set(_ffi.FUNCTIONS)
    assert "loader_extra" in changed.testing
    # A test hook declared outside the LOADER_TESTING block would be public.
    ungated = parse(text.replace("#if defined(LOADER_TESTING)", "#if 1"))
    assert ungated.testing != sorted(_ffi.TESTING_FUNCTIONS)
