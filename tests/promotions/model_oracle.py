"""A scripted model for the fake LLM server that knows each lesson's labelled theme.

It answers what detection asks, from the request the SDK sent: propose_groups puts the new lessons
of one theme together (or into the offered group whose summary names that theme), verify_group
keeps the members of the group's main theme, and a wording request gets a fixed line. It measures
the pipeline around the model (batching, merging, cap, check, dates rule), not a model's judgement.
"""

import re
from collections import Counter, defaultdict

LESSON_LINE = re.compile(r"^- (\d+) \| ")
GROUP_LINE = re.compile(r"^(G\d+) \| \d+ \| theme: (.+)$")


def section_ids(prompt, heading):
    """Lesson ids listed under the prompt's section that starts with `heading`."""
    ids, inside = [], False
    for line in prompt.splitlines():
        if line.endswith("(id | date | lesson):"):
            inside = line.startswith(heading)
        elif inside and (m := LESSON_LINE.match(line)):
            ids.append(int(m.group(1)))
    return ids


def request_parts(request):
    """(prompt, tool name or "") of an Anthropic or OpenAI request."""
    body = request.json
    prompt = body["messages"][-1]["content"]
    tools = body.get("tools") or []
    if not tools:
        return prompt, ""
    tool = tools[0]
    return prompt, tool["function"]["name"] if "function" in tool else tool["name"]


class ThemeOracle:
    def __init__(self, themes):
        self.themes = dict(themes)  # lesson id -> theme (None: belongs with nothing)
        self.asked = Counter()

    def __call__(self, request):
        prompt, tool = request_parts(request)
        self.asked[tool or "text"] += 1
        ids = [int(m.group(1)) for line in prompt.splitlines() if (m := LESSON_LINE.match(line))]
        if tool == "propose_groups":
            return [("propose_groups", {"groups": self.groups(prompt, ids)})]
        if tool == "verify_group":
            themes = Counter(self.themes.get(i) for i in ids if self.themes.get(i))
            main = themes.most_common(1)[0][0] if themes else None
            keep = [i for i in ids if main and self.themes.get(i) == main]
            return [
                (
                    "verify_group",
                    {
                        "same_lesson": keep,
                        "deserves_core": True,
                        "reason": f"They all say: {main}." if main else "No two agree.",
                    },
                )
            ]
        return "[PATTERN] The lesson these restatements share"

    def groups(self, prompt, ids):
        offered = {m.group(2): m.group(1) for line in prompt.splitlines() if (m := GROUP_LINE.match(line))}
        by_theme = defaultdict(list)
        for i in ids:
            if self.themes.get(i):
                by_theme[self.themes[i]].append(i)
        groups = []
        for theme, members in sorted(by_theme.items()):
            reason = f"Each restates {theme}."
            if theme in offered:
                groups.append({"existing": offered[theme], "ids": members, "reason": reason})
            elif len(members) > 1:
                groups.append({"ids": members, "summary": f"theme: {theme}", "reason": reason})
        return groups
