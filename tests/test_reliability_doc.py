"""docs/RELIABILITY.md is generated from tests/reliability_cases.py and current; the catalogue is
well-formed: enough rows, every command, every setup step known to tests/test_reliability.py."""

from __future__ import annotations

import re
from collections import Counter

import reliability_cases as rc
from test_reliability import SETUPS


def test_doc_is_generated_from_the_catalogue_and_current() -> None:
    assert rc.DOC.read_text(encoding="utf-8") == rc.render_doc(), (
        "docs/RELIABILITY.md differs from the catalogue; run `python -m tests.reliability_cases --write-doc`"
    )


def test_the_doc_shows_every_row() -> None:
    doc = rc.render_doc()
    for c in rc.CASES:
        assert f"`laya-inspect {c.argv}`" in doc
    assert f"{len(rc.CASES)} cases in all." in doc


def test_the_readme_counts_the_catalogue_s_rows() -> None:
    readme = (rc.DOC.parents[1] / "README.md").read_text(encoding="utf-8")
    said = re.findall(r"docs/RELIABILITY\.md\) lists (\d+) of them", readme)
    assert said == [str(len(rc.CASES))], f"README says {said}, the catalogue holds {len(rc.CASES)}"


def test_catalogue_covers_every_command_with_at_least_60_rows() -> None:
    assert len(rc.CASES) >= 60
    ids = Counter(c.id for c in rc.CASES)
    assert [i for i, n in ids.items() if n > 1] == []
    per_command = Counter(c.command for c in rc.CASES)
    assert set(per_command) == set(rc.COMMANDS), per_command
    assert all(c.exit in (1, 2) for c in rc.CASES)
    assert all(c.message and all(m.strip() for m in c.message) for c in rc.CASES)


def test_every_setup_step_is_known() -> None:
    unknown = [(c.id, s) for c in rc.CASES for s in c.setup if s.split()[0] not in SETUPS]
    assert unknown == []


def test_the_issue_s_refusals_are_in_the_catalogue() -> None:
    """The flags and words the fixed behaviour must print for the cases issue 11 lists by name."""
    fragments = {m for c in rc.CASES for m in c.message}
    for needed in ("--random-init", "--trust-remote-code", "--trust-pickle", "--force", "--overwrite", "errno", "PID"):
        assert needed in fragments, needed
