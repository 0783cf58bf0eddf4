"""A Docker image for a Python program of this checkout, built offline.

A component run by the cluster as a pod (chapter 05's controller, the
dashboard) needs an image holding Python, the libraries it imports and its
own code. Online you would write a Dockerfile starting
`FROM python:3.11-slim` and `pip install` into it; these machines reach no
registry, so this does what that Dockerfile would, from what this computer
already has, and hands the files to `docker import` (as
01-kubelet/images/build.sh does for busybox):

    the interpreter running this script, and its standard library
    the shared libraries they link to (asked of ldd)
    the installed distributions the program needs, found through their
      metadata (the ones named, then what they require, and so on)
    folders of this checkout (common/ and the program's own), at /groundup
    busybox as /bin/sh, so `kubectl exec ... -- sh` has a shell

Each file keeps its path on this computer, so the interpreter finds its
standard library where it was built to look. The tar is built with fixed
times and owners, and its sha256 is the image's label: the image is
imported again only when a file in it changed.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
SITE = "/opt/groundup/site-packages"
SKIPPED_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
                  "config-3.11-x86_64-linux-gnu", "__pycache__"}
BUSYBOX = "/bin/busybox"


@dataclass(frozen=True)
class PythonImage:
    tag: str                                   # groundup/controllers:dev
    distributions: tuple[str, ...]             # what the program imports: ("kubernetes", "requests")
    code: tuple[str, ...]                      # folders of this checkout: ("common", "04-controllers")
    built_by: str                              # the script, named in the image's history
    suffixes: tuple[str, ...] = (".py", ".yaml", ".json")   # which of their files go in


def distributions(roots) -> list[importlib.metadata.Distribution]:
    """The roots and everything they require (extras left out), each once."""
    found, todo = {}, list(roots)
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in found:
            continue
        found[key] = importlib.metadata.distribution(name)
        for line in found[key].requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return sorted(found.values(), key=lambda d: d.metadata["Name"].lower())


def python_files() -> dict[str, Path]:
    """{path in the image: file here}: the interpreter and its standard library."""
    files = {}
    interpreter = Path(os.path.realpath(sys.executable))
    files[str(interpreter)] = interpreter
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for folder, subfolders, names in os.walk(stdlib):
        subfolders[:] = [s for s in subfolders if s not in SKIPPED_STDLIB]
        for name in names:
            if not name.endswith(".pyc"):
                files[os.path.join(folder, name)] = Path(folder, name)
    return files


def library_files(roots) -> dict[str, Path]:
    files = {}
    for dist in distributions(roots):
        for relative in dist.files or []:
            path = Path(dist.locate_file(relative)).resolve()
            if path.suffix == ".pyc" or ".." in relative.parts or not path.is_file():
                continue          # compiled caches, and scripts installed outside site-packages
            files[f"{SITE}/{relative.as_posix()}"] = path
    return files


def code_files(folders, suffixes) -> dict[str, Path]:
    files = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in suffixes:
                files[f"/groundup/{path.relative_to(ROOT).as_posix()}"] = path
    return files


def shared_libraries(elf_files: list[Path]) -> dict[str, Path]:
    """What the dynamic loader will look for, under the names ldd says it
    looks for them (the loader itself included)."""
    files = {}
    for path in elf_files:
        listed = subprocess.run(["ldd", str(path)], capture_output=True, text=True).stdout
        for line in listed.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                files[match.group(1)] = Path(os.path.realpath(match.group(1)))
    return files


def image_files(image: PythonImage) -> dict[str, Path]:
    files = {**python_files(), **library_files(image.distributions), **code_files(image.code, image.suffixes)}
    elves = [p for name, p in files.items() if name.endswith(".so") or ".so." in name or p == Path(sys.executable).resolve()]
    files.update(shared_libraries(elves))
    files["/bin/busybox"] = Path(BUSYBOX)
    return files


def build_tar(files: dict[str, Path]) -> bytes:
    """A tar of the files with fixed times and owners, so that the same files give the same bytes."""
    buffer = io.BytesIO()
    interpreter = os.path.realpath(sys.executable)
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        def add_directory(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)

        def add_link(name: str, target: str) -> None:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            tar.addfile(info)

        add_directory("/tmp", 0o1777)
        for name in ("python3", "python"):
            add_link(f"/usr/local/bin/{name}", interpreter)
        add_link("/bin/sh", "busybox")
        for name, path in sorted(files.items()):
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size, info.mode = path.stat().st_size, path.stat().st_mode & 0o755
            with open(path, "rb") as f:
                tar.addfile(info, f)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size, info.mode = len(passwd), 0o644
        tar.addfile(info, io.BytesIO(passwd))
    return buffer.getvalue()


def current_label(tag: str) -> str | None:
    shown = subprocess.run(["docker", "image", "inspect", "-f", '{{ index .Config.Labels "groundup.fingerprint" }}',
                            tag], capture_output=True, text=True)
    return shown.stdout.strip() if shown.returncode == 0 else None


def build(image: PythonImage, tag: str | None = None, quiet: bool = False) -> str:
    """Import the image unless one with the same files is there; returns its tag."""
    tag = tag or image.tag
    content = build_tar(image_files(image))
    fingerprint = hashlib.sha256(content).hexdigest()[:16]
    if current_label(tag) == fingerprint:
        if not quiet:
            print(f"images: {tag} is up to date")
        return tag
    done = subprocess.run(["docker", "import",
                           "-c", "ENV PATH=/usr/local/bin:/bin",
                           "-c", f"ENV PYTHONPATH={SITE}:/groundup",
                           "-c", "ENV PYTHONUNBUFFERED=1",       # log lines reach `kubectl logs` as they happen
                           "-c", "ENV PYTHONDONTWRITEBYTECODE=1",
                           "-c", "WORKDIR /groundup",
                           "-c", 'CMD ["python3"]',
                           "-c", f"LABEL groundup.fingerprint={fingerprint}",
                           "-m", f"built offline by {image.built_by}",
                           "-", tag], input=content, capture_output=True)
    if done.returncode != 0:
        raise SystemExit(f"images: docker import of {tag} failed: {done.stderr.decode().strip()}")
    if not quiet:
        print(f"images: built {tag} ({len(content) / 1e6:.0f} MB of files)")
    return tag


def main(image: PythonImage, description: str, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=Path(image.built_by).name, description=description)
    parser.add_argument("--image", default=image.tag, help=f"the tag to build (default {image.tag})")
    parser.add_argument("--list", action="store_true", help="print what would go in, build nothing")
    args = parser.parse_args(argv)
    if args.list:
        files = image_files(image)
        for name in sorted(files):
            print(name)
        print(f"{len(files)} files, {sum(p.stat().st_size for p in files.values()) / 1e6:.0f} MB", file=sys.stderr)
        return 0
    build(image, args.image)
    return 0
