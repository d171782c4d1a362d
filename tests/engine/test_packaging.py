"""The project's own packaging: installing it, as `make install` does, says nothing but that it is installed."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

# a Python warning (BuildBackendWarning, SetuptoolsDeprecationWarning, …), not pip's own `WARNING:` lines
PYTHON_WARNING = re.compile(r"\b\w*Warning\b")


@pytest.mark.slow
def test_an_editable_install_prints_no_warning_of_the_build_backend(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps",
                           "--no-input", "-e", ROOT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not PYTHON_WARNING.findall(done.stdout + done.stderr), done.stdout + done.stderr
    find = "import importlib.util as u; print(u.find_spec('mockserver').origin)"
    found = subprocess.run([venv / "bin" / "python", "-c", find], capture_output=True, text=True,
                           cwd=tmp_path, check=True)
    assert found.stdout.strip() == str(ROOT / "mockserver" / "__init__.py")  # the checkout, from any folder
