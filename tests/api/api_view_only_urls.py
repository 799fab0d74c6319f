"""The agent API with only its own views: what the context endpoint answered before its short way."""

from django.urls import path

from memory.api.views import api

urlpatterns = [path("api/v1/", api.urls)]
