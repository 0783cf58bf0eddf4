"""Build the image our controllers run in as pods, offline: groundup/controllers:dev.

    python 05-proxy-dns/controller_image.py            # build it (skipped when up to date)
    python 05-proxy-dns/controller_image.py --list     # what would go in, and its size

A controller in a pod needs an image holding Python, the libraries it
imports and its own code. Online you would write a Dockerfile starting
`FROM python:3.11-slim` and `pip install` into it; these machines reach no
registry, so this script does what that Dockerfile would, from what this
computer already has, and hands the files to `docker import` (as
01-kubelet/images/build.sh does for busybox):

    the interpreter running this script, and its standard library
    the shared libraries they link to (asked of ldd)
    the installed distributions the official Python client needs, found
      through their metadata (kubernetes, then what it requires, and so on),
      and cryptography (the ingress controller's TLS)
    this checkout's common/, 04-controllers/ and 05-proxy-dns/, at /groundup
    busybox as /bin/sh, so `kubectl exec ... -- sh` has a shell

Each file keeps its path on this computer, so the interpreter finds its
standard library where it was built to look. The tar is built with fixed
times and owners, and its sha256 is the image's label: the image is
imported again only when a file in it changed (edit the controller, run
this again). The building is common/tooling/python_image.py's, which the
dashboard's image shares; this file says what goes in.
"""
from __future__ import annotations

import sys

from common.tooling import python_image

IMAGE = "groundup/controllers:dev"
CONTROLLERS = python_image.PythonImage(
    tag=IMAGE,
    distributions=("kubernetes", "requests", "PyYAML", "cryptography"),     # and whatever they require
    code=("common", "04-controllers", "05-proxy-dns"),
    built_by="05-proxy-dns/controller_image.py")


def build(image: str = IMAGE, quiet: bool = False) -> str:
    """Import the image unless one with the same files is there; returns its tag."""
    return python_image.build(CONTROLLERS, image, quiet=quiet)


if __name__ == "__main__":
    sys.exit(python_image.main(CONTROLLERS, __doc__.split("\n\n")[0]))
