"""Run mypy (``[tool.mypy]`` in pyproject.toml) over the checkout as the ``factdebate`` package.

The repository root is the ``factdebate`` package (``package-dir = {"factdebate" = "."}``,
docs/architecture_text.md). Python, import-linter (grimp) and the wheel find it through the install; mypy does
not follow setuptools' editable-install finder and looks for a folder named ``factdebate`` on its
search path instead, so this script points a link of that name at the checkout from a temporary
folder and runs mypy there. Nothing is copied: mypy reads the checkout's own files.

Usage: ``python .ci/typecheck.py [mypy options]`` (``make lint``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    """mypy from a temporary folder whose ``factdebate`` is a link to the checkout."""
    with tempfile.TemporaryDirectory(prefix="factdebate-mypy-") as tmp:
        (Path(tmp) / "factdebate").symlink_to(REPO, target_is_directory=True)
        mypy = Path(sys.executable).with_name("mypy")
        cmd = [str(mypy), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", os.devnull,
               *argv]
        return subprocess.run(cmd, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
