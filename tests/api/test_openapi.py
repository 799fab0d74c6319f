"""The OpenAPI schema, the docs page and the health view."""

from openapi_spec_validator import validate


def test_schema_validates_and_lists_every_endpoint(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert set(schema["paths"]) == {
        "/api/v1/health",
        "/api/v1/memory/{persona}/{project}/context",
        "/api/v1/memory/{persona}/{project}/prompt",
        "/api/v1/memory/{persona}/{project}/interactions",
        "/api/v1/memory/{persona}/{project}/lessons",
        "/api/v1/interactions/{interaction_id}",
        "/api/v1/lessons/{lesson_id}",
        "/api/v1/lessons/{lesson_id}/expiry",
    }
    assert "AgentTokenAuth" in schema["components"]["securitySchemes"]
    # Agents can only read and append, and date their working lessons: no endpoint edits or removes anything.
    methods = {(path, m) for path, ops in schema["paths"].items() for m in ops}
    assert {m for _, m in methods} <= {"get", "post", "put"}
    assert {path for path, m in methods if m == "put"} == {"/api/v1/lessons/{lesson_id}/expiry"}


def test_docs_page_loads_with_local_assets(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui-bundle.js" in html and "/static/ninja/" in html
    assert "cdn." not in html


def test_health_needs_no_token(client, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/api/v1/health")
    assert response.json() == {"status": "ok"}
