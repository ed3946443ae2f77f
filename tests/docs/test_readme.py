"""The README and the tutorial and how-to pages run as written: every command of their bash blocks, in order.

Each document in :data:`DOCUMENTS` runs in its own empty directory, its commands
in order (a document never relies on another's files).

A bash block whose lines start with ``$ `` is a transcript: each ``$ `` line is
a command and the lines after it are what the terminal shows (stdout and
stderr as they interleave). In a block without ``$``, every line that is not
a comment is a command and no output is shown. A trailing ``# comment`` is not
part of the command; ``# ... exit status N`` in it is the status the command
must end with (0 otherwise). A command ending in ``&`` (``ldp serve``) keeps
running in the background until the module's tests end.

Shown output is compared exactly, except for the commands in RANDOMIZED,
whose output comes from fresh CSPRNG coins and is compared in shape only.
The commands in SKIPPED do not run here, for the reason given. The documents'
python blocks run too, each in its own interpreter.

Plain ``pytest`` runs the README's quick start and first spec (its commands up
to the first ``ldp spec``); ``pytest -m slow`` runs everything else.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The documents whose commands run, each in its own directory: the README's tour, the tutorial, the how-to guides.
DOCUMENTS = (
    "README.md",
    "docs/tutorial.md",
    "docs/how-to/choose.md",
    "docs/how-to/means.md",
    "docs/how-to/budgets.md",
    "docs/how-to/heavy-hitters.md",
    "docs/how-to/audit.md",
    "docs/how-to/dask.md",
)

#: Commands that must not run inside the test suite, with the reason.
SKIPPED = {
    'pip install -e ".[serve]"': "installs the project: the environment running this test is already installed",
}

#: A number as the CLI prints it: sign, thousands commas, decimals, exponent.
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
#: A shown line standing for any further lines of output (last shown line only).
ELLIPSIS = "..."


@dataclass(frozen=True)
class Command:
    """One README command: its text (without the comment), where it is, and what it must print."""

    text: str
    line: int
    exit_status: int
    shown: tuple[str, ...] | None  # the output the document shows; None where it shows none
    document: str = "README.md"


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment) of a shell line: as in bash, a ``#`` starting a word outside quotes begins the comment."""
    quote = None
    escaped = False
    for at, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or line[at - 1].isspace()):
            return line[:at].rstrip(), line[at + 1 :].strip()
    return line.rstrip(), ""


def fenced_blocks(text: str, language: str) -> list[list[tuple[int, str]]]:
    """The (line number, line) lists of each ```language block of a Markdown text."""
    blocks: list[list[tuple[int, str]]] = []
    block = None
    for number, line in enumerate(text.splitlines(), start=1):
        if block is None:
            if line.strip() == f"```{language}":
                block = []
        elif line.strip() == "```":
            blocks.append(block)
            block = None
        else:
            block.append((number, line))
    return blocks


def block_commands(block: list[tuple[int, str]], document: str = "README.md") -> list[Command]:
    """The commands of one bash block (a transcript when any line starts with ``$ ``)."""
    transcript = any(line.startswith("$ ") for _, line in block)
    parsed: list[tuple[int, str, str, list[str]]] = []  # line, command, comment, shown output
    for number, line in block:
        if transcript and not line.startswith("$ "):
            if not parsed:
                raise ValueError(f"{document} line {number}: output before any $ command")
            parsed[-1][3].append(line)
            continue
        text, comment = split_comment(line.removeprefix("$ ") if transcript else line)
        if text:
            parsed.append((number, text, comment, []))
    return [
        Command(
            text=text,
            line=number,
            exit_status=int(status.group(1)) if (status := re.search(r"exit status (\d+)", comment)) else 0,
            shown=tuple(shown) if shown else None,
            document=document,
        )
        for number, text, comment, shown in parsed
    ]


def document_commands(document: str) -> list[Command]:
    """Every command of one document's bash blocks, in order."""
    blocks = fenced_blocks((ROOT / document).read_text(encoding="utf-8"), "bash")
    return [command for block in blocks for command in block_commands(block, document)]


def readme_commands() -> list[Command]:
    """Every command of the README's bash blocks, in order."""
    return document_commands("README.md")


def masked(line: str) -> list[str]:
    """The words of a line with every number replaced by ``#``."""
    return ["#" if NUMBER.fullmatch(word) else word for word in line.split()]


