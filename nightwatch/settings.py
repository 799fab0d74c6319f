"""One settings file, driven by environment variables.

Every value has a default that works on a fresh machine with no services (SQLite, tasks run
in-process, offline engine). A value that cannot be parsed stops the process at start with a
message naming the variable, instead of failing later in some request.
"""

import os
import warnings
from datetime import timedelta
from pathlib import Path

from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name, default=""):
    return os.environ.get(name, default)


def env_bool(name, default=False):
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")


def env_int(name, default, *, minimum=None):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_float(name, default, *, minimum=None, maximum=None):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def env_choice(name, default, choices):
    value = os.environ.get(name, default).strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_list(name, default=()):
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a private value when DEBUG is off; the development key is public."
    )
# The same bar as Django's deploy check: a short or repetitive key can be guessed.
if not DEBUG and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-")):
    raise ImproperlyConfigured(
        "SECRET_KEY must be at least 50 characters with at least 5 different ones when DEBUG is off; "
        "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must not be empty")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",  # serves the API docs page's scripts locally instead of from a CDN
    "axes",  # login throttling: lockouts per user and address, listed in the admin
    "personas",
    "memory",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves /static/ from the app itself, so DEBUG=0 under gunicorn needs no separate file server.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "nightwatch.middleware.HtmxLoginRedirectMiddleware",
    # A session begun through the identity provider is checked with it again every OIDC_RECHECK_SECONDS.
    "memory.sso.recheck.OidcRecheckMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes requires: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    # First, so a locked-out user+address is refused before the password is even checked.
    "axes.backends.AxesStandaloneBackend",
    # Passwords; with LOCAL_LOGIN=off only superusers (the break-glass path).
    "memory.sso.backends.LocalPasswordBackend",
    # The identity provider's sign-in (OIDC); matches nothing while OIDC_ISSUER is unset.
    "memory.sso.oidc.OidcBackend",
]

ROOT_URLCONF = "nightwatch.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "nightwatch.wsgi.application"

# SQLite by default; DATABASE_URL (postgres://…) for the real deployment path.
_database_url = env_str("DATABASE_URL", "")
if _database_url:
    import dj_database_url

    try:
        _db = dj_database_url.parse(_database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
    except Exception as exc:  # the library raises several types for a malformed URL
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
    if "postgresql" in _db.get("ENGINE", ""):
        # No JIT compilation: the planner turns it on by cost, and on a large store a page's few-row count
        # (the nav's review queue, search's match set) then spends 100-250 ms compiling for a 1 ms query.
        # work_mem 32MB: a search for common words collects tens of thousands of index matches, and in the
        # default 4MB their bitmap turns lossy (every row of those pages is read and checked again: 6x
        # slower at a million lessons). Options the URL gives come after these, so they win.
        _options = _db.setdefault("OPTIONS", {})
        _options["options"] = f"-c jit=off -c work_mem=32MB {_options.get('options', '')}".strip()
    DATABASES = {"default": _db}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            # Agents write concurrently: a write transaction takes the lock at BEGIN and waits for it
            # (busy timeout) instead of failing with "database is locked" when it upgrades a read
            # lock; WAL lets readers go on while one writer works.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": env_int("SQLITE_BUSY_TIMEOUT", 30, minimum=1),
                # Page cache: SQLite's default is 2 MB a connection; a search or a count over an
                # organisation's store reads index pages all over a file of a gigabyte or more, and
                # reads them again from the operating system on every request without it.
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                    f"PRAGMA cache_size=-{env_int('SQLITE_CACHE_MB', 64, minimum=2) * 1024};"
                ),
            },
            # Reusing the connection spares every request SQLite's open and schema read.
            "CONN_MAX_AGE": env_int("DB_CONN_MAX_AGE", 60),
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves the files straight from the app's folders, so no collectstatic step is needed
# (run it anyway when a proxy or CDN should serve STATIC_ROOT).
WHITENOISE_USE_FINDERS = True
# ... so an uncollected STATIC_ROOT is normal, not worth WhiteNoise's start-up warning.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Single sign-on through the organisation's identity provider (README, "Single sign-on"). Unset
# OIDC_ISSUER: no provider button, password login as always.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").strip().rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "")
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
OIDC_SCOPES = env_str("OIDC_SCOPES", "openid email profile offline_access")
OIDC_GROUPS_CLAIM = env_str("OIDC_GROUPS_CLAIM", "groups") or "groups"
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
# The ID token's accepted signature algorithms (comma-separated); blank: the public-key ones the provider announces.
OIDC_SIGN_ALGO = env_str("OIDC_SIGN_ALGO", "")
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT", 10.0, minimum=0.5, maximum=120)
# A signed-in person's provider session is re-checked at most this often (refresh token).
OIDC_RECHECK_SECONDS = env_int("OIDC_RECHECK_SECONDS", 60, minimum=1)
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set too")
# off: the password form is gone and only superusers may still use it, at /accounts/login/local/.
LOCAL_LOGIN = env_choice("LOCAL_LOGIN", "on", ("on", "off")) == "on"
# mozilla-django-oidc: the authorization code flow with PKCE (S256), state and nonce.
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"

