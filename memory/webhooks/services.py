"""Webhook endpoints, the event outbox and delivery: every write of the webhooks slice.

An event costs its cause one INSERT (`webhook_event_record`). After the commit a worker fans it
out (one delivery per endpoint that wants it, with the memory's names and links added once, so every
attempt sends the same body) and sends what is due. A delivery is leased while it is sent: a worker
killed mid-send leaves it to the next pass, so nothing is lost and an event may arrive twice, never
after its receiver answered 2xx to it.
"""

from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from memory.jobs import enqueue_on_commit
from memory.webhooks import payloads, transport
from memory.webhooks.models import (
    EVENT_TYPES,
    TEST_EVENT,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
    new_secret,
)

# When a failed delivery is tried again, after each attempt: exponential, 23.6 hours in all.
RETRY_SCHEDULE = (
    timedelta(seconds=10),
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(hours=2),
    timedelta(hours=4),
    timedelta(hours=8),
    timedelta(hours=8),
)
ROTATION_GRACE = timedelta(hours=24)
USER_AGENT = "NightWatchMemory-Webhooks/1"


def _absolute(path):
    return f"{settings.SITE_URL}{path}"


# --- the outbox --------------------------------------------------------------------------------


def webhook_event_record(
    *, event_type: str, memory_id=None, team_id=None, data: dict, lesson_texts=None, only_endpoint=None
) -> WebhookEvent:
    """Store one event in the caller's transaction and have it sent once that commits."""
    event = WebhookEvent.objects.create(
        type=event_type,
        memory_id=memory_id,
        team_id=team_id,
        data=data,
        lesson_texts=lesson_texts or {},
        only_endpoint=only_endpoint,
    )
    _dispatch_on_commit()
    return event


def _dispatch_on_commit():
    """Queue one send for the transaction, however many events it records (a bulk decision, a
    detection over many memories): the pass sends all of them."""
    pending = getattr(connection, "run_on_commit", [])
    if not any(getattr(func, "__qualname__", "").endswith("[memory.webhooks.dispatch]") for _, func, _ in pending):
        enqueue_on_commit("memory.webhooks.dispatch", robust=True)


def _memory_facts(memory_ids):
    from memory.models import Memory

    rows = Memory.objects.filter(pk__in=memory_ids).values(
        "pk",
        "persona__name",
        "project__slug",
        "project__name",
        "project__team_id",
        "project__team__slug",
        "project__team__name",
    )
    return {row["pk"]: row for row in rows}


def _enrich(event, facts):
    data = dict(event.data)
    team = None
    if event.memory_id and event.memory_id in facts:
        row = facts[event.memory_id]
        data["memory"] = {
            "id": event.memory_id,
            "persona": row["persona__name"],
            "project": row["project__slug"],
            "name": f"{row['persona__name']} × {row['project__name']}",
            "url": _absolute(reverse("memory_detail", args=[event.memory_id])),
        }
        if row["project__team_id"]:
            team = {
                "id": row["project__team_id"],
                "slug": row["project__team__slug"],
                "name": row["project__team__name"],
            }
    elif event.team_id:
        team = {"id": event.team_id, "slug": event.team.slug, "name": event.team.name}
    data["team"] = team
    data.setdefault("url", _absolute(reverse("home")))
    for item in data.get("items", []):
        if item.get("url", "").startswith("/"):
            item["url"] = _absolute(item["url"])
    if data.get("url", "").startswith("/"):
        data["url"] = _absolute(data["url"])
    return data, (team or {}).get("id")


def webhooks_fan_out(*, limit: int = 500) -> int:
    """Give each stored event one delivery per endpoint that wants it; returns the events done."""
    with transaction.atomic():
        events = list(
            WebhookEvent.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(fanned_out_at__isnull=True)
            .select_related("team")
            .order_by("id")[:limit]
        )
        if not events:
            return 0
        facts = _memory_facts({e.memory_id for e in events if e.memory_id})
        endpoints = list(WebhookEndpoint.objects.all())
        now = timezone.now()
        deliveries = []
        for event in events:
            event.data, team_id = _enrich(event, facts)
            if event.team_id is None:
                event.team_id = team_id
            event.fanned_out_at = now
            for endpoint in endpoints:
                if event.only_endpoint_id is not None:
                    wanted = endpoint.pk == event.only_endpoint_id
                else:
                    wanted = event.type in endpoint.event_types and (
                        endpoint.team_id is None or endpoint.team_id == event.team_id
                    )
                if wanted:
                    deliveries.append(WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=now))
        WebhookEvent.objects.bulk_update(events, ["data", "team", "fanned_out_at"])
        WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=True)
    return len(events)


