"""Without chromium, the dashboard's browser tests skip on a learner's
machine and fail in CI (GROUNDUP_REQUIRE_CHROMIUM=1): CI must never pass by
skipping the browser."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
A_BROWSER_TEST = "tests/dashboard/test_dashboard_page.py::test_names_and_messages_are_shown_as_text"


@pytest.mark.parametrize("required, outcome", [("", "1 skipped"), ("1", "1 error")])
def test_missing_chromium_skips_or_fails(tmp_path, required, outcome):
    env = {**os.environ, "GROUNDUP_CHROMIUM": str(tmp_path / "no-chromium"), "GROUNDUP_REQUIRE_CHROMIUM": required}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", A_BROWSER_TEST],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert outcome in result.stdout, result.stdout[-2000:]
    assert f"no chromium at {tmp_path / 'no-chromium'}" in result.stdout
    assert (result.returncode == 0) == (required == "")
