"""Build the image the dashboard runs in as a pod, offline: groundup/dashboard:dev.

    python dashboard/dashboard_image.py            # build it (skipped when up to date)
    python dashboard/dashboard_image.py --list     # what would go in, and its size

What chapter 05's controller image does (common/tooling/python_image.py:
this computer's Python, the installed libraries, this checkout's code, to
`docker import`), with what the dashboard needs: Flask and requests, and
common/ and dashboard/ with the page's files. Each node has its own Docker
engine, so each node that may run the pod builds it.
"""
from __future__ import annotations

import sys

from common.tooling import python_image

IMAGE = "groundup/dashboard:dev"
DASHBOARD = python_image.PythonImage(
    tag=IMAGE,
    distributions=("flask", "requests", "PyYAML"),          # and whatever they require
    code=("common", "dashboard"),
    built_by="dashboard/dashboard_image.py",
    suffixes=(".py", ".html", ".css", ".js", ".svg"))


def build(image: str = IMAGE, quiet: bool = False) -> str:
    """Import the image unless one with the same files is there; returns its tag."""
    return python_image.build(DASHBOARD, image, quiet=quiet)


if __name__ == "__main__":
    sys.exit(python_image.main(DASHBOARD, __doc__.split("\n\n")[0]))
