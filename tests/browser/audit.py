"""Checks every main page must pass in a real browser: layout, console, network and accessibility.

axe-core comes from the axe-playwright-python package (a test dependency), which ships its
minified script; we inject it ourselves so the check reads the same on every page.
"""

from functools import lru_cache
from pathlib import Path

SERIOUS = ("serious", "critical")


@lru_cache(maxsize=1)
def axe_script():
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def axe_violations(page):
    """Serious and critical axe violations on the page as readable lines (empty when it passes)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(axe_script())
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    lines = []
    for violation in result["violations"]:
        if violation["impact"] in SERIOUS:
            targets = [" ".join(map(str, node["target"])) + _detail(node) for node in violation["nodes"][:6]]
            lines.append(f"{violation['impact']} {violation['id']}: {violation['help']} at {targets}")
    return lines


def _detail(node):
    data = next((check.get("data") for check in node.get("any", []) if isinstance(check.get("data"), dict)), None)
    if data and "fgColor" in data:
        return f" ({data['fgColor']} on {data['bgColor']}: {data.get('contrastRatio')})"
    return ""


def horizontal_overflow(page):
    """How many pixels the page is wider than the viewport, and the widest offenders."""
    return page.evaluate("""() => {
      const width = document.documentElement.clientWidth;
      const over = document.documentElement.scrollWidth - width;
      if (over <= 0) return {over: 0, culprits: []};
      const culprits = [];
      for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (r.right > width + 1 && el.checkVisibility() && !el.closest('.table-wrap, .grid-wrap, pre, .scroll-x')) {
          culprits.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} right=${Math.round(r.right)}`);
        }
        if (culprits.length >= 8) break;
      }
      return {over, culprits};
    }""")


class PageWatch:
    """Collects console errors, uncaught exceptions and failed requests of one browser page."""

    def __init__(self, page):
        self.problems = []
        page.on("console", lambda msg: msg.type == "error" and self.problems.append(f"console: {msg.text}"))
        page.on("pageerror", lambda exc: self.problems.append(f"uncaught: {exc}"))
        page.on("requestfailed", self._failed)
        page.on("response", lambda resp: resp.status >= 400 and self.problems.append(f"HTTP {resp.status}: {resp.url}"))

    def _failed(self, request):
        # Chromium asks for the favicon after a page has loaded, and cancels the request when the test
        # moves on to the next page first: an aborted favicon says nothing about the page.
        if request.url.endswith("/favicon.svg") and "ERR_ABORTED" in (request.failure or ""):
            return
        self.problems.append(f"failed request: {request.url} {request.failure}")

    def take(self):
        problems, self.problems = self.problems, []
        return problems
