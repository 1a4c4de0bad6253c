"""The README's Python example runs as written, and its test command is the one CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_example_runs():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    scope = {
        "h1": torch.randn(5, 512),
        "h2": torch.randn(5, 256),
        "h3": torch.randn(5, 128),
        "y": torch.randint(0, 10, (5,)),
    }
    exec(block, scope)  # noqa: S102 - our own README
    alpha = scope["alpha"]
    assert alpha.shape == (5, 3)
    torch.testing.assert_close(alpha.sum(1), torch.ones(5))
    scope["loss"].backward()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(python3 -m venv[^\n]*)\n```", readme)
    test_command = [c for c in commands if "pytest" in c]
    assert len(test_command) == 1
    assert test_command[0] in (ROOT / ".ci" / "run").read_text()
