"""The agent API's docs page, in a real browser: every asset comes from the app itself."""


def test_api_docs_page_renders_every_endpoint_from_local_assets(page, live_server, screenshot):
    external = []
    page.on("request", lambda r: None if r.url.startswith(live_server.url) else external.append(r.url))
    page.goto("/api/v1/docs")
    page.locator(".swagger-ui .opblock").first.wait_for()
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/memory/{persona}/{project}/context" in s for s in summaries)
    assert any("/api/v1/lessons/{lesson_id}" in s for s in summaries)
    assert page.locator(".swagger-ui .btn.authorize").is_visible()
    assert external == []
    screenshot("docs")
