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


def test_the_readme_gives_prune_and_early_exit_the_fit_head_folder():
    """Both read every LAYA seed of a fit-head folder: the README's examples give them the folder its
    fit-head example writes, not one seed's head (early-exit's gave heads/laya/seed_0)."""
    readme = (ROOT / "README.md").read_text()
    fit_out = re.search(r"^laya-inspect fit-head .*--out (\S+)$", readme, re.M).group(1)
    for command in ("prune", "early-exit"):
        given = re.findall(rf"^laya-inspect {command} (\S+)", readme, re.M)
        assert given == [fit_out], (command, given)


def test_the_readme_names_the_level_of_the_constant_rule_intervals_compare_draws():
    """compare draws each method − constant rule interval at 98.3% (docs/METHOD.md, "Verdict"); the
    README's excerpt and its reading of it said 95%, which the terminal no longer prints."""
    from laya_inspect.compare.paired import VERDICT_CONFIDENCE
    from laya_inspect.report.reading import level_text

    said = level_text({"faithfulness": {"mean": 0.1, "ci_low": 0.0, "ci_high": 0.2, "confidence": VERDICT_CONFIDENCE}})
    for page in (ROOT / "README.md", ROOT / "docs" / "demo-output.txt"):
        text = " ".join(page.read_text(encoding="utf-8").split())  # the terminal wraps the caption
        assert "constant rule (paired, 95% interval" not in text, page
        assert f"method − constant rule (paired over the same rows; {said})" in text, page
    assert "paired over the same rows with its 95% interval" not in (ROOT / "README.md").read_text(encoding="utf-8")


class _TupleNet(torch.nn.Module):
    """A forward that returns (logits, h1, h2), as the README's TorchScript line assumes."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU())
        self.b = torch.nn.Sequential(torch.nn.Conv2d(4, 6, 3, padding=1), torch.nn.ReLU())
        self.fc = torch.nn.Linear(6, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h1 = self.a(x)
        h2 = self.b(h1)
        return self.fc(h2.mean((2, 3))), h1, h2


def test_the_readme_torchscript_extract_line_runs(tmp_path, monkeypatch):
    """A TorchScript model exposes no default layers, so the README's line must name them; it used to
    omit --layers and every user who copied it got an error."""
    import shlex
    import warnings

    import numpy as np
    from typer.testing import CliRunner

    from laya_inspect.cache.store import FeatureStore
    from laya_inspect.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(ln for ln in readme.splitlines() if ln.startswith("laya-inspect extract --model torchscript:"))
    argv = shlex.split(line.split("#")[0])[1:]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notices
        torch.jit.trace(_TupleNet().eval(), torch.zeros(2, 1, 8, 8)).save(str(tmp_path / "model.pt"))
    rng = np.random.default_rng(0)
    arrays = {
        f"{k}_{s}": v
        for s, n in (("train", 40), ("test", 20))
        for k, v in (("X", rng.random((n, 1, 8, 8), dtype=np.float32)), ("y", np.arange(n) % 10))
    }
    np.savez(tmp_path / "arrays.npz", **arrays)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv, env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    with FeatureStore(tmp_path / "f.h5") as store:
        assert store.layer_names == ["outputs.1", "outputs.2"]


def test_every_line_of_the_readme_demo_excerpt_is_in_the_demo_output():
    """The README's excerpt of a real demo run is cut from docs/demo-output.txt: each of its lines is one
    of that file's (trailing spaces aside), so regenerating the output without the excerpt is caught."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("An excerpt of a real run")
    block = readme[start:].split("```\n", 2)[1]
    output = {line.rstrip() for line in (ROOT / "docs" / "demo-output.txt").read_text(encoding="utf-8").splitlines()}
    missing = [line for line in block.splitlines() if line.strip() and line.rstrip() not in output]
    assert block.strip() and not missing, missing
