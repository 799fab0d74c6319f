"""The daily digest: each approver gets one email of what waits for them, through a real SMTP server."""

import email
import socket
from email import policy

import pytest
from aiosmtpd.controller import Controller
from django.core import mail
from django.core.management import call_command

from memory.digest.services import digest_preference_set, digest_send_all
from tests.digest.helpers import waiting_work

pytestmark = pytest.mark.django_db


class Inbox:
    """An aiosmtpd handler that keeps every message it is handed, as the SMTP server received it."""

    def __init__(self):
        self.received = []

    async def handle_DATA(self, server, session, envelope):
        self.received.append(
            (
                envelope.mail_from,
                list(envelope.rcpt_tos),
                email.message_from_bytes(envelope.content, policy=policy.default),
            )
        )
        return "250 Message accepted for delivery"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp_server(settings):
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.SITE_URL = "https://memory.example.com"
    try:
        yield inbox
    finally:
        controller.stop()


@pytest.fixture
def approvers(approver, django_user_model):
    from django.contrib.auth.models import Group

    approver.email = "ada@example.com"
    approver.save()
    second = django_user_model.objects.create_user("grace", email="grace@example.com", password="pw-for-tests-1")
    second.groups.add(Group.objects.get(name="approver"))
    return approver, second


def _body(message, subtype):
    return message.get_body(preferencelist=(subtype,)).get_content()


def test_digest_goes_through_a_real_smtp_server_oldest_first_with_links(smtp_server, approvers, viewer, memory):
    viewer.email = "viewer@example.com"
    viewer.save()
    candidate, proposal, run = waiting_work(memory, compaction_days_ago=10, run_days_ago=2)
    assert digest_send_all() == 2
    assert sorted(rcpt for _, rcpts, _ in smtp_server.received for rcpt in rcpts) == [
        "ada@example.com",
        "grace@example.com",
    ]
    sender, _, message = next(r for r in smtp_server.received if r[1] == ["ada@example.com"])
    assert sender == "nightwatch@localhost"
    assert message["Subject"] == "Night Watch Memory: 3 items wait for your review (oldest: 1 week)"
    text = _body(message, "plain")
    links = [line.strip() for line in text.splitlines() if line.strip().startswith("https://")]
    assert links == [
        f"https://memory.example.com/compactions/{proposal.pk}/",
        f"https://memory.example.com/pipeline/runs/{run.pk}/",
        f"https://memory.example.com/promotions/{candidate.pk}/",
        "https://memory.example.com/account/",
    ]
    assert "(1 for more than 7 days)" in text and "waiting 1 week (too long)" in text
    assert f'href="https://memory.example.com/promotions/{candidate.pk}/"' in _body(message, "html")


def test_no_email_when_nothing_waits(smtp_server, approvers):
    assert digest_send_all() == 0
    assert smtp_server.received == []


def test_an_approver_who_opted_out_gets_none_and_one_per_day_at_most(smtp_server, approvers, memory):
    _ada, grace = approvers
    waiting_work(memory)
    digest_preference_set(user=grace, daily_digest=False)
    assert digest_send_all() == 1
    assert [rcpts for _, rcpts, _ in smtp_server.received] == [["ada@example.com"]]
    assert digest_send_all() == 0  # the beat and the command on one day: one email
    assert digest_send_all(force=True) == 1


def test_the_command_sends_it_too(approvers, memory, settings, capsys):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    waiting_work(memory)
    call_command("send_review_digest")
    assert "Sent 2 review digests." in capsys.readouterr().out
    assert sorted(m.to[0] for m in mail.outbox) == ["ada@example.com", "grace@example.com"]


def test_a_daily_beat_entry_sends_it(settings):
    from memory.tasks import send_review_digests

    entry = settings.CELERY_BEAT_SCHEDULE["review-digest-daily"]
    assert entry["task"] == send_review_digests.name == "memory.digest.send"
    assert entry["schedule"].hour == {7} and entry["schedule"].minute == {0}
