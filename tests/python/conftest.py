import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_cli():
    """Runs the installed `capplan` console script; returns (exit code, stdout, stderr)."""
    exe = Path(sys.executable).parent / "capplan"

    def run(*args, stdin=None, cwd=None):
        p = subprocess.run([str(exe), *args], capture_output=True, text=True, input=stdin,
                           cwd=cwd or ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        return p.returncode, p.stdout, p.stderr

    return run
