"""Integration tier: a real Pulsar + BookKeeper + ZooKeeper cluster from docker/docker-compose.yml.

Runs through pytest-docker when a Docker engine answers; otherwise every test here is skipped with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def docker_engine_problem() -> str | None:
    """None when a Docker engine answers `docker info`, else why the integration tier cannot run."""
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    try:
        r = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"docker info failed: {e}"
    if r.returncode != 0 or not r.stdout.strip():
        first = (r.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[0]
        return f"no Docker engine answers ({first})"
    return None


_PROBLEM = docker_engine_problem()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _PROBLEM is None:
        return
    here = Path(__file__).parent
    skip = pytest.mark.skip(reason=f"integration tier needs a Docker engine: {_PROBLEM}")
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def docker_compose_file(pytestconfig: pytest.Config) -> str:
    return str(Path(pytestconfig.rootpath) / "docker" / "docker-compose.yml")


@pytest.fixture(scope="session")
def docker_compose_project_name() -> str:
    return "pulsar-ops-it"
