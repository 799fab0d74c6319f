import pytest

from memory.tokens import agent_token_create
from tests.factories import MemoryFactory


class AgentClient:
    """The Django test client with an agent's bearer token on every request."""

    def __init__(self, client, raw):
        self.client = client
        self.headers = {"Authorization": f"Bearer {raw}"} if raw else {}

    def get(self, url, data=None, **kwargs):
        return self.client.get(url, data, headers=self.headers, **kwargs)

    def post(self, url, data=None, **kwargs):
        kwargs.setdefault("content_type", "application/json")
        return self.client.post(url, data, headers=self.headers, **kwargs)


@pytest.fixture
def make_agent(client):
    """make_agent(persona, project=None) -> (AgentClient, AgentToken)."""

    def make(persona, project=None, name="tests"):
        token, raw = agent_token_create(persona=persona, project=project, name=name)
        return AgentClient(client, raw), token

    return make


@pytest.fixture
def agent(make_agent, persona):
    return make_agent(persona)[0]


@pytest.fixture
def agent_token(make_agent, persona):
    return make_agent(persona)


@pytest.fixture
def other_memory(db, other_persona, project):
    return MemoryFactory(persona=other_persona, project=project)


def memory_url(persona, project, tail):
    return f"/api/v1/memory/{persona.name}/{project.slug}/{tail}"
