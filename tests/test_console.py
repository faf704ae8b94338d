"""What the command line writes without click: the prompt's copy to its destination."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from git_hydrate.console import Deferred, byte_size

DATA = b"0123456789" * 1000


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source"
    path.write_bytes(DATA)
    return path


def test_a_copy_to_a_file_a_pipe_and_a_file_opened_to_append(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"old content, longer than what is copied" * 1000)
    with open(source, "rb") as fh:
        with Deferred(str(target)) as out:
            out.copy_from(fh, 5, 9000)
        assert target.read_bytes() == DATA[5:9005]  # replaced, as > would
        read, write = os.pipe()
        with open(write, "wb") as end, Deferred(f"/proc/self/fd/{end.fileno()}") as out:
            out.copy_from(fh, 0, 100)
        with open(read, "rb") as reader:
            assert reader.read() == DATA[:100]


def test_a_copy_to_standard_output_opened_to_append(source: Path, tmp_path: Path) -> None:
    """``>>``: neither copy_file_range nor sendfile takes O_APPEND; a buffer does."""
    appended = tmp_path / "appended"
    appended.write_bytes(b"before\n")
    stdout = sys.stdout
    with open(appended, "ab") as sink:
        wrapper = io.TextIOWrapper(sink)
        try:
            sys.stdout = wrapper
            with open(source, "rb") as fh, Deferred(None) as out:
                out.copy_from(fh, 0, 10)
        finally:
            sys.stdout = stdout
            wrapper.detach()
    assert appended.read_bytes() == b"before\n" + DATA[:10]


def test_a_copy_without_a_file_descriptor_goes_through_a_buffer(source: Path) -> None:
    buffer = io.BytesIO()
    stdout, wrapper = sys.stdout, io.TextIOWrapper(buffer)
    try:
        sys.stdout = wrapper
        with open(source, "rb") as fh, Deferred(None) as out:
            out.copy_from(fh, 10, 20)
        assert buffer.getvalue() == DATA[10:30]
    finally:
        sys.stdout = stdout


def test_a_source_that_ends_early_is_an_error(source: Path, tmp_path: Path) -> None:
    with (
        open(source, "rb") as fh,
        pytest.raises(OSError, match="5 bytes missing"),
        Deferred(str(tmp_path / "target")) as out,
    ):
        out.copy_from(fh, len(DATA) - 5, 10)


@pytest.mark.parametrize(
    ("text", "value"),
    [("20000", 20000), ("64k", 65536), ("1M", 1048576), (" 8 ", 8), ("64KiB", 65536)],
)
def test_byte_sizes(text: str, value: int) -> None:
    assert byte_size(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "lots", "8q", "", "1e3", "0x10", "010"])
def test_what_is_not_a_byte_size(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text)):
        byte_size(text)
