"""What the Anthropic and OpenAI adapters share: key lookup, the per-attempt call log, and the tool loop.

The SDKs own timeouts and retries (bounded by `max_retries`, on 408/409/429/5xx and connection
errors). To log every HTTP round trip, retries included, each adapter gives its SDK an HTTP client
that notes every attempt it sends; after the SDK call returns or fails, the attempts become
`LLMCall` rows, the successful one carrying the token usage.
"""

import time
from contextlib import suppress
from dataclasses import dataclass, field

from django.conf import settings

from memory.engines.base import (
    Completion,
    EngineError,
    MissingKeyError,
    ToolSession,
    dispatch_tool_call,
)
from memory.engines.recorder import ERROR, OK, CallRecorder

_SNIPPET_CHARS = 300


@dataclass
class Attempt:
    latency_ms: int
    status: int | None
    error: str = ""


@dataclass
class Turn:
    """One model answer, already read out of the provider's format."""

    text: str = ""
    tool_calls: list = field(default_factory=list)  # (call id, tool name, raw arguments)
    tokens_in: int = 0
    tokens_out: int = 0
    stop_reason: str = ""
    model: str = ""
    echo: object = None  # the assistant message to send back in the next request


class MalformedResponse(EngineError):
    """The provider answered 200 with something that is not a usable model response."""


def _elapsed_ms(started):
    return int((time.monotonic() - started) * 1000)


def recording_http_client(base_cls, engine, **kwargs):
    """An instance of the SDK's own default HTTP client class that notes each attempt on `engine`."""

    class RecordingHttpClient(base_cls):
        def send(self, request, **send_kwargs):
            started = time.monotonic()
            try:
                response = super().send(request, **send_kwargs)
            except Exception as exc:
                engine._attempts.append(Attempt(_elapsed_ms(started), None, _transport_error(exc, engine)))
                raise
            error = ""
            if response.status_code >= 400:
                error = f"HTTP {response.status_code}: {_body_snippet(response)}"
            engine._attempts.append(Attempt(_elapsed_ms(started), response.status_code, error))
            return response

        def __del__(self):
            with suppress(Exception):
                self.close()

    return RecordingHttpClient(**kwargs)


def _body_snippet(response):
    try:
        text = response.text
    except Exception:  # a streamed body not read yet
        return "(body not read)"
    text = " ".join(text.split())
    return text[:_SNIPPET_CHARS] or "(empty body)"


def _transport_error(exc, engine):
    name = type(exc).__name__
    if "Timeout" in name:
        return f"no answer within {engine.config.timeout:g}s ({name})"
    return f"{name}: {exc}"[:_SNIPPET_CHARS]


