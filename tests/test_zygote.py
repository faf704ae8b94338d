"""The fork server's ``python -c`` client (tests/zygote.py): a process of its own
that answers as ``python -c CODE ARGS`` would, for the writers tests start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from .wrapper import python_command

_SHOW = (
    "import json, os, sys\n"
    "loaded = 'git_hydrate' in sys.modules\n"
    "print(json.dumps([__name__, sys.argv, sys.path[0], os.getcwd(), loaded]))\n"
)


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*python_command(), *argv], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_code_runs_as_python_c_with_its_arguments(tmp_path: Path) -> None:
    forked = _run(tmp_path, "-c", _SHOW, "a b", "-x")
    new = subprocess.run(
        [sys.executable, "-c", _SHOW, "a b", "-x"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert forked.returncode == new.returncode == 0, forked.stderr + new.stderr
    name, argv, path0, cwd, imported = json.loads(forked.stdout)
    assert [name, argv, path0, cwd] == json.loads(new.stdout)[:4]
    assert [name, argv, path0, cwd] == ["__main__", ["-c", "a b", "-x"], "", str(tmp_path)]
    assert imported  # forked from the server that imported it: the point


def test_exit_statuses_are_those_of_python_c(tmp_path: Path) -> None:
    assert _run(tmp_path, "-c", "raise SystemExit(3)").returncode == 3
    failed = _run(tmp_path, "-c", "1 / 0")
    assert failed.returncode == 1
    assert failed.stderr.startswith("Traceback") and "ZeroDivisionError" in failed.stderr
    killed = _run(tmp_path, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def test_anything_but_c_is_a_new_interpreter(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text("import sys; print(sys.argv[1:])\n")
    ran = _run(tmp_path, "script.py", "x")
    assert (ran.returncode, ran.stdout) == (0, "['x']\n"), ran.stderr
    assert os.path.exists(python_command()[0])
