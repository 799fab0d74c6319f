"""Read-only access to a project's checkout through the git command line.

The git CLI is on every machine that has a clone, reads any repository format git itself
writes, and brings rename detection (`git diff -M`) for free. Every call here only reads: no
fetch, no checkout, no index refresh (GIT_OPTIONAL_LOCKS=0), no network.
"""

import os
import subprocess
from pathlib import Path

from django.conf import settings

GIT_TIMEOUT_SECONDS = 60


class CheckoutUnavailable(Exception):
    """The project has no readable checkout; the message says why, for the person who asked."""


def checkout_dir(project):
    """The project's local clone: its checkout path (relative ones under PROJECT_CHECKOUT_ROOT),
    else PROJECT_CHECKOUT_ROOT/<slug>; None when neither is configured."""
    root = settings.PROJECT_CHECKOUT_ROOT
    path = (project.checkout_path or "").strip()
    if path:
        candidate = Path(path).expanduser()
        if candidate.is_absolute():
            return candidate
        return Path(root) / candidate if root else None
    return Path(root) / project.slug if root else None


def has_checkout_configured(project):
    return checkout_dir(project) is not None


class Repository:
    """One checkout, read through `git` subprocesses."""

    def __init__(self, path):
        self.path = Path(path)
        # The ceiling keeps git from taking a parent folder's repository for this checkout.
        self.env = {
            **os.environ,
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
            "GIT_CEILING_DIRECTORIES": str(self.path.resolve().parent),
        }

    @classmethod
    def for_project(cls, project):
        path = checkout_dir(project)
        if path is None:
            raise CheckoutUnavailable(
                f"project {project.slug!r} has no checkout: set its checkout path or PROJECT_CHECKOUT_ROOT"
            )
        if not path.is_dir():
            raise CheckoutUnavailable(f"the checkout of {project.slug!r} ({path}) does not exist")
        return cls(path)

    def _git(self, *args, input=None, check=True):
        try:
            result = subprocess.run(
                ["git", "-c", f"safe.directory={self.path}", "-C", str(self.path), *args],
                input=input,
                capture_output=True,
                env=self.env,
                timeout=GIT_TIMEOUT_SECONDS,
            )
        except FileNotFoundError as exc:
            raise CheckoutUnavailable("the git command is not installed on this server") from exc
        except subprocess.TimeoutExpired as exc:
            raise CheckoutUnavailable(f"git {args[0]} took longer than {GIT_TIMEOUT_SECONDS}s") from exc
        if check and result.returncode != 0:
            message = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CheckoutUnavailable(f"git {args[0]} failed in {self.path}: {message[-1] if message else 'error'}")
        return result

    def head(self, branch=""):
        """The commit the branch (default: HEAD) points at."""
        name = branch or "HEAD"
        result = self._git("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
        if result.returncode != 0:
            if self._git("rev-parse", "--git-dir", check=False).returncode != 0:
                raise CheckoutUnavailable(f"{self.path} is not a git repository")
            if branch:
                raise CheckoutUnavailable(f"branch {branch!r} is not in the checkout at {self.path}")
            raise CheckoutUnavailable(f"{self.path} is not a git repository with a commit")
        return result.stdout.decode().strip()

    def has_commit(self, sha):
        return self._git("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def tree(self, commit):
        """{path: blob id} of every file at the commit."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit).stdout
        files = {}
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            _mode, kind, sha = meta.split(b" ")
            if kind == b"blob":
                files[path.decode("utf-8", "surrogateescape")] = sha.decode()
        return files

    def blobs(self, shas):
        """{blob id: text} for the given blobs, read by one `git cat-file --batch`."""
        shas = list(dict.fromkeys(shas))
        if not shas:
            return {}
        out = self._git("cat-file", "--batch", input=("\n".join(shas) + "\n").encode()).stdout
        texts, pos = {}, 0
        for sha in shas:
            end = out.index(b"\n", pos)
            header = out[pos:end].split(b" ")
            pos = end + 1
            if len(header) < 3:  # "<sha> missing"
                continue
            size = int(header[2])
            texts[sha] = out[pos : pos + size].decode("utf-8", "replace")
            pos += size + 1
        return texts

    def changes(self, old, new):
        """What happened to files between two commits, with git's rename detection:
        (modified paths, deleted paths, {old path: new path}); None when `old` is not in the repository."""
        if not self.has_commit(old):
            return None
        out = self._git("diff", "--name-status", "-z", "-M", "--no-ext-diff", old, new).stdout
        fields = [f.decode("utf-8", "surrogateescape") for f in out.split(b"\0")]
        modified, deleted, renamed = set(), set(), {}
        i = 0
        while i < len(fields) and fields[i]:
            status = fields[i]
            if status[0] in "RC":
                source, target = fields[i + 1], fields[i + 2]
                if status[0] == "R":
                    renamed[source] = target
                i += 3
                continue
            path = fields[i + 1]
            if status[0] == "D":
                deleted.add(path)
            elif status[0] in "MT":
                modified.add(path)
            i += 2
        return modified, deleted, renamed
