"""The stacked launcher is a Hydra launcher as Hydra's own test suite defines one (hydra.test_utils): another app's
sweep through hydra/launcher=stacked runs as Hydra's basic launcher runs it (adrop's own jobs train as stacks:
tests/test_stacked.py); and adrop's plugins are found by Hydra's plugin scan where the package is visible to it."""

import subprocess
import sys
from pathlib import Path

import pytest
from hydra.test_utils.launcher_common_tests import LauncherTestSuite

from hydra_plugins import adrop_plugins

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def hydras_default_version_base():
    """The suite is written for Hydra's default version base (each job in its own folder); an adrop train run earlier
    in this process set 1.3, which Hydra keeps process-wide."""
    from hydra.version import _UNSPECIFIED_, VersionBase

    before = VersionBase.instance().getbase()
    VersionBase.instance().version_base = _UNSPECIFIED_
    yield
    VersionBase.instance().version_base = before


@pytest.mark.usefixtures("hydras_default_version_base")
@pytest.mark.parametrize("launcher_name, overrides", [("stacked", [])])
class TestStackedLauncherAsHydrasLauncher(LauncherTestSuite):
    pass


def test_every_plugin_of_the_package_is_registered_and_its_config_stored():
    from hydra.core.config_store import ConfigStore

    names = {cls.__name__ for cls in adrop_plugins.register()}
    assert {"AdropSweeper", "LamSearchSweeper", "StackedLauncher"} <= names
    repo = ConfigStore.instance().repo["hydra"]
    assert {"adrop.yaml", "lam_search.yaml"} <= set(repo["sweeper"]) and "stacked.yaml" in repo["launcher"]


def test_hydras_scan_finds_the_plugins_where_it_sees_the_package():
    scan = (
        "from hydra.core.plugins import Plugins; from hydra.plugins.launcher import Launcher;"
        "from hydra.plugins.sweeper import Sweeper; found = Plugins.instance().discover;"
        "print(sorted(c.__name__ for c in found(Launcher) + found(Sweeper)))"
    )
    out = subprocess.run([sys.executable, "-c", scan], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "StackedLauncher" in out and "LamSearchSweeper" in out and "AdropSweeper" in out, out
