"""A FIFO, socket or device under an output's name is no file laya-inspect wrote: each check that reads
an existing output to tell whether it is the tool's refuses it by what it is, at once. Opening a FIFO to
read it blocks until a writer comes, so before, `explain --out`, `train --out`, `extract --overwrite`
and extract's resume hung for ever on one, and `report --html` replaced a FIFO named report.html."""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from laya_inspect.cache.partial import refuse_foreign_partial
from laya_inspect.cache.schema import not_a_cache
from laya_inspect.errors import InputError
from laya_inspect.explain import not_explains_figure
from laya_inspect.models.zoo import not_a_zoo_checkpoint
from laya_inspect.report import refuse_foreign_page
from laya_inspect.training.joint import check_metrics_out

WAIT_S = 5.0


def answer(check: Callable[[], Any], fifo: Path) -> tuple[bool, Any]:
    """Run ``check``; where it is still blocked after WAIT_S, open the FIFO's other end so it goes on.
    Return whether it hung, and what it returned or raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["out"] = check()
        except Exception as e:  # the refusal under test, kept to be read
            box["out"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    hung = thread.is_alive()
    if hung:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader sees an empty file and goes on
        thread.join(WAIT_S)
    return hung, box.get("out")


def said(out: Any) -> str:
    return str(out) if out is not None else ""


@pytest.mark.parametrize(
    "name, check",
    [
        ("fig.png", not_explains_figure),
        ("ckpt.pt", not_a_zoo_checkpoint),
        ("cache.h5", not_a_cache),
    ],
)
def test_a_fifo_is_told_apart_without_reading_it(tmp_path: Path, name: str, check: Callable[[Path], Any]) -> None:
    fifo = tmp_path / name
    os.mkfifo(fifo)
    hung, out = answer(lambda: check(fifo), fifo)
    assert not hung, f"{check.__name__} blocked on a FIFO"
    assert "FIFO" in said(out), out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_train_refuses_a_fifo_for_its_metrics(tmp_path: Path) -> None:
    fifo = tmp_path / "model.metrics.json"
    os.mkfifo(fifo)
    hung, out = answer(lambda: check_metrics_out(tmp_path / "model.pt"), fifo)
    assert not hung, "train's metrics check blocked on a FIFO"
    assert isinstance(out, InputError) and "FIFO" in str(out), out


def test_extract_refuses_a_fifo_partial(tmp_path: Path) -> None:
    fifo = tmp_path / "cache.h5.partial"
    os.mkfifo(fifo)
    hung, out = answer(lambda: refuse_foreign_partial(tmp_path / "cache.h5"), fifo)
    assert not hung, "extract's resume check blocked on a FIFO"
    assert isinstance(out, InputError) and "FIFO" in str(out) and "cache.h5.partial" in str(out), out


def test_report_html_keeps_a_fifo_named_report_html(tmp_path: Path) -> None:
    fifo = tmp_path / "report.html"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"report\.html is a FIFO"):
        refuse_foreign_page(tmp_path)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_named_and_a_plain_file_is_not(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.png"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert "is a socket" in said(not_explains_figure(sock_path))
        assert "is a socket" in said(not_a_zoo_checkpoint(sock_path))
    (tmp_path / "plain.png").write_bytes(b"x")
    assert said(not_explains_figure(tmp_path / "plain.png")) == "is not a figure laya-inspect explain wrote"
