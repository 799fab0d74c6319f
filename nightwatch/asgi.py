"""The ASGI entry point: Django, with the MCP server's streamable HTTP endpoint at /mcp/.

uvicorn nightwatch.asgi:application --host 0.0.0.0 --port 8000 --workers 4
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nightwatch.settings")


def build_application():
    django_app = get_asgi_application()  # sets Django up before the MCP code imports models
    from django.conf import settings
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from memory.mcp.http import asgi_router, mcp_http_app

    if settings.DEBUG:  # what runserver does for static files; deployments serve STATIC_ROOT themselves
        django_app = ASGIStaticFilesHandler(django_app)
    return asgi_router(django_app=django_app, mcp_app=mcp_http_app())


application = build_application()