# --- sending -----------------------------------------------------------------------------------


def _signature(endpoint, msg_id, timestamp, body, now):
    secrets = [endpoint.secret]
    if endpoint.previous_secret and endpoint.previous_secret_until and endpoint.previous_secret_until > now:
        secrets.append(endpoint.previous_secret)
    return " ".join(Webhook(s).sign(msg_id, timestamp, body) for s in secrets)


def request_for(delivery, now=None):
    """The body and headers of one attempt: the same id and body every time, signed afresh."""
    now = now or timezone.now()
    endpoint, event = delivery.endpoint, delivery.event
    body = payloads.encode(payloads.body_for(event, endpoint))
    timestamp = datetime.fromtimestamp(int(now.timestamp()), tz=UTC)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": event.uid,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": _signature(endpoint, event.uid, timestamp, body, now),
    }
    return body.encode(), headers


def _lease(now):
    return now + timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)


def _claim(delivery_ids, now):
    """Take due deliveries for this worker (one UPDATE); returns those it got, with their event and
    endpoint. A delivery another worker holds, or one sent meanwhile, is left out."""
    lease = _lease(now)
    WebhookDelivery.objects.filter(pk__in=delivery_ids, status=WebhookDelivery.Status.PENDING).filter(
        Q(leased_until__isnull=True) | Q(leased_until__lt=now)
    ).update(leased_until=lease)
    # The lease's own instant marks what this worker took (another worker's lease is another instant).
    return list(
        WebhookDelivery.objects.filter(pk__in=delivery_ids, leased_until=lease)
        .select_related("event", "endpoint")
        .order_by("next_attempt_at", "id")
    )


def _record(delivery, answer, now):
    endpoint = delivery.endpoint
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_status_code = answer.status
    delivery.last_error = answer.error[:500] if not answer.ok else ""
    delivery.leased_until = None
    if answer.ok:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = now
        delivery.next_attempt_at = None
        if endpoint.consecutive_failures:
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=0)
            endpoint.consecutive_failures = 0
    else:
        if answer.status is not None and not delivery.last_error:
            delivery.last_error = f"the receiver answered {answer.status}"
        window_closes = delivery.created_at + sum(RETRY_SCHEDULE, timedelta())
        if delivery.attempts > len(RETRY_SCHEDULE) or now >= window_closes:
            delivery.status = WebhookDelivery.Status.FAILED
            delivery.next_attempt_at = None
        else:
            delivery.next_attempt_at = now + RETRY_SCHEDULE[delivery.attempts - 1]
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=F("consecutive_failures") + 1)
        endpoint.refresh_from_db(fields=["consecutive_failures", "paused_at"])
        if endpoint.paused_at is None and endpoint.consecutive_failures >= settings.WEBHOOKS_PAUSE_AFTER:
            WebhookEndpoint.objects.filter(pk=endpoint.pk, paused_at__isnull=True).update(
                paused_at=now,
                pause_reason=(
                    f"paused after {endpoint.consecutive_failures} failed attempts in a row "
                    f"(last: {delivery.last_error[:150]})"
                ),
            )
            endpoint.paused_at = now
    delivery.save(
        update_fields=[
            "attempts",
            "last_attempt_at",
            "last_status_code",
            "last_error",
            "leased_until",
            "status",
            "delivered_at",
            "next_attempt_at",
        ]
    )


def _send(delivery):
    body, headers = request_for(delivery)
    answer = transport.post(delivery.endpoint.url, body, headers, timeout=settings.WEBHOOKS_TIMEOUT_SECONDS)
    _record(delivery, answer, timezone.now())


def due_delivery_ids(*, now=None, limit: int = 200) -> list[int]:
    now = now or timezone.now()
    return list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now,
            endpoint__enabled=True,
            endpoint__paused_at__isnull=True,
        )
        .filter(Q(leased_until__isnull=True) | Q(leased_until__lt=now))
        .order_by("next_attempt_at", "id")
        .values_list("pk", flat=True)[:limit]
    )


def webhooks_dispatch(*, limit: int = 200) -> int:
    """Fan out what was recorded and send what is due; returns the attempts made."""
    while webhooks_fan_out():
        pass
    now = timezone.now()
    claimed = _claim(due_delivery_ids(now=now, limit=limit), now)
    endpoints: dict[int, WebhookEndpoint] = {}
    for delivery in claimed:
        # One endpoint object per pass: its failure count (and pause) carries from one delivery to the next.
        delivery.endpoint = endpoints.setdefault(delivery.endpoint_id, delivery.endpoint)
        if delivery.endpoint.paused_at is not None:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(leased_until=None)
            continue
        _send(delivery)
    return len(claimed)


# --- endpoints ---------------------------------------------------------------------------------


def _clean_endpoint(*, url, event_types, format):
    errors = {}
    problem = transport.url_problem(url or "")
    if problem:
        errors["url"] = f"{url!r} {problem}"
    unknown = [t for t in event_types if t not in EVENT_TYPES]
    if unknown or not event_types:
        errors["event_types"] = (
            f"unknown event types: {', '.join(unknown)}; " if unknown else "choose at least one event type; "
        ) + f"known: {', '.join(EVENT_TYPES)}"
    if format not in WebhookEndpoint.Format.values:
        errors["format"] = f"format must be one of {', '.join(WebhookEndpoint.Format.values)}"
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def webhook_endpoint_create(
    *,
    team,
    url: str,
    event_types: list[str],
    format: str = "standard",
    include_lesson_text=False,
    description="",
    user=None,
) -> WebhookEndpoint:
    _clean_endpoint(url=url, event_types=event_types, format=format)
    return WebhookEndpoint.objects.create(
        team=team,
        url=url,
        event_types=list(dict.fromkeys(event_types)),
        format=format,
        include_lesson_text=include_lesson_text,
        description=description,
        created_by=user,
    )


@transaction.atomic
def webhook_endpoint_rotate_secret(*, endpoint: WebhookEndpoint, grace=ROTATION_GRACE) -> str:
    """A new secret; the old one still signs (beside the new) until the grace period ends."""
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_until = timezone.now() + grace
    endpoint.secret = new_secret()
    endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return endpoint.secret


@transaction.atomic
def webhook_endpoint_resume(*, endpoint: WebhookEndpoint) -> None:
    """Sending starts again: deliveries that waited while it was paused go out with the next pass."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        paused_at=None, pause_reason="", consecutive_failures=0, enabled=True
    )
    WebhookDelivery.objects.filter(endpoint=endpoint, status=WebhookDelivery.Status.PENDING).update(
        next_attempt_at=timezone.now()
    )
    _dispatch_on_commit()


@transaction.atomic
def webhook_send_test(*, endpoint: WebhookEndpoint, user=None) -> WebhookEvent:
    data = {"message": "A test event: this endpoint is set up.", "by": user.get_username() if user else "system"}
    return webhook_event_record(event_type=TEST_EVENT, team_id=endpoint.team_id, data=data, only_endpoint=endpoint)


@transaction.atomic
def webhook_redeliver(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again (a failed one, or one already delivered), with the same event id."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.Status.PENDING, next_attempt_at=timezone.now(), leased_until=None
    )
    _dispatch_on_commit()


# --- events with no single cause ---------------------------------------------------------------


def webhooks_record_overdue(*, now=None) -> int:
    """One review.overdue event per team with items past REVIEW_OVERDUE_DAYS (the daily job)."""
    from memory import review_queue

    now = now or timezone.now()
    cutoff = now - review_queue.overdue_age()
    per_team: dict = {}
    texts: dict = {}
    for source in review_queue.review_sources():
        if source.waiting is None or source.describe is None:
            continue
        waiting = (
            source.waiting()
            .filter(waiting_since__lt=cutoff)
            .select_related("memory__persona", "memory__project")
            .order_by("waiting_since", "pk")
        )
        for obj in waiting:
            item = source.describe(obj)
            memory = obj.memory
            key = f"{source.key}:{obj.pk}"
            team_items = per_team.setdefault(memory.project.team_id, [])
            team_items.append(
                {
                    "kind": source.singular,
                    "id": obj.pk,
                    "key": key,
                    "url": item.url,
                    "memory": f"{memory.persona.name} × {memory.project.name}",
                    "waiting_since": obj.waiting_since.isoformat(),
                }
            )
            texts.setdefault(memory.project.team_id, {})[key] = item.text  # may quote a lesson
    with transaction.atomic():
        for team_id, items in per_team.items():
            shown = items[:100]
            webhook_event_record(
                event_type="review.overdue",
                team_id=team_id,
                data={"count": len(items), "days": settings.REVIEW_OVERDUE_DAYS, "items": shown},
                lesson_texts={i["key"]: texts[team_id][i["key"]] for i in shown},
            )
    return len(per_team)
