"""The package as `pip install .` leaves it: one top-level name, candlebench, with the configs, the
task folders' config.yaml and the report's browser files inside, and every stage of a small study
working from an installed copy run outside the checkout (where `import inference` must fail: PyPI's
`inference` has thousands of dependents, and a second top-level name would collide with it)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from helpers import ROOT, SLICE


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, text=True)
    return next(out.glob("candlebench-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel; its dependencies are this environment's (a .pth file adds
    their folder, whose own .pth files, among them the checkout's editable finder, stay unread)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True, text=True)
    return venv / "bin"


def test_the_wheel_holds_only_candlebench_with_its_data_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"candlebench", wheel.name.split("-py3")[0] + ".dist-info"}
    for needed in ("candlebench/conf/config.yaml", "candlebench/conf/hydra/launcher/slurm.yaml",
                   "candlebench/tasks/forecast/config.yaml", "candlebench/tasks/forecast/task.py",
                   "candlebench/report/browser/browser.js", "candlebench/report/browser/browser.css",
                   "candlebench/inference/runner.py"):
        assert needed in names, needed


def test_an_installed_copy_runs_a_study_outside_the_checkout(installed, tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    where = run(str(installed / "python"), "-c", "import candlebench; print(candlebench.__file__)")
    assert not where.stdout.startswith(str(ROOT)), where.stdout
    for former in ("inference", "tasks", "scoring", "rendering"):
        done = run(str(installed / "python"), "-c", f"import {former}")
        assert done.returncode != 0 and f"No module named '{former}'" in done.stderr
    common = ["data=csv", f"data.path={SLICE}", "data.codes=[AC]", "task.samples.interval=60", "out_dir=study"]
    for stage in (["samples"], ["render"], ["baseline", "task.baseline.names=[momentum]"], ["score"], ["report"]):
        done = run(str(installed / "candlebench"), *stage, *common)
        assert done.returncode == 0, (stage, done.stderr[-3000:])
    page = (tmp_path / "study" / "report" / "report.html").read_text()
    # The sample browser's script and style come from the package's data files.
    script = (ROOT / "candlebench" / "report" / "browser" / "browser.js").read_text().splitlines()[0]
    assert script in page and "momentum" in page


@pytest.mark.unit
def test_make_installs_the_test_extra_into_a_venv_the_readmes_install_made(tmp_path):
    """The README's install (`pip install -e '.[hf,caption]'`) leaves .venv/bin/candlebench newer
    than pyproject.toml: `make check` once took that for its own install and failed on "No module
    named pytest". Its stamp names the extras; a stamp made by make itself is the whole install."""
    import os
    import shutil
    import time

    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    later = time.time() + 60
    for made in ("python", "candlebench"):
        (bin_dir / made).write_text("")
        os.utime(bin_dir / made, (later, later))

    def planned() -> str:
        return subprocess.run(["make", "-n", "check"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    assert "pip install --quiet -e '.[hf,caption,test]'" in planned()
    stamp = next(p for p in subprocess.run(["make", "-n", "-p", "check"], cwd=tmp_path, capture_output=True,
                                           text=True).stdout.splitlines() if p.startswith("STAMP := "))
    made = tmp_path / stamp.split(":= ", 1)[1]
    made.write_text("")
    os.utime(made, (later, later))
    assert "pip install" not in planned() and "pytest -q -m unit" in planned()