class SDKEngine:
    """One engine over either official SDK. A subclass names its SDK module and supplies the wire format.

    Both SDKs are built alike (a client class, a base error, APITimeoutError, APIConnectionError,
    DefaultHttpxClient), so the client, its retries and the error mapping live here once.
    """

    provider = ""
    label = ""
    key_setting = ""
    base_url_setting = ""
    model_setting = ""
    default_base_url = ""
    sdk = None  # the provider's SDK module
    sdk_errors: tuple = ()

    def __init_subclass__(cls, **kwargs):
        # Everything follows from the SDK module: its name is the provider, its client class carries the
        # provider's name (anthropic.Anthropic, openai.OpenAI), its base error the client's, and the
        # settings are named after the provider.
        super().__init_subclass__(**kwargs)
        if cls.sdk is not None:
            cls.provider = cls.sdk.__name__
            cls.label = next(name for name in dir(cls.sdk) if name.lower() == cls.provider)
            cls.client_class = capped_retries(getattr(cls.sdk, cls.label))
            cls.sdk_errors = (getattr(cls.sdk, f"{cls.label}Error"),)
            prefix = cls.provider.upper()
            cls.key_setting = f"{prefix}_API_KEY"
            cls.base_url_setting = f"{prefix}_BASE_URL"
            cls.model_setting = f"{prefix}_DEFAULT_MODEL"

    def __init__(self, config, recorder=None):
        self.config = config
        self.recorder = recorder if recorder is not None else CallRecorder()
        self.model = config.model or getattr(settings, self.model_setting, "")
        self.base_url = config.base_url or getattr(settings, self.base_url_setting, "") or self.default_base_url
        self._attempts: list[Attempt] = []
        self._client = None

    # -- configuration ---------------------------------------------------------------------------

    def api_key(self):
        key = getattr(settings, self.key_setting, "") or ""
        if not key.strip():
            raise MissingKeyError(self.label, self.key_setting)
        return key.strip()

    @property
    def client(self):
        if self._client is None:
            self._client = self._build_client(self.api_key())
        return self._client

    def _build_client(self, api_key):
        client = self.client_class(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.config.timeout,
            max_retries=self.config.max_retries,
            http_client=recording_http_client(self.sdk.DefaultHttpxClient, self, timeout=self.config.timeout),
        )
        client.retry_max_delay = self.config.retry_max_delay
        return client

    def _is_timeout(self, exc):
        return isinstance(exc, self.sdk.APITimeoutError)

    def _is_connection_error(self, exc):
        return isinstance(exc, self.sdk.APIConnectionError)

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- one logged request ------------------------------------------------------------------------

    def _round_trip(self, purpose, ask) -> Turn:
        """Send one request (the SDK may retry it) and log every HTTP attempt it took."""
        self._attempts = []
        started = time.monotonic()
        try:
            client = self.client
        except MissingKeyError as exc:
            self._log(purpose, outcome=ERROR, error=str(exc))
            raise
        try:
            turn = ask(client)
        except MalformedResponse as exc:
            self._log_attempts(purpose, started, final_error=str(exc))
            raise
        except self.sdk_errors as exc:
            message = self._explain(exc)
            self._log_attempts(purpose, started, final_error=message)
            raise EngineError(message) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            message = f"{self.label} answered with a body that is not JSON: {exc}"
            self._log_attempts(purpose, started, final_error=message)
            raise EngineError(message) from exc
        except Exception as exc:  # a bug, not a provider failure: log the call, keep the traceback
            self._log_attempts(purpose, started, final_error=f"{type(exc).__name__}: {exc}")
            raise
        self._log_attempts(purpose, started, turn=turn)
        return turn

    def _log(self, purpose, **fields):
        self.recorder.record(purpose=purpose, provider=self.provider, model=self.model, **fields)

    def _log_attempts(self, purpose, started, *, turn=None, final_error=""):
        attempts = self._attempts or [Attempt(_elapsed_ms(started), None, "")]
        for attempt in attempts[:-1]:
            self._log(
                purpose, latency_ms=attempt.latency_ms, outcome=ERROR, error=attempt.error or f"HTTP {attempt.status}"
            )
        last = attempts[-1]
        if turn is not None:
            self._log(
                purpose, latency_ms=last.latency_ms, tokens_in=turn.tokens_in, tokens_out=turn.tokens_out, outcome=OK
            )
        else:
            detail = final_error
            if last.error and last.error not in final_error:
                detail = f"{final_error} [{last.error}]"
            self._log(purpose, latency_ms=last.latency_ms, outcome=ERROR, error=detail)

    def _explain(self, exc):
        """An SDK exception as one sentence a team lead can act on."""
        attempts = len(self._attempts)
        tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts > 1 else ""
        status = getattr(exc, "status_code", None)
        message = _provider_message(exc)
        if self._is_timeout(exc):
            return f"{self.label} did not answer within {self.config.timeout:g}s{tries}"
        if status is None and self._is_connection_error(exc):
            return f"could not reach {self.label} at {self.base_url}{tries}: {exc}"
        if status == 401:
            return f"{self.label} rejected the API key (HTTP 401); check {self.key_setting}: {message}"
        if status == 429:
            return f"{self.label} rate limit (HTTP 429) persisted{tries}: {message}"
        if status is not None:
            return f"{self.label} returned HTTP {status}{tries}: {message}"
        return f"{self.label} response could not be used: {type(exc).__name__}: {exc}"

    # -- the interface ------------------------------------------------------------------------------

    def complete(self, *, system, prompt, purpose, max_tokens=None):
        conversation = self._start(system, prompt)
        turn = self._round_trip(
            purpose, lambda client: self._ask(client, system, conversation, [], max_tokens or self.config.max_tokens)
        )
        return Completion(
            text=turn.text,
            model=turn.model or self.model,
            tokens_in=turn.tokens_in,
            tokens_out=turn.tokens_out,
            stop_reason=turn.stop_reason,
        )

    def run_tools(
        self,
        *,
        system,
        prompt,
        tools,
        handler,
        purpose,
        max_turns=20,
        should_stop=None,
        offline_policy=None,
        max_tokens=None,
    ):
        conversation = self._start(system, prompt)
        max_tokens = max_tokens or self.config.max_tokens
        session = ToolSession()
        while True:
            if should_stop and should_stop():
                session.stopped_by = "should_stop"
                return session
            if session.turns >= max_turns:
                session.stopped_by = "max_turns"
                return session
            turn = self._round_trip(purpose, lambda client: self._ask(client, system, conversation, tools, max_tokens))
            session.turns += 1
            session.tokens_in += turn.tokens_in
            session.tokens_out += turn.tokens_out
            if turn.text:
                session.final_text = turn.text
            if not turn.tool_calls:
                session.stopped_by = "model"
                return session
            results = []
            for call_id, name, raw_arguments in turn.tool_calls:
                call, result = dispatch_tool_call(call_id, name, raw_arguments, tools, handler)
                session.calls.append((call, result))
                session.tool_calls += 1
                results.append(result)
                if should_stop and should_stop():
                    session.stopped_by = "should_stop"
                    return session
            self._continue(conversation, turn, results)

    # -- provider format (subclasses) ----------------------------------------------------------------

    def _start(self, system, prompt):  # pragma: no cover
        raise NotImplementedError

    def _ask(self, client, system, conversation, tools, max_tokens) -> Turn:  # pragma: no cover
        raise NotImplementedError

    def _continue(self, conversation, turn, results):  # pragma: no cover
        raise NotImplementedError


def _provider_message(exc):
    """The provider's own error message from the JSON error body, else the SDK's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:_SNIPPET_CHARS]
    return str(getattr(exc, "message", "") or exc)[:_SNIPPET_CHARS]


def field_of(obj, name, default=None):
    """Read a field from an SDK model or a plain dict (unknown blocks may arrive as either)."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def as_count(value):
    return value if isinstance(value, int) and value >= 0 else 0


def capped_retries(sdk_client_cls):
    """The SDK client with its wait between retries capped (tests set the cap to milliseconds)."""

    class CappedRetryClient(sdk_client_cls):
        retry_max_delay = 30.0

        def _calculate_retry_timeout(self, *args, **kwargs):
            return min(super()._calculate_retry_timeout(*args, **kwargs), self.retry_max_delay)

    CappedRetryClient.__name__ = sdk_client_cls.__name__
    return CappedRetryClient
