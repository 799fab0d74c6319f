import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nightwatch.settings")

app = Celery("nightwatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
