import pytest
from django.template import Context, Template

from memory.rendering import (
    find_invisible,
    has_invisible,
    invisible_segments,
    render_markdown,
    snapshot_diff,
    text_diff,
)


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
    ],
)
def test_raw_html_is_escaped(text):
    html = render_markdown(text)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<b>x</b>",
        "vbscript:msgbox(1)",
        "file:///etc/passwd",
        "mailto:a@b.c",
    ],
)
def test_only_http_links_become_links(url):
    html = render_markdown(f"[x]({url})")
    assert "href" not in html


@pytest.mark.parametrize("url", ["https://example.com/a?b=1", "http://example.com", "/memories/1/", "docs/a.md"])
def test_http_and_relative_links_render(url):
    html = render_markdown(f"[x]({url})")
    assert f'href="{url}"' in html.replace("&amp;", "&")
    assert 'rel="nofollow noopener noreferrer"' in html


def test_images_are_not_rendered():
    assert "<img" not in render_markdown("![t](https://tracker.example/p.png)")


def test_markdown_basics():
    assert render_markdown("use `x` and **y**") == "use <code>x</code> and <strong>y</strong>"


@pytest.mark.parametrize(
    "ch",
    [
        "\u200b",
        "\u200c",
        "\u200d",
        "\u202e",
        "\u202d",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\ufeff",
        "\u200e",
        "\u200f",
        "\u00ad",
        "\u2060",
        "\x07",
        "\u3164",
        "\u2028",
        "\u2029",
    ],
)
def test_invisible_characters_are_found(ch):
    text = f"a{ch}b"
    assert has_invisible(text)
    assert find_invisible(text) == [ch]
    assert f"⟦U+{ord(ch):04X}⟧" in render_markdown(text)
    assert ch not in render_markdown(text)


def test_plain_text_has_no_invisible():
    assert not has_invisible("Plain lesson — with ünïcode, emoji 🎉 and\nnewline")


def test_segments_and_reveal_partial_escape_text():
    segments = invisible_segments("<b>\u202eevil")
    assert [(s.text, s.invisible) for s in segments] == [("<b>", False), ("\u202e", True), ("evil", False)]
    html = Template('{% include "memory/partials/reveal.html" with text=t %}').render(Context({"t": "<b>\u202eevil"}))
    assert "&lt;b&gt;" in html and "⟦U+202E⟧" in html and "\u202e" not in html


def test_warning_partial():
    html = Template('{% include "memory/partials/invisible_warning.html" with text=t %}').render(
        Context({"t": "x\u200by"})
    )
    assert "Hidden characters" in html and "Zero Width Space" in html
    assert (
        Template('{% include "memory/partials/invisible_warning.html" with text=t %}')
        .render(Context({"t": "clean"}))
        .strip()
        == ""
    )


def test_text_diff_words():
    assert text_diff("the quick fox", "the slow fox") == [
        ("equal", "the "),
        ("delete", "quick"),
        ("insert", "slow"),
        ("equal", " fox"),
    ]


def test_snapshot_diff_fields():
    before = {"text": "a", "category": "PATTERN", "refs": [], "protected": False, "status": "active"}
    after = {**before, "protected": True, "refs": ["src/a.py#L1"]}
    diff = snapshot_diff(before, after)
    assert diff["text"] is None
    assert {f["label"]: (f["before"], f["after"]) for f in diff["fields"]} == {
        "Protected": ("no", "yes"),
        "Refs": ("—", "src/a.py#L1"),
    }


def test_invisible_characters_in_a_link_title_do_not_break_the_tag():
    from memory.rendering import render_markdown

    html = str(render_markdown('[x](https://example.com "ti\u200btle") a\u200bb `c\u202ed`'))
    assert html.count("<a ") == 1 and html.count("</a>") == 1
    assert 'title="ti\u200btle"' in html  # attribute left intact
    assert html.count('class="invisible-char"') == 2  # in the text and in the inline code
    assert "<code>c<span" in html


def test_reveal_and_warning_filters_escape_and_show_hidden_characters():
    template = Template("{% load lesson_text %}[{{ text|reveal }}]({{ text|invisible_warning }})")
    html = template.render(Context({"text": "<b>admin</b>\u202e flag\u200b"}))
    assert "<b>" not in html and "&lt;b&gt;admin&lt;/b&gt;" in html
    assert '<span class="invisible-char" title="Right-To-Left Override">⟦U+202E⟧</span>' in html
    assert "⚠ Hidden characters: ⟦U+202E⟧ ⟦U+200B⟧" in html
    assert "\u202e" not in html and "\u200b" not in html
    plain = template.render(Context({"text": "<i>plain</i>"}))
    assert plain == "[&lt;i&gt;plain&lt;/i&gt;]()"
    # The partials render exactly what the filters do.
    partial = Template(
        '{% include "memory/partials/reveal.html" with text=text %}'
        '{% include "memory/partials/invisible_warning.html" with text=text %}'
    )
    filters = Template("{% load lesson_text %}{{ text|reveal }}{{ text|invisible_warning }}")
    context = {"text": "a\u202eb<c>"}
    assert partial.render(Context(context)) == filters.render(Context(context))