# Cache: local memory by default, Redis when REDIS_URL/CACHE_URL is set.
_cache_url = env_str("CACHE_URL", "")
if _cache_url:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _cache_url,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# What each process keeps for itself: immutable or short-lived values read on every agent turn.
# (Its values are immutable, so they are kept unpickled: memory/cache_backends.py.)
CACHES["local"] = {"BACKEND": "memory.cache_backends.ProcessCache", "LOCATION": "nightwatch-local"}
# Memory versions for context reads need a cache every process of the deployment shares, so a
# write in one clears it for all: Redis when CACHE_URL is set; else, with SQLite (one host by
# nature), files next to the database (a read of an unchanged file costs one stat: memory/cache_backends.py).
# PostgreSQL without CACHE_URL reads versions from the database.
# With Redis, each process keeps the versions it read and Redis tells it at once which ones changed
# (server-assisted invalidation: memory/cache_backends.py), so a context read makes no trip to Redis.
if _cache_url:
    CACHES["versions"] = {
        **CACHES["default"],
        "BACKEND": "memory.cache_backends.TrackedRedisCache",
        "KEY_PREFIX": "versions",
    }
elif not _database_url:
    CACHES["versions"] = {
        "BACKEND": "memory.cache_backends.SharedFileCache",
        "LOCATION": env_str("VERSION_CACHE_DIR", DATABASES["default"]["NAME"] + "-versions"),
    }


# Celery: with no broker configured, tasks run in-process at enqueue time.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", "")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
# The hour (TIME_ZONE) at which approvers get the daily email of what waits for their review.
REVIEW_DIGEST_HOUR = env_int("REVIEW_DIGEST_HOUR", 7, minimum=0)
if REVIEW_DIGEST_HOUR > 23:
    raise ImproperlyConfigured(f"REVIEW_DIGEST_HOUR must be an hour of the day (0 to 23), got {REVIEW_DIGEST_HOUR}")
# Periodic jobs (run by `celery beat`); each feature adds its entry here.
CELERY_BEAT_SCHEDULE = {
    "promotions-nightly": {"task": "memory.promotions.detect_everywhere", "schedule": crontab(hour=2, minute=30)},
    "conflicts-nightly": {"task": "memory.conflicts.detect_everywhere", "schedule": crontab(hour=2, minute=45)},
    "refinement-nightly": {"task": "memory.refinement.nightly", "schedule": crontab(hour=3, minute=30)},
    "refinement-sweeper": {"task": "memory.refinement.sweep", "schedule": 60.0},
    "pipeline-sweeper": {"task": "memory.pipeline.sweep", "schedule": 60.0},
    "refs-check": {"task": "memory.refs.check_everywhere", "schedule": crontab(minute=15)},
    "review-digest-daily": {"task": "memory.digest.send", "schedule": crontab(hour=REVIEW_DIGEST_HOUR, minute=0)},
}
# Review items (pending promotions and compactions, runs to look at) older than this are marked as
# waiting too long on the home page.
REVIEW_OVERDUE_DAYS = env_int("REVIEW_OVERDUE_DAYS", 7, minimum=1)

