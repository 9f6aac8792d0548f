"""The product speaks of itself, to its readers: no page, chapter, comment, docstring, test, script,
benchmark or configuration file points at the work that made it (an issue's number, a working
session, a machine lent for a while, what was asked for, a commit's hash).  A fact such a sentence
carried is said as the product would: where it is written down (a file, a section), on what
hardware, with which command.

Scanned: every file git tracks, and every untracked one it does not ignore (so a new page is read
before it is committed), whose name ends in one of ``SUFFIXES`` or is one of ``NAMES``; of a
notebook, the sources of its markdown and code cells, never its outputs.  Not scanned: the records
that say which code made a file (``records/**/log.json``, ``transformer_lib/translation/everyday/
log.json``, the ``SHA256SUMS`` files: data, not prose, and not of these suffixes) and this file,
which has to spell the patterns out.  ``book/claims_table.md``, which ``scripts/claims.py`` writes,
and ``book/appendix_times.md`` are such records too where their tables name the code that measured
each row or column: there the two commit patterns are not applied, the others are."""

from __future__ import annotations

import re
import subprocess

import nbformat

from browser import ROOT

SUFFIXES = (".md", ".py", ".ipynb", ".toml", ".yml", ".yaml", ".cfg", ".js", ".sh", ".cff", ".txt")
NAMES = ("Makefile",)
EXEMPT = {"tests/test_product_voice.py"}
# records of which code measured what: the claims matrix's table (written by scripts/claims.py)
# and the appendix's tables of times, a row per run with the commit it ran
CODE_RECORDS = {"book/claims_table.md", "book/appendix_times.md"}

# Each pattern is matched against a whole file (or cell), so a phrase broken across two lines is
# still found; "\s+" stands for any run of spaces and line breaks.  Case is ignored.
PATTERNS = {
    # an issue of the tracker, by number ("issue 30", "issues 29 and 30", "issue #12")
    "issue number": r"\bissues?\s+#?\d+\b",
    # a stopping point of the work, by number ("stop 3")
    "stop number": r"\bstop\s+#?\d+\b",
    # the working session that wrote a sentence.  "session" alone is the reader's word too (a
    # Colab session, ONNX Runtime's InferenceSession and its session options, "a lost session"
    # that training survives), so only the phrases that place a session among others are matched:
    # "this session('s)", "that session", "the next session's", "an earlier session's", "no
    # session has had ..."
    "a working session": r"\b(?:this|that|next|previous|earlier|later|no)\s+sessions?\b",
    # "the session's device time", "the session after it", "slowed through the session"
    "the working session": r"\bthe\s+session(?:'s|\s+after\b|\s+before\b)|\bthrough\s+the\s+session\b",
    # "other sessions' work": several sessions, side by side on one machine
    "sessions' work": r"\bsessions'",
    # a machine lent for a while ("a lent H100"); whole word only, so "silent" or "lentil" are not
    "lent machine": r"\blent\b",
    # a time that was asked for ("the 8 minutes asked for", "its 10 asked for").  "Asked for"
    # alone is plain English ("the vocabulary has the size asked for", "the pages asked for
    # outside files"), so only a number or a unit of time before it is matched
    "asked for": r"\b(?:\d+|minutes?|seconds?|hours?)\s+asked\s+for\b",
    # a commit named as such ("commit f10cff2", "the commit after a7b3842")
    "commit": r"\bcommits?\s+(?:after\s+|before\s+|of\s+)?(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b",
    # a commit's short hash on its own ("at dc87cf4", "(a41f08e, 2026-11-26", "8adc8dd took"): a
    # word of 7 to 12 lowercase hexadecimal digits with at least one digit and one letter a-f.
    # Not a colour ("#1f77b4"), nor part of a longer word, path, URL, version or quoted string
    # ("0x1f2e3d4", ".../commit/dc87cf4", '"a1b2c3d"'), and never on a line about checksums,
    # whose hashes are 40 to 64 digits anyway (see CHECKSUM_LINE)
    "commit hash": r"(?<![#\w./\\:=@'\"-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,12}"
                   r"(?![\w/\\:@\"-]|\.\w|'(?!s\b))",
}
CASELESS = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in PATTERNS.items()
            if name != "commit hash"}
