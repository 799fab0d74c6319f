"""The password backend: as Django's, but with LOCAL_LOGIN=off it lets in only superusers (break-glass)."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend


class LocalPasswordBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and not settings.LOCAL_LOGIN and not user.is_superuser:
            return None
        return user
