"""Small git repositories written on purpose: the demo's, the benchmark's and the tests'.

Everything else in this package only reads checkouts; this builds one, commit by commit.
"""

import os
import subprocess
from pathlib import Path

_IDENTITY = {
    "GIT_AUTHOR_NAME": "Night Watch demo",
    "GIT_AUTHOR_EMAIL": "demo@example.invalid",
    "GIT_COMMITTER_NAME": "Night Watch demo",
    "GIT_COMMITTER_EMAIL": "demo@example.invalid",
}


class ScratchRepo:
    def __init__(self, path, branch="main"):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, **_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(self.path)}
        if not (self.path / ".git").exists():
            self.git("init", "-q", "-b", branch)

    def git(self, *args, input=None):
        result = subprocess.run(
            ["git", "-C", str(self.path), *args], input=input, capture_output=True, env=self.env, check=True
        )
        return result.stdout.decode().strip()

    def write(self, path, text):
        target = self.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def read(self, path):
        return (self.path / path).read_text()

    def insert_lines(self, path, before_line, lines):
        """Insert lines so the first of them becomes line `before_line`."""
        current = self.read(path).split("\n")
        current[before_line - 1 : before_line - 1] = list(lines)
        self.write(path, "\n".join(current))

    def replace_line(self, path, line, text):
        current = self.read(path).split("\n")
        current[line - 1] = text
        self.write(path, "\n".join(current))

    def move(self, old, new):
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        self.git("mv", old, new)

    def delete(self, path):
        self.git("rm", "-q", path)

    def commit(self, message="change"):
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self):
        return self.git("rev-parse", "HEAD")


def numbered_source(name, lines):
    """A file's text whose every line is distinct, like real code."""
    return "".join(f"def {name}_{i}(value):  # step {i} of {name}\n" for i in range(1, lines + 1))