COMMIT_PATTERNS = ("commit", "commit hash")
HEX = re.compile(PATTERNS["commit hash"])      # git writes hashes in lowercase
CHECKSUM_LINE = re.compile(r"sha-?\s?(?:1|256|512)\b|sha(?:1|256|512)|checksum|digest|md5|integrity",
                           re.IGNORECASE)


def scanned_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True, cwd=ROOT).stdout.splitlines()
    names = []
    for name in sorted(set(listed)):
        base = name.rsplit("/", 1)[-1]
        if name in EXEMPT or not (ROOT / name).is_file():      # deleted in the working tree
            continue
        if base.endswith(".txt") and base.startswith("requirements"):
            continue
        if base.endswith(SUFFIXES) or base in NAMES:
            names.append(name)
    return names


def texts(name: str):
    """(where, text) for each piece of prose or code in the file: the file itself, or each cell."""
    path = ROOT / name
    if name.endswith(".ipynb"):
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells, 1):
            if cell.cell_type in ("markdown", "code"):
                yield f"{name} cell {number} line ", cell.source
    else:
        yield f"{name}:", path.read_text(encoding="utf-8", errors="replace")


def hits(where: str, text: str, record: bool = False) -> list[str]:
    """Each match in ``text`` as "where" plus its line and words; a record of which code made a
    file (``record``) may name a commit."""
    found = []
    for name, pattern in CASELESS.items():
        if not (record and name in COMMIT_PATTERNS):
            found += [(m.start(), m.group()) for m in pattern.finditer(text)]
    for m in HEX.finditer(text) if not record else ():
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        if not CHECKSUM_LINE.search(text[start:end if end >= 0 else len(text)]):
            found.append((m.start(), m.group()))
    return [f"{where}{text.count(chr(10), 0, start) + 1}: {' '.join(words.split())}"
            for start, words in sorted(set(found))]


def test_the_patterns_find_what_they_are_for_and_nothing_else():
    bad = ["the issue 30 fix", "issues 29 and 30", "at stop 3", "found in this session",
           "that session's CI", "The next session's CI", "an earlier\nsession's build",
           "no session has had two", "the session's 15", "The session after it",
           "slowed through the session by", "other sessions' work", "on a lent H100", "Lent machines",
           "the 8 minutes asked for", "its 10 asked for", "(commit f10cff2, 2026)",
           "the commit after a7b3842", "at dc87cf4, 2026", "(a41f08e, 2026-11-26", "8adc8dd took",
           "at a3acada.", "a3acada's build"]
    good = ["ort.InferenceSession(path)", "session.disable_quant_qdq", "a Colab session",
            "Restart session", "training that survives a lost session", "the issue of scale",
            "stop at 3", "silent", "lentil", "the size asked for", "asked for outside files",
            "color #1f77b4", "0x1f2e3d4", "https://github.com/o/r/commit/dc87cf4", "sha256 3f2a9c1d0b",
            "deadbeef", "1234567", "transformer_lib 0.1.0a1", "uuid 550e8400-e29b", "commits",
            "the commit's date"]
    assert all(hits("", text) for text in bad), [text for text in bad if not hits("", text)]
    assert not any(hits("", text) for text in good), [hits("", text) for text in good]
    row = "| 04 | native | 0 | 2026-11-26 | AMD EPYC (Zen 4), 2 cores, 925 / 220 | 5943caf |"
    assert hits("", row) and not hits("", row, record=True) and hits("", "issue 30", record=True)


def test_the_product_speaks_of_itself():
    names = scanned_files()
    assert any(name.endswith(".ipynb") for name in names) and "Makefile" in names
    found = [hit for name in names for where, text in texts(name)
             for hit in hits(where, text, record=name in CODE_RECORDS)]
    assert not found, "words about the work, not the product:\n" + "\n".join(found)
