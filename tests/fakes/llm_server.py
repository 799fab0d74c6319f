"""A local HTTP server speaking the Anthropic Messages and OpenAI Chat Completions wire formats.

The real SDKs are pointed at it with `base_url`. Each test scripts the answers in order and then
reads what the SDK actually sent:

    llm_server.anthropic.text("hello", tokens_in=12, tokens_out=3)
    llm_server.openai.error(429, retry_after=0.01).tool_calls([("search", {"query": "x"})])
    ...
    assert llm_server.anthropic.requests[0].json["max_tokens"] == 1024

A test may also answer from what was sent: `respond(fn)` calls fn(request) whenever nothing is
queued, and sends back its answer (text, or (name, arguments) tool calls); with `count_tokens`, the
usage reported is the request's and the answer's size in bytes / 4 instead of a fixed 10 and 5.

Failures on offer: any HTTP status with the provider's error body (and retry-after headers), a
response held back until the client has given up (`hang`), a 200 whose body is not JSON or not
the expected shape (`raw`), and tool calls whose argument JSON is broken.
"""

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict
    body: bytes

    @property
    def json(self):
        return json.loads(self.body or b"null")


@dataclass
class Reply:
    status: int = 200
    body: object = None  # dict -> JSON; bytes/str sent as they are
    headers: dict = field(default_factory=dict)
    hang: bool = False  # hold the answer until the server stops (the client times out first)


class FakeAPI:
    """The scripted queue of one provider's endpoint."""

    provider = ""
    path = ""

    def __init__(self):
        self.replies: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.responder = None
        self._lock = threading.Lock()

    # -- scripting ------------------------------------------------------------------------------

    def reply(self, reply: Reply):
        with self._lock:
            self.replies.append(reply)
        return self

    def error(self, status, message="scripted failure", *, retry_after=None, headers=None):
        extra = dict(headers or {})
        if retry_after is not None:
            extra["retry-after"] = f"{retry_after:g}"
            extra["retry-after-ms"] = f"{retry_after * 1000:g}"
        return self.reply(Reply(status=status, body=self.error_body(status, message), headers=extra))

    def respond(self, fn, *, count_tokens=False):
        """Answer every request with nothing queued by fn(request): a text, or a list of tool calls."""
        self.responder = fn
        self.count_tokens = count_tokens
        return self

    def hang(self):
        return self.reply(Reply(hang=True))

    def raw(self, body, status=200, content_type="application/json"):
        return self.reply(Reply(status=status, body=body, headers={"content-type": content_type}))

    # -- serving --------------------------------------------------------------------------------

    def next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.popleft()
            responder = self.responder
        if responder is not None:
            answer = responder(request)
            usage = {}
            if getattr(self, "count_tokens", False):
                usage = {"tokens_in": len(request.body) // 4, "tokens_out": len(json.dumps(answer)) // 4}
            if isinstance(answer, str):
                self.text(answer, **usage)
            else:
                self.tool_calls(answer, **usage)
            with self._lock:
                return self.replies.popleft()
        return Reply(
            status=400,
            body=self.error_body(400, "the fake server has no scripted reply left"),
            headers={"x-should-retry": "false"},
        )

    @property
    def last_json(self):
        return self.requests[-1].json

    @property
    def pending(self):
        return len(self.replies)


class FakeAnthropic(FakeAPI):
    provider = "anthropic"
    path = "/v1/messages"

    @staticmethod
    def error_body(status, message):
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def message(self, content, *, stop_reason="end_turn", tokens_in=10, tokens_out=5, model="claude-test"):
        return self.reply(
            Reply(
                body={
                    "id": f"msg_{next(_ids)}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
                }
            )
        )

    def text(self, text, **kwargs):
        return self.message([{"type": "text", "text": text}], **kwargs)

    def tool_calls(self, calls, *, text="", **kwargs):
        """calls: (name, input) pairs; input may be a dict or anything else (malformed input)."""
        content = [{"type": "text", "text": text}] if text else []
        for name, arguments in calls:
            content.append({"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": arguments})
        return self.message(content, stop_reason="tool_use", **kwargs)


class FakeOpenAI(FakeAPI):
    provider = "openai"
    path = "/v1/chat/completions"

    @staticmethod
    def error_body(status, message):
        kind = {400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(
            status, "server_error"
        )
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def completion(self, message, *, finish_reason="stop", tokens_in=10, tokens_out=5, model="gpt-test"):
        return self.reply(
            Reply(
                body={
                    "id": f"chatcmpl-{next(_ids)}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "refusal": None, **message},
                            "finish_reason": finish_reason,
                            "logprobs": None,
                        }
                    ],
                    "usage": {
                        "prompt_tokens": tokens_in,
                        "completion_tokens": tokens_out,
                        "total_tokens": tokens_in + tokens_out,
                    },
                }
            )
        )

    def text(self, text, **kwargs):
        return self.completion({"content": text}, **kwargs)

    def tool_calls(self, calls, *, text=None, **kwargs):
        """calls: (name, arguments) pairs; a dict is sent as JSON, a string as it is (so it can be broken)."""
        tool_calls = [
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
            }
            for name, args in calls
        ]
        return self.completion({"content": text, "tool_calls": tool_calls}, finish_reason="tool_calls", **kwargs)


class FakeLLMServer:
    def __init__(self):
        self.anthropic = FakeAnthropic()
        self.openai = FakeOpenAI()
        self._release = threading.Event()
        self._apis = {api.path: api for api in (self.anthropic, self.openai)}
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm-server", daemon=True
        )
        self.unknown_requests: list[RecordedRequest] = []

    @property
    def url(self):
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def anthropic_base_url(self):
        return self.url

    @property
    def openai_base_url(self):
        return f"{self.url}/v1"

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._release.set()  # let held answers finish so their threads end
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                request = RecordedRequest(
                    method="POST",
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                api = server._apis.get(self.path.split("?", 1)[0])
                if api is None:
                    server.unknown_requests.append(request)
                    self._send(
                        Reply(
                            status=404,
                            body={"error": {"message": f"no route {self.path}"}},
                            headers={"x-should-retry": "false"},
                        )
                    )
                    return
                reply = api.next_reply(request)
                if reply.hang:
                    server._release.wait(timeout=30)
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply):
                body = reply.body
                if isinstance(body, (dict, list)):
                    payload = json.dumps(body).encode()
                elif isinstance(body, str):
                    payload = body.encode()
                else:
                    payload = body or b""
                headers = {"content-type": "application/json", **reply.headers}
                try:
                    self.send_response(reply.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler
