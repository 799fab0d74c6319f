"""NIGHT_WATCH_ROOT makes beat run a pass every minute; the task syncs that folder."""

import os
import subprocess
import sys

import pytest

from memory.models import Lesson
from memory.sync.tasks import sync_night_watch_root
from tests.sync.conftest import nw_append, section

pytestmark = pytest.mark.django_db


def _schedule(env):
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='nightwatch.settings'; django.setup(); "
        "from django.conf import settings; print(settings.CELERY_BEAT_SCHEDULE.get('night-watch-sync'))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_beat_runs_a_pass_every_minute_only_when_a_root_is_set(tmp_path):
    assert _schedule({"NIGHT_WATCH_ROOT": ""}) == "None"
    assert _schedule({"NIGHT_WATCH_ROOT": str(tmp_path)}) == "{'task': 'memory.sync.pass', 'schedule': 60.0}"


def test_the_task_syncs_the_configured_root(root, working, settings):
    nw_append(working(), section("2026-03-01", "[OBSERVATION] Taken in by the scheduled pass"))
    settings.NIGHT_WATCH_ROOT = ""
    assert sync_night_watch_root() is None and not Lesson.objects.exists()
    settings.NIGHT_WATCH_ROOT = str(root)
    assert sync_night_watch_root() == 0
    assert Lesson.objects.get().text == "Taken in by the scheduled pass"