# Webhooks and Slack: beat sends new events and the retries that are due, and once a day the
# overdue items. Receivers on private, loopback or link-local addresses are refused unless this is
# on (loopback is allowed with DEBUG); http:// is accepted only then too.
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", False)
# An endpoint is paused after this many failed attempts in a row; its team's approvers are told.
WEBHOOKS_PAUSE_AFTER = env_int("WEBHOOKS_PAUSE_AFTER", 20, minimum=1)
# How long a receiver has to answer one delivery; redirects are never followed.
WEBHOOKS_TIMEOUT_SECONDS = 5
# A worker holds a delivery this long while it sends it; one that dies leaves it to the next pass then.
WEBHOOKS_LEASE_SECONDS = env_int("WEBHOOKS_LEASE_SECONDS", 60, minimum=1)
CELERY_BEAT_SCHEDULE["webhooks-send"] = {"task": "memory.webhooks.dispatch", "schedule": 10.0}
CELERY_BEAT_SCHEDULE["webhooks-overdue-daily"] = {
    "task": "memory.webhooks.record_overdue",
    "schedule": crontab(hour=REVIEW_DIGEST_HOUR, minute=5),
}

# Email (the daily review digest). The console backend prints messages, so a fresh machine sends
# nothing; set EMAIL_HOST (and EMAIL_BACKEND is then SMTP) in production.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on: choose STARTTLS or implicit TLS")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 30, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Night Watch Memory <nightwatch@localhost>")
# Where people open the dashboard: the digest's links are absolute.
SITE_URL = env_str("SITE_URL", "http://localhost:8000").rstrip("/")
# Night Watch's agents folder (e.g. /home/agent/.night-watch/agents): when set, beat runs a two-way
# sync pass over it every minute (`manage.py sync_memory ROOT` by hand, `--watch` to follow writes).
NIGHT_WATCH_ROOT = env_str("NIGHT_WATCH_ROOT", "")
if NIGHT_WATCH_ROOT:
    CELERY_BEAT_SCHEDULE["night-watch-sync"] = {"task": "memory.sync.pass", "schedule": 60.0}
# A running refinement run with no heartbeat for this long is rolled back and marked failed.
REFINEMENT_HEARTBEAT_TIMEOUT = env_int("REFINEMENT_HEARTBEAT_TIMEOUT", 600, minimum=1)
# A running observation-pipeline run with no progress for this long is marked failed.
PIPELINE_HEARTBEAT_TIMEOUT = env_int("PIPELINE_HEARTBEAT_TIMEOUT", 600, minimum=1)

# Local clones of the projects' repositories, read (never written) to check lessons' code refs:
# a project's checkout path, when relative, is taken under this folder; without one, <root>/<slug>.
PROJECT_CHECKOUT_ROOT = env_str("PROJECT_CHECKOUT_ROOT", "")
# Where `seed_demo` writes the demo project's small git repository.
DEMO_CHECKOUT_DIR = env_str("DEMO_CHECKOUT_DIR", str(BASE_DIR / "var" / "demo-checkouts"))

# Memory rules (the seeds' constants); each memory can override the budgets.
MEMORY_MAX_LINES = env_int("MEMORY_MAX_LINES", 150, minimum=1)
MEMORY_COMPACTION_TARGET_LINES = env_int("MEMORY_COMPACTION_TARGET_LINES", 60, minimum=1)
MEMORY_CORE_CHAR_BUDGET = env_int("MEMORY_CORE_CHAR_BUDGET", 4000, minimum=1)
MEMORY_WORKING_CHAR_BUDGET = env_int("MEMORY_WORKING_CHAR_BUDGET", 8000, minimum=1)
MEMORY_PROMOTION_THRESHOLD = env_int("MEMORY_PROMOTION_THRESHOLD", 3, minimum=2)
# With a model engine, detection shows the model a memory's unplaced working lessons in batches of
# about this many input tokens (a lesson of LESSON_MAX_CHARS always fits), and allows it this
# many tokens to answer each batch.
PROMOTION_PROPOSAL_BATCH_TOKENS = env_int("PROMOTION_PROPOSAL_BATCH_TOKENS", 12_000, minimum=2_000)
PROMOTION_PROPOSAL_MAX_OUTPUT_TOKENS = env_int("PROMOTION_PROPOSAL_MAX_OUTPUT_TOKENS", 4_096, minimum=256)
# The longest lesson text accepted on any path (API, forms, admin, import, jobs).
LESSON_MAX_CHARS = env_int("LESSON_MAX_CHARS", 2000, minimum=200)

