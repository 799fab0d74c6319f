"""scim2-tester runs every check it has (discovery, create, read, replace, PATCH, delete, filters) against the
live /scim/v2/ endpoint and none may fail."""

from collections import Counter

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server

from memory.sso.services import scim_token_create


@pytest.mark.django_db(transaction=True)
def test_scim2_tester_passes_every_check(live_server, capsys):
    _, raw = scim_token_create(name="tester")
    http = httpx2.Client(base_url=f"{live_server.url}/scim/v2", headers={"Authorization": f"Bearer {raw}"})
    results = check_server(SyncSCIMClient(http))
    counts = Counter(r.status.name for r in results)
    with capsys.disabled():
        print(f"\nscim2-tester: {len(results)} checks: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    passed = (Status.SUCCESS, Status.COMPLIANT, Status.ACCEPTABLE)
    failed = [r for r in results if r.status not in passed]  # errors, critical, deviations and skipped checks
    assert not failed, "\n".join(f"{r.status.name} {r.title}: {r.reason}" for r in failed)
    titles = {r.title for r in results}
    assert {"check_add_attribute", "check_remove_attribute", "check_replace_attribute"} <= titles, "PATCH was checked"
    assert {"object_creation", "object_replacement", "object_deletion"} <= titles
