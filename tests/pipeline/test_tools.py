"""The tool handlers enforce their rules whatever the model sends."""

from memory.engines.base import ToolCall
from memory.models import content_hash
from memory.pipeline.tools import ObserverTool, PrunerTool, ReflectorTool
from tests.factories import make_lesson


def observe(tool, *observations):
    return tool(ToolCall("c", "record_observations", {"observations": list(observations)}))


def obs(content, ids, relevance="medium", timestamp="2026-03-02 09:15"):
    return {"timestamp": timestamp, "content": content, "relevance": relevance, "sourceEntryIds": ids}


def test_observer_rejects_ids_not_in_the_chunk_and_skips_duplicates():
    recorded = []
    tool = ObserverTool(
        allowed_ids=["a", "b"],
        known_hashes={content_hash("Already known fact.")},
        on_record=lambda *args: recorded.append(args),
    )
    result = observe(
        tool,
        obs("User chose Lucia for auth.", ["b", "a", "a"]),
        obs("Invented source.", ["zzz"]),
        obs("No source.", []),
        obs("Already known fact.", ["a"]),
        obs("User chose Lucia for auth.", ["a"]),
        obs("Bad relevance.", ["a"], relevance="urgent"),
        obs("Bad time.", ["a"], timestamp="yesterday"),
    )
    assert len(recorded) == 1
    when, content, relevance, ids = recorded[0]
    assert (content, relevance, ids) == ("User chose Lucia for auth.", "medium", ["a", "b"])
    assert when.strftime("%Y-%m-%d %H:%M") == "2026-03-02 09:15"
    assert (tool.added, tool.duplicates, tool.rejected) == (1, 2, 4)
    assert "Stored 1 new observation (2 duplicates skipped)." in result.content
    assert "4 observations refused" in result.content
    assert "Stored so far in this run: 1." in result.content
    assert not result.is_error


def test_observer_makes_content_single_line_and_caps_its_length():
    recorded = []
    tool = ObserverTool(allowed_ids=["a"], known_hashes=set(), on_record=lambda *args: recorded.append(args))
    observe(tool, obs("first line\nsecond   line " + "x" * 900, ["a"]))
    content = recorded[0][1]
    assert "\n" not in content and content.startswith("first line second line")
    assert len(content) == 600 and content.endswith("…")


def test_observer_answers_a_malformed_call_with_an_error():
    tool = ObserverTool(allowed_ids=["a"], known_hashes=set(), on_record=lambda *a: None)
    assert tool(ToolCall("c", "record_observations", {"observations": "many"})).is_error
    assert tool(ToolCall("c", "drop_observations", {"ids": ["1"]})).is_error


def test_reflector_merges_exact_repeats_and_rejects_unknown_ids():
    new, merged = [], []
    tool = ReflectorTool(
        observation_ids=[1, 2, 3],
        existing={content_hash("Queue uses advisory locks."): "cand-7"},
        on_new=lambda content, ids: new.append((content, ids)) or f"new-{len(new)}",
        on_merge=lambda key, ids: merged.append((key, ids)) or True,
        min_support=2,
    )
    result = tool(
        ToolCall(
            "c",
            "record_reflections",
            {
                "reflections": [
                    {"content": "Queue uses advisory locks.", "supportingObservationIds": ["3"]},
                    {"content": "Team never pushes to main.", "supportingObservationIds": ["1", "2"]},
                    {"content": "Made up support.", "supportingObservationIds": ["1", "99"]},
                    {"content": "Single support in pass one.", "supportingObservationIds": ["2"]},
                    {"content": "Team never pushes to main.", "supportingObservationIds": ["3"]},
                ]
            },
        )
    )
    assert new == [("Team never pushes to main.", [1, 2])]
    assert merged == [("cand-7", [3]), ("new-1", [3])]
    assert (tool.added, tool.merged, tool.rejected) == (1, 2, 2)
    assert "Recorded 1 new reflection; strengthened 2 existing ones." in result.content
    assert "at least 2 supporting observations" in result.content


def test_pruner_never_drops_critical_or_protected_and_only_drops(memory):
    low = make_lesson(memory, "Ran the tests again.", relevance="low")
    critical = make_lesson(memory, "Never push to main.", relevance="critical")
    protected = make_lesson(memory, "Keep this one.", protected=True)
    tool = PrunerTool(pool=[low, critical, protected], cost=lambda lesson: 10)
    result = tool(
        ToolCall(
            "c", "drop_observations", {"ids": [str(critical.pk), str(low.pk), "999", str(protected.pk), str(low.pk)]}
        )
    )
    assert tool.dropped == [low.pk]
    assert f"{critical.pk}: critical observations are never dropped" in result.content
    assert "999: not in the pool" in result.content and f"{protected.pk}: protected" in result.content
    assert "2 remain, about 20 tokens" in result.content
    assert tool(ToolCall("c", "drop_observations", {"ids": []})).is_error
    assert tool(ToolCall("c", "record_observations", {"observations": []})).is_error
    critical.refresh_from_db()
    assert critical.status == "active"  # the tool proposes; it never writes
