"""Every code excerpt a README quotes is the code's own, byte for byte
(after removing the region's common indentation)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from common.tooling import snippets

QUOTES = [q for readme in snippets.readmes() for q in snippets.quotes_in(readme)]


def test_regions_are_well_formed_and_unique():
    regions = snippets.all_regions()
    assert "sync-loop" in regions


@pytest.mark.parametrize("quote", QUOTES, ids=[f"{q.readme.parent.name}/{q.readme.name}:{q.line}" for q in QUOTES])
def test_readme_quote_matches_the_code(quote):
    problem = snippets.check_quote(quote)
    assert problem is None, problem


@pytest.mark.parametrize("quote", QUOTES, ids=[f"{q.readme.parent.name}/{q.readme.name}:{q.line}" for q in QUOTES])
def test_a_quoted_region_is_short_enough_for_a_blog_post(quote):
    """A quote a reader can take in at once: at most MAX_QUOTED_LINES lines.
    A longer region is split into named functions, each quoted on its own."""
    lines = quote.text.count("\n")
    assert lines <= snippets.MAX_QUOTED_LINES, (
        f"{quote.readme.relative_to(snippets.ROOT)}:{quote.line}: {quote.source}#{quote.region} is {lines} lines; "
        f"split it so each quoted region is at most {snippets.MAX_QUOTED_LINES}")


def test_a_drifted_quote_is_reported_with_file_line_and_diff(tmp_path):
    (tmp_path / "code.py").write_text("def f():\n    # [START f-body]\n    return 1\n    # [END f-body]\n")
    readme = tmp_path / "README.md"
    readme.write_text("Intro\n<!-- snippet: code.py#f-body -->\n```python\nreturn 2\n```\n")
    [quote] = snippets.quotes_in(readme)
    problem = snippets.check_quote(quote, root=tmp_path)
    assert problem.startswith("README.md:2: snippet code.py#f-body differs from the code")
    assert "-return 1" in problem and "+return 2" in problem


@pytest.mark.parametrize("source, message", [
    ("# [START a]\nx\n", "region(s) never end: a"),
    ("# [END a]\n", "region 'a' ends but never started"),
    ("# [START a]\n# [END a]\n# [START a]\n# [END a]\n", "region 'a' starts twice"),
])
def test_malformed_regions_are_refused(tmp_path, source, message):
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(snippets.SnippetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        snippets.regions_in(path)


def test_the_command_prints_a_region_for_a_blog_post():
    result = subprocess.run([sys.executable, "-m", "common.tooling.snippets", "pod-phase"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.startswith("def pod_phase(")
    missing = subprocess.run([sys.executable, "-m", "common.tooling.snippets", "no-such-region"],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "--list" in missing.stderr
