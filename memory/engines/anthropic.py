"""Anthropic adapter: the official SDK's Messages API, with client-side tool use.

The Messages API in the installed SDK takes no sampling temperature, so the persona's temperature
is not sent to Anthropic; max_tokens, system prompt and tools are.
"""

import anthropic

from memory.engines.sdk import (
    MalformedResponse,
    SDKEngine,
    Turn,
    as_count,
    field_of,
)


class AnthropicEngine(SDKEngine):
    default_base_url = "https://api.anthropic.com"
    sdk = anthropic

    def _start(self, system, prompt):
        return [{"role": "user", "content": prompt}]

    def _ask(self, client, system, conversation, tools, max_tokens):
        params = {"model": self.model, "max_tokens": max_tokens, "messages": conversation}
        if system:
            params["system"] = system
        if tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
            ]
        return self._read(client.messages.create(**params))

    def _read(self, message):
        content = field_of(message, "content")
        if not isinstance(content, list):
            raise MalformedResponse("Anthropic answered without a list of content blocks")
        usage = field_of(message, "usage")
        turn = Turn(
            tokens_in=as_count(field_of(usage, "input_tokens"))
            + as_count(field_of(usage, "cache_creation_input_tokens"))
            + as_count(field_of(usage, "cache_read_input_tokens")),
            tokens_out=as_count(field_of(usage, "output_tokens")),
            stop_reason=str(field_of(message, "stop_reason") or ""),
            model=str(field_of(message, "model") or ""),
        )
        texts, echo = [], []
        for block in content:
            kind = field_of(block, "type")
            if kind == "text":
                texts.append(str(field_of(block, "text") or ""))
            elif kind == "tool_use":
                call_id, name = field_of(block, "id"), field_of(block, "name")
                if not call_id or not name:
                    raise MalformedResponse("Anthropic sent a tool_use block without an id or a name")
                turn.tool_calls.append((str(call_id), str(name), field_of(block, "input")))
            echo.append(block.to_dict(warnings=False) if hasattr(block, "to_dict") else dict(block))
        turn.text = "".join(texts).strip()
        turn.echo = echo
        return turn

    def _continue(self, conversation, turn, results):
        # The assistant turn goes back verbatim (thinking blocks included), then one user turn
        # answering every tool_use it contained.
        conversation.append({"role": "assistant", "content": turn.echo})
        conversation.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
                    for r in results
                ],
            }
        )