def same_table_shape(shown: tuple[str, ...], printed: list[str]) -> None:
    """The printed lines are the shown ones up to their numbers; a last ``...`` line stands for any further lines."""
    expected = list(shown)
    if expected[-1].strip() == ELLIPSIS:
        expected.pop()
        printed = printed[: len(expected)]
    assert [masked(line) for line in printed] == [masked(line) for line in expected]


def same_json_shape(shown: tuple[str, ...], printed: list[str]) -> None:
    """Each printed line is a JSON object with the shown one's keys and value types."""

    def shape(line: str) -> dict[str, type]:
        return {key: type(value) for key, value in json.loads(line).items()}

    assert [shape(line) for line in printed] == [shape(line) for line in shown]


def same_text(shown: tuple[str, ...], printed: list[str]) -> None:
    """The printed lines are exactly the shown ones (trailing spaces aside)."""
    assert [line.rstrip() for line in printed] == [line.rstrip() for line in shown]


#: Commands whose shown output depends on the client's random coins: how to compare it.
RANDOMIZED: dict[str, Callable[[tuple[str, ...], list[str]], None]] = {
    "head -1 reports.jsonl": same_json_shape,
    "ldp aggregate --spec spec.json reports.jsonl": same_table_shape,
    "ldp aggregate --spec minutes.json m.jsonl": same_table_shape,
    "ldp audit --spec grr.json": same_table_shape,
    "ldp aggregate --spec pem.json words.jsonl": same_table_shape,
}

COMMANDS = [command for document in DOCUMENTS for command in document_commands(document)]
#: The default run checks the README's commands up to the first ``ldp spec`` (the quick start and one exact
#: output); ``pytest -m slow`` runs the rest (each command needs every one before it in its document, so the
#: fast ones are a prefix of the README's, and the README comes first).
FAST_COMMANDS = next((i for i, c in enumerate(COMMANDS) if c.text.startswith("ldp spec ")), len(COMMANDS)) + 1
assert all(command.document == "README.md" for command in COMMANDS[:FAST_COMMANDS])