# LLM engines. Keys come from the environment only; they are never stored in the database.
LLM_DEFAULT_PROVIDER = env_choice("LLM_DEFAULT_PROVIDER", "offline", ("offline", "anthropic", "openai"))
LLM_DEFAULT_MAX_TOKENS = env_int("LLM_DEFAULT_MAX_TOKENS", 1024, minimum=1)
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 60.0, minimum=0.1, maximum=3600)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2, minimum=0)
LLM_RETRY_MAX_DELAY_SECONDS = env_float("LLM_RETRY_MAX_DELAY_SECONDS", 30.0, minimum=0.0, maximum=600)
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY", "")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "")
ANTHROPIC_DEFAULT_MODEL = env_str("ANTHROPIC_DEFAULT_MODEL", "claude-sonnet-4-6")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_DEFAULT_MODEL = env_str("OPENAI_DEFAULT_MODEL", "gpt-4.1-mini")
# Conflict detection: the offline detector always runs; with a model engine the model also looks
# for conflicts that share no words, within these bounds (characters of lesson lines sent).
CONFLICTS_ENGINE = env_choice("CONFLICTS_ENGINE", "offline", ("offline", "anthropic", "openai"))
CONFLICTS_MODEL = env_str("CONFLICTS_MODEL", "")
CONFLICTS_MODEL_LESSONS_PER_CALL = env_int("CONFLICTS_MODEL_LESSONS_PER_CALL", 200, minimum=2)
CONFLICTS_MODEL_CHARS_PER_CALL = env_int("CONFLICTS_MODEL_CHARS_PER_CALL", 40_000, minimum=4_000)
CONFLICTS_MODEL_CHARS_PER_RUN = env_int("CONFLICTS_MODEL_CHARS_PER_RUN", 400_000, minimum=4_000)
CONFLICTS_MODEL_MAX_OUTPUT_TOKENS = env_int("CONFLICTS_MODEL_MAX_OUTPUT_TOKENS", 2_048, minimum=256)

# Agent API
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 256 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(API_MAX_BODY_BYTES, 2_621_440)
# Context reads (every agent turn) take these from the cache; see memory/context_cache.py.
# A revoked token stops working at once in the process that revoked it, in the others within this many seconds.
AGENT_TOKEN_CACHE_SECONDS = env_int("AGENT_TOKEN_CACHE_SECONDS", 5, minimum=0)
# How long a context read trusts a cached memory version (writes clear it when they commit, so
# this bounds only a read that raced a write); 0 reads the version from the database every time.
MEMORY_VERSION_CACHE_SECONDS = env_int("MEMORY_VERSION_CACHE_SECONDS", 10 if "versions" in CACHES else 0, minimum=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {
        "handlers": ["console"],
        "level": env_choice("LOG_LEVEL", "info", ("debug", "info", "warning", "error")).upper(),
    },
    # django-axes logs every successful login at info; lockouts and failures come at warning.
    "loggers": {"axes": {"level": "WARNING"}},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)

# HTTPS behind a proxy: all off by default (local use), set in production (see the README).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
_proxy_ssl_header = env_str("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    _header, _, _value = _proxy_ssl_header.partition("=")
    if not _header.strip() or not _value.strip():
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER must look like X-Forwarded-Proto=https, got {_proxy_ssl_header!r}"
        )
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _header.strip().upper().replace("-", "_"), _value.strip())

# Content-Security-Policy (django-csp 4): scripts only from this site, never inline; inline
# style attributes stay allowed for the width of meters and bars, which carry no script.
from csp.constants import NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Login throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one user name from
# one address, that pair is locked out for AXES_COOLOFF_MINUTES; `manage.py axes_reset` unlocks.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 30, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
