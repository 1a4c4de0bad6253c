"""A table cell of report.html that shows a number gives its interval, or says why it has none: a real
diagnose run of one head on the digits cache (the fixture of test_reportfix_settings)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_reportfix_settings import _text, folders  # noqa: F401  (folders: a fixture)


def test_one_heads_aupr_is_shown_as_a_point_and_the_caption_says_why(folders: dict[str, Path]) -> None:  # noqa: F811
    """diagnose's page printed every AUPR of one head as "0.491 [n/a]": its bootstrap over the test rows is
    drawn for the AUROCs, so an AUPR is one value, and "[n/a]" read as a value lost. The cell gives the value
    and the caption says it has no interval; the AUROC beside it keeps its own."""
    from laya_inspect.report.beyond import beyond_page

    folder = folders["diagnose"]
    s = json.loads((folder / "summary.json").read_text())
    assert all("ci_low" not in d for d in s["errors"]["aupr"].values())  # the case this reads: one head
    page = _text(beyond_page(folder, s))
    table = page.split("Misclassification detection", 1)[1]
    assert "[n/a]" not in page, page
    from laya_inspect.report.beyond import AUPR_POINT

    assert AUPR_POINT in table
    msp, aupr = s["errors"]["auroc"]["msp"], s["errors"]["aupr"]["msp"]["mean"]
    row = f"msp {msp['mean']:.3f} [{msp['ci_low']:.3f}, {msp['ci_high']:.3f}] {aupr:.3f} (baseline)"
    assert re.search(re.escape(row), table), table