class Session:
    """One document's commands run in order in one directory, each once, as far as a test asks."""

    def __init__(self, directory: Path, env: dict[str, str], commands: list[Command], port: int):
        self.directory = directory
        self.env = env
        self.commands = commands
        self.port = port  # the collector's port in place of the documented one (:func:`on_port`)
        self.results: list[subprocess.CompletedProcess | None] = []
        self.background: list[subprocess.Popen] = []

    def result(self, index: int) -> subprocess.CompletedProcess | None:
        """The result of the document's command ``index`` (None when skipped), running the commands before it first."""
        while len(self.results) <= index:
            command = self.commands[len(self.results)]
            skipped = command.text in SKIPPED
            self.results.append(None if skipped else self.run(on_port(command.text, self.port)))
        return self.results[index]

    def run(self, text: str) -> subprocess.CompletedProcess:
        """Run one command through bash; stdout and stderr together, as a terminal shows them.

        A command ending in ``&`` (a server) is started in its own process group
        and keeps running until :meth:`stop_background`; it shows no output.
        """
        if text.endswith("&"):
            process = subprocess.Popen(
                ["bash", "-c", "exec " + text.removesuffix("&").strip()],
                cwd=self.directory,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.background.append(process)
            return subprocess.CompletedProcess(text, 0, "")
        return subprocess.run(
            ["bash", "-c", text],
            cwd=self.directory,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=600,
        )

    def stop_background(self) -> None:
        for process in self.background:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


#: The port the documents' ``ldp serve`` examples listen on.
DOCUMENTED_PORT = 8765


def free_port() -> int:
    """A port on 127.0.0.1 free now (the kernel's choice), so parallel runs never share one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def on_port(text: str, port: int) -> str:
    """``text`` with the documented collector port (``--port 8765``, ``127.0.0.1:8765``) replaced by ``port``."""
    return re.sub(rf"(--port |127\.0\.0\.1:){DOCUMENTED_PORT}\b", rf"\g<1>{port}", text)


class Sessions:
    """A :class:`Session` per document, each in its own empty directory, made when first asked for.

    Only one document's servers run at a time: starting another document's
    session stops the background processes of the one before.
    """

    def __init__(self, tmp_path_factory, env: dict[str, str]):
        self.tmp_path_factory = tmp_path_factory
        self.env = env
        self.by_document: dict[str, Session] = {}
        #: the documents' collector listens on DOCUMENTED_PORT; the tests run it on a free port instead
        self.port = free_port()

    def of(self, document: str) -> Session:
        if document not in self.by_document:
            self.stop_background()
            directory = self.tmp_path_factory.mktemp(Path(document).stem)
            commands = [command for command in COMMANDS if command.document == document]
            self.by_document[document] = Session(directory, self.env, commands, self.port)
        return self.by_document[document]

    def stop_background(self) -> None:
        for session in self.by_document.values():
            session.stop_background()


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> Iterator[Sessions]:
    """Empty directories where ``python`` is this interpreter and ``ldp`` the console script beside it."""
    tools = tmp_path_factory.mktemp("bin")
    python = tools / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    path = os.pathsep.join([str(tools), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {
        **os.environ,
        "PATH": path,
        "PYTHONUNBUFFERED": "1",
    }  # unbuffered: stdout and stderr interleave as shown
    sessions = Sessions(tmp_path_factory, env)
    yield sessions
    sessions.stop_background()


def test_the_documented_port_is_replaced_by_a_free_one():
    assert on_port("ldp serve --port 8765 &", 40001) == "ldp serve --port 40001 &"
    assert on_port("curl http://127.0.0.1:8765/healthz", 40001) == "curl http://127.0.0.1:40001/healthz"
    assert on_port("ldp spec grr --epsilon 8765", 40001) == "ldp spec grr --epsilon 8765"


def test_a_comment_starts_at_an_unquoted_hash_word():
    line = """echo '# kept' "#kept" a#b >> f   # exit status 3"""
    assert split_comment(line) == ("""echo '# kept' "#kept" a#b >> f""", "exit status 3")


def test_transcript_lines_after_a_command_are_its_output():
    transcript = [(1, "$ ldp x   # exit status 3"), (2, "printed"), (3, "$ true")]
    assert block_commands(transcript) == [Command("ldp x", 1, 3, ("printed",)), Command("true", 3, 0, None)]
    assert block_commands(transcript, "notes/x.md")[0].document == "notes/x.md"
    plain = [(1, "ldp y   # a note"), (2, "# a comment line"), (3, "true")]
    assert block_commands(plain) == [Command("ldp y", 1, 0, None), Command("true", 3, 0, None)]


def test_readme_has_commands_and_every_listed_command_is_in_it():
    texts = {command.text for command in COMMANDS}
    for document in DOCUMENTS:
        assert any(command.document == document for command in COMMANDS), (
            f"no bash commands found in {document}"
        )
    assert set(SKIPPED) <= texts, f"SKIPPED names commands the README no longer has: {set(SKIPPED) - texts}"
    shows_output = {command.text for command in COMMANDS if command.shown is not None}
    unshown = set(RANDOMIZED) - shows_output
    assert not unshown, f"RANDOMIZED names commands the README shows no output of: {unshown}"


@pytest.mark.parametrize(
    "index",
    [i if i < FAST_COMMANDS else pytest.param(i, marks=pytest.mark.slow) for i in range(len(COMMANDS))],
    ids=[f"{Path(c.document).stem}:line{c.line}: {c.text[:50]}" for c in COMMANDS],
)
def test_readme_command(sessions, index):
    command = COMMANDS[index]
    if command.text in SKIPPED:
        pytest.skip(SKIPPED[command.text])
    session = sessions.of(command.document)
    result = session.result(session.commands.index(command))
    printed = result.stdout.splitlines()
    assert result.returncode == command.exit_status, (
        f"{command.document} line {command.line}: {command.text!r} exited {result.returncode}, "
        f"not {command.exit_status}:\n{result.stdout}"
    )
    if command.shown is not None:
        RANDOMIZED.get(command.text, same_text)(command.shown, printed)


PYTHON_BLOCKS = [
    (document, block)
    for document in DOCUMENTS
    for block in fenced_blocks((ROOT / document).read_text(encoding="utf-8"), "python")
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "document, block", PYTHON_BLOCKS, ids=[f"{Path(d).stem}:line{block[0][0]}" for d, block in PYTHON_BLOCKS]
)
def test_readme_python_block(document, block, tmp_path):
    code = "\n".join(line for _, line in block)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"{document} python block at line {block[0][0]} failed:\n{result.stderr}"
