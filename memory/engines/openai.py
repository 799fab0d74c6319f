"""OpenAI adapter: the official SDK's Chat Completions API with function tools."""

import json

import openai

from memory.engines.sdk import (
    MalformedResponse,
    SDKEngine,
    Turn,
    as_count,
    field_of,
)


class OpenAIEngine(SDKEngine):
    default_base_url = "https://api.openai.com/v1"
    sdk = openai

    def _start(self, system, prompt):
        conversation = [{"role": "system", "content": system}] if system else []
        conversation.append({"role": "user", "content": prompt})
        return conversation

    def _ask(self, client, system, conversation, tools, max_tokens):
        params = {
            "model": self.model,
            "messages": conversation,
            "max_completion_tokens": max_tokens,
            "temperature": self.config.temperature,
        }
        if tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in tools
            ]
        return self._read(client.chat.completions.create(**params))

    def _read(self, completion):
        choices = field_of(completion, "choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse("OpenAI answered without any choice")
        message = field_of(choices[0], "message")
        if message is None:
            raise MalformedResponse("OpenAI answered a choice without a message")
        content = field_of(message, "content")
        if content is not None and not isinstance(content, str):
            raise MalformedResponse("OpenAI answered with message content that is not text")
        usage = field_of(completion, "usage")
        turn = Turn(
            text=(content or "").strip(),
            tokens_in=as_count(field_of(usage, "prompt_tokens")),
            tokens_out=as_count(field_of(usage, "completion_tokens")),
            stop_reason=str(field_of(choices[0], "finish_reason") or ""),
            model=str(field_of(completion, "model") or ""),
        )
        sent_calls = []
        for tool_call in field_of(message, "tool_calls") or []:
            function = field_of(tool_call, "function")
            call_id, name = field_of(tool_call, "id"), field_of(function, "name")
            if not call_id or not name:
                raise MalformedResponse("OpenAI sent a tool call without an id or a function name")
            arguments = field_of(function, "arguments")
            turn.tool_calls.append((str(call_id), str(name), arguments))
            sent_calls.append(
                {
                    "id": str(call_id),
                    "type": "function",
                    "function": {
                        "name": str(name),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, default=str),
                    },
                }
            )
        turn.echo = {"role": "assistant", "content": content, "tool_calls": sent_calls}
        return turn

    def _continue(self, conversation, turn, results):
        conversation.append(turn.echo)
        for result in results:
            content = f"Error: {result.content}" if result.is_error else result.content
            conversation.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
