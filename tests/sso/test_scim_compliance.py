"""scim2-tester runs every check it has (discovery, create, read, replace, PATCH, delete, filters) against the
live /scim/v2/ endpoint and none may fail."""

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
    with capsys.disabled():
        print(f"\nscim2-tester: {len(results)} checks")
        for r in results:
            print(f"  {r.status.name:<8} {r.title} {r.reason or ''}")
    failed = [r for r in results if r.status == Status.ERROR]
    assert results
    assert not failed, "\n".join(f"{r.title}: {r.reason}" for r in failed)
