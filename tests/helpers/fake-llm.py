#!/usr/bin/env python3
"""A scripted fake LLM server for bernstein's tests (Python 3 standard library only).

It listens on 127.0.0.1 (or --host ADDR; port 0 = a free port, printed on stdout and written to
--port-file), answers each POST with the next scripted response, and appends
every request it receives to a JSONL log (--log) for the test to assert on.
It never makes a request of its own and stops by itself after --max-seconds.

    fake-llm.py --script SCRIPT.json --log REQUESTS.jsonl [--port-file FILE]
                [--host ADDR] [--port N] [--max-seconds S]

APIs, one handler each (API_ROUTES below; add a handler for a new API there):

    POST .../chat/completions   OpenAI Chat Completions, plain JSON or SSE
                                (stream: true; chat.completion.chunk objects,
                                tool_calls deltas by index, finish_reason, a
                                usage chunk when stream_options.include_usage,
                                then "data: [DONE]")
    POST .../responses          OpenAI Responses API, plain JSON or SSE with
                                "event:" lines: response.created,
                                response.in_progress, response.output_item.added,
                                response.content_part.added,
                                response.output_text.delta/.done,
                                response.content_part.done,
                                response.function_call_arguments.delta/.done,
                                response.output_item.done, response.completed
                                (a tool call with "custom": true is a
                                custom_tool_call item, e.g. codex's freeform
                                apply_patch, streamed as
                                response.custom_tool_call_input.delta/.done)
    POST .../messages           Anthropic Messages (also ?beta=true), plain JSON
                                or SSE: message_start, content_block_start /
                                content_block_delta (text_delta, input_json_delta
                                for tool_use) / content_block_stop,
                                message_delta (stop_reason, usage), message_stop
    POST .../messages/count_tokens   Anthropic token count: {"input_tokens": N},
                                never consumes a scripted response
    POST .../models/M:streamGenerateContent   Gemini, always SSE (alt=sse):
                                candidates[0].content.parts with text and
                                functionCall parts, finishReason, usageMetadata
    POST .../models/M:generateContent   Gemini, plain JSON
    POST .../models/M:countTokens   Gemini token count: {"totalTokens": N},
                                never consumes a scripted response

Streams use HTTP/1.1 chunked transfer encoding; plain replies a Content-Length.

The script (JSON) is either a list of responses or an object
{"responses": [...], "default": RESPONSE}. Responses are used in order, one per
request, whatever the endpoint; when the list is used up, "default" answers,
and without one the server answers 500 "script exhausted". With a "side"
RESPONSE in the object, requests that offer the model no tools (the title and
summary calls agent CLIs make beside the conversation) get "side" and do not
consume the list (a side request that asks for JSON by a response schema,
as gemini's router does, gets a minimal JSON value satisfying it). A response:

    {"text": "hello"}                      an assistant message
    {"tool_calls": [{"name": "write_file",
                     "arguments": {"path": "a.txt", "content": "x"},
                     "id": "call_1"}]}     tool calls (arguments: an object, or a
                                           string sent as is); "text" may be given too;
                                           {"name": "apply_patch", "custom": true,
                                            "input": "*** Begin Patch..."} is a
                                           Responses custom (freeform) tool call
    {"usage": {"input": 12, "output": 7}}  token counts (default 10 / 5);
                                           "usage": null sends none
    {"status": 429, "headers": {"Retry-After": "1"},
     "error": "Rate limit reached"}        an HTTP error with an OpenAI error body
                                           (status 500, 503, 400, ... alike; the body
                                           is shaped as the API's own errors); "body"
                                           (a string) replaces the error body
    {"malformed": true}                    stream: one good chunk, then a data line
                                           that is not JSON; plain: a body that is
                                           not JSON
    {"truncate": true}                     stream: stop before [DONE] /
                                           response.completed (HTTP framing intact)
    {"cut": true}                          stream: drop the connection mid-stream
    {"delay": 1.5}                         wait before answering (seconds)
    {"chunk_delay": 0.2}                   wait between stream chunks
    {"chunk_size": 4}                      characters per text/arguments delta
    {"echo_auth": true}                    the reply text is "auth: " + the request's
                                           Authorization header (redaction tests)
    {"omit_final_output": true}            responses stream: response.completed with
                                           an empty output (clients must use deltas)
    {"stream_as_json": true}               answer a stream request with plain JSON

The log has one JSON object per request: {"ts", "mono", "method", "path", "api",
"headers", "body"} where body is the parsed JSON (or {"_raw": text}) and the
authorization, x-api-key and x-goog-api-key headers are replaced by
"sha256:<hex of the value>" so the log never holds a credential. "side": true
marks a request answered by the script's "side" response, "count": true one
answered as a token count.
"""

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if isinstance(data, list):
            data = {"responses": data}
        self.responses = list(data.get("responses", []))
        self.default = data.get("default")
        self.side = data.get("side")
        self.index = 0
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            if self.index < len(self.responses):
                r = self.responses[self.index]
                self.index += 1
                return r
            self.index += 1
        if self.default is not None:
            return self.default
        return {"status": 500, "error": "fake-llm: script exhausted"}


def chunks(s, n):
    n = max(1, int(n))
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def call_args(c):
    a = c.get("arguments", {})
    return a if isinstance(a, str) else json.dumps(a)


def usage_of(spec):
    u = spec.get("usage", {})
    if u is None:
        return None
    return (int(u.get("input", 10)), int(u.get("output", 5)))


def reply_text(spec, handler):
    if spec.get("echo_auth"):
        return "auth: " + (handler.headers.get("Authorization") or "")
    return spec.get("text", "")


# ---- OpenAI Chat Completions ------------------------------------------------

def chat_plain(spec, req, handler):
    model = req.get("model", "fake-model")
    msg = {"role": "assistant", "content": reply_text(spec, handler) or None}
    calls = spec.get("tool_calls") or []
    if calls:
        msg["tool_calls"] = [{"id": c.get("id", "call_%d" % (i + 1)), "type": "function",
                              "function": {"name": c["name"], "arguments": call_args(c)}}
                             for i, c in enumerate(calls)]
    out = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
           "model": model,
           "choices": [{"index": 0, "message": msg,
                        "finish_reason": "tool_calls" if calls else "stop"}]}
    u = usage_of(spec)
    if u:
        out["usage"] = {"prompt_tokens": u[0], "completion_tokens": u[1],
                        "total_tokens": u[0] + u[1]}
    return out


def chat_stream(spec, req, handler):
    """Yields SSE event texts; None marks where a malformed chunk goes."""
    model = req.get("model", "fake-model")
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    size = spec.get("chunk_size", 4)

    def ev(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return "data: " + json.dumps(d) + "\n\n"

    yield ev({"role": "assistant", "content": ""})
    if spec.get("malformed"):
        yield "data: {\"choices\": [{\"delta\": {\"content\": \"bro\n\n"
        return
    text = reply_text(spec, handler)
    if text:
        for part in chunks(text, size):
            yield ev({"content": part})
    calls = spec.get("tool_calls") or []
    for i, c in enumerate(calls):
        yield ev({"tool_calls": [{"index": i, "id": c.get("id", "call_%d" % (i + 1)),
                                  "type": "function",
                                  "function": {"name": c["name"], "arguments": ""}}]})
        for part in chunks(call_args(c), size):
            yield ev({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
    if spec.get("truncate"):
        return
    yield ev({}, "tool_calls" if calls else "stop")
    u = usage_of(spec)
    if u and (req.get("stream_options") or {}).get("include_usage"):
        d = dict(base)
        d["choices"] = []
        d["usage"] = {"prompt_tokens": u[0], "completion_tokens": u[1],
                      "total_tokens": u[0] + u[1]}
        yield "data: " + json.dumps(d) + "\n\n"
    yield "data: [DONE]\n\n"


# ---- OpenAI Responses ------------------------------------------------------

def responses_output(spec, handler):
    out = []
    text = reply_text(spec, handler)
    if text or not spec.get("tool_calls"):
        out.append({"id": "msg_fake", "type": "message", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for i, c in enumerate(spec.get("tool_calls") or []):
        if c.get("custom"):
            out.append({"id": "ctc_%d" % (i + 1), "type": "custom_tool_call",
                        "status": "completed", "call_id": c.get("id", "call_%d" % (i + 1)),
                        "name": c["name"], "input": c.get("input", "")})
            continue
        out.append({"id": "fc_%d" % (i + 1), "type": "function_call", "status": "completed",
                    "call_id": c.get("id", "call_%d" % (i + 1)), "name": c["name"],
                    "arguments": call_args(c)})
    return out


def responses_object(spec, req, handler, status="completed", output=None):
    obj = {"id": "resp_fake", "object": "response", "created_at": int(time.time()),
           "status": status, "model": req.get("model", "fake-model"),
           "output": output if output is not None else [], "error": None}
    u = usage_of(spec)
    if u and status == "completed":
        obj["usage"] = {"input_tokens": u[0], "output_tokens": u[1],
                        "total_tokens": u[0] + u[1]}
    return obj


def responses_plain(spec, req, handler):
    return responses_object(spec, req, handler, "completed", responses_output(spec, handler))


def responses_stream(spec, req, handler):
    seq = [0]
    size = spec.get("chunk_size", 4)

    def ev(kind, **fields):
        d = {"type": kind, "sequence_number": seq[0]}
        d.update(fields)
        seq[0] += 1
        return "event: " + kind + "\ndata: " + json.dumps(d) + "\n\n"

    yield ev("response.created", response=responses_object(spec, req, handler, "in_progress"))
    yield ev("response.in_progress",
             response=responses_object(spec, req, handler, "in_progress"))
    if spec.get("malformed"):
        yield "event: response.output_text.delta\ndata: {\"type\": \"response.out\n\n"
        return
    output = responses_output(spec, handler)
    for idx, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            added = dict(item, status="in_progress", content=[])
            yield ev("response.output_item.added", output_index=idx, item=added)
            part = {"type": "output_text", "text": "", "annotations": []}
            yield ev("response.content_part.added", item_id=item["id"], output_index=idx,
                     content_index=0, part=part)
            for piece in chunks(text, size) if text else []:
                yield ev("response.output_text.delta", item_id=item["id"], output_index=idx,
                         content_index=0, delta=piece)
            yield ev("response.output_text.done", item_id=item["id"], output_index=idx,
                     content_index=0, text=text)
            yield ev("response.content_part.done", item_id=item["id"], output_index=idx,
                     content_index=0, part=dict(part, text=text))
            yield ev("response.output_item.done", output_index=idx, item=item)
        elif item["type"] == "custom_tool_call":
            added = dict(item, status="in_progress", input="")
            yield ev("response.output_item.added", output_index=idx, item=added)
            for piece in chunks(item["input"], size):
                yield ev("response.custom_tool_call_input.delta", item_id=item["id"],
                         output_index=idx, delta=piece)
            yield ev("response.custom_tool_call_input.done", item_id=item["id"],
                     output_index=idx, input=item["input"])
            yield ev("response.output_item.done", output_index=idx, item=item)
        else:
            added = dict(item, status="in_progress", arguments="")
            yield ev("response.output_item.added", output_index=idx, item=added)
            for piece in chunks(item["arguments"], size):
                yield ev("response.function_call_arguments.delta", item_id=item["id"],
                         output_index=idx, delta=piece)
            yield ev("response.function_call_arguments.done", item_id=item["id"],
                     output_index=idx, arguments=item["arguments"])
            yield ev("response.output_item.done", output_index=idx, item=item)
    if spec.get("truncate"):
        return
    final = [] if spec.get("omit_final_output") else output
    yield ev("response.completed",
             response=responses_object(spec, req, handler, "completed", final))


# ---- Anthropic Messages ----------------------------------------------------

def anthropic_content(spec, handler):
    content = []
    text = reply_text(spec, handler)
    if text or not spec.get("tool_calls"):
        content.append({"type": "text", "text": text})
    for i, c in enumerate(spec.get("tool_calls") or []):
        a = c.get("arguments", {})
        if isinstance(a, str):
            try:
                a = json.loads(a)
            except ValueError:
                a = {}
        content.append({"type": "tool_use", "id": c.get("id", "toolu_fake_%d" % (i + 1)),
                        "name": c["name"], "input": a})
    return content


def anthropic_usage(spec):
    u = usage_of(spec) or (0, 0)
    return {"input_tokens": u[0], "output_tokens": u[1], "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def anthropic_plain(spec, req, handler):
    return {"id": "msg_fake", "type": "message", "role": "assistant",
            "model": req.get("model", "fake-model"), "content": anthropic_content(spec, handler),
            "stop_reason": "tool_use" if spec.get("tool_calls") else "end_turn",
            "stop_sequence": None, "usage": anthropic_usage(spec)}


def anthropic_stream(spec, req, handler):
    size = spec.get("chunk_size", 4)

    def ev(kind, **fields):
        d = {"type": kind}
        d.update(fields)
        return "event: " + kind + "\ndata: " + json.dumps(d) + "\n\n"

    usage = anthropic_usage(spec)
    start = anthropic_plain(spec, req, handler)
    start.update(content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield ev("message_start", message=start)
    if spec.get("malformed"):
        yield "event: content_block_delta\ndata: {\"type\": \"content_block_del\n\n"
        return
    for idx, block in enumerate(anthropic_content(spec, handler)):
        if block["type"] == "text":
            yield ev("content_block_start", index=idx,
                     content_block={"type": "text", "text": ""})
            for piece in chunks(block["text"], size) if block["text"] else []:
                yield ev("content_block_delta", index=idx,
                         delta={"type": "text_delta", "text": piece})
        else:
            yield ev("content_block_start", index=idx,
                     content_block=dict(block, input={}))
            for piece in chunks(json.dumps(block["input"]), size):
                yield ev("content_block_delta", index=idx,
                         delta={"type": "input_json_delta", "partial_json": piece})
        yield ev("content_block_stop", index=idx)
    if spec.get("truncate"):
        return
    yield ev("message_delta",
             delta={"stop_reason": "tool_use" if spec.get("tool_calls") else "end_turn",
                    "stop_sequence": None},
             usage={"output_tokens": usage["output_tokens"]})
    yield ev("message_stop")


def anthropic_error(status, message):
    kind = {400: "invalid_request_error", 401: "authentication_error",
            403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
            529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def anthropic_count(req):
    return {"input_tokens": max(1, len(json.dumps(req)) // 4)}


# ---- Gemini ------------------------------------------------------------------

def gemini_usage(spec):
    u = usage_of(spec)
    if not u:
        return None
    return {"promptTokenCount": u[0], "candidatesTokenCount": u[1],
            "totalTokenCount": u[0] + u[1]}


def gemini_parts(spec, handler):
    parts = []
    text = reply_text(spec, handler)
    if text:
        parts.append({"text": text})
    for i, c in enumerate(spec.get("tool_calls") or []):
        a = c.get("arguments", {})
        if isinstance(a, str):
            try:
                a = json.loads(a)
            except ValueError:
                a = {}
        parts.append({"functionCall": {"id": c.get("id", "call_%d" % (i + 1)),
                                       "name": c["name"], "args": a},
                      "thoughtSignature": "skip_thought_signature_validator"})
    return parts


def gemini_chunk(parts, finish, spec, req, handler):
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    out = {"candidates": [cand], "modelVersion": handler.path_model or "fake-model",
           "responseId": "gemini-fake"}
    u = gemini_usage(spec)
    if finish and u:
        out["usageMetadata"] = u
    return out


def gemini_plain(spec, req, handler):
    return gemini_chunk(gemini_parts(spec, handler) or [{"text": ""}], True, spec, req,
                        handler)


def gemini_stream(spec, req, handler):
    size = spec.get("chunk_size", 4)

    def ev(d):
        return "data: " + json.dumps(d) + "\n\n"

    if spec.get("malformed"):
        yield ev(gemini_chunk([{"text": "x"}], False, spec, req, handler))
        yield "data: {\"candidates\": [{\"content\n\n"
        return
    parts = gemini_parts(spec, handler)
    texts = [p for p in parts if "text" in p]
    calls = [p for p in parts if "functionCall" in p]
    for p in texts:
        for piece in chunks(p["text"], size):
            yield ev(gemini_chunk([{"text": piece}], False, spec, req, handler))
    if spec.get("truncate"):
        return
    yield ev(gemini_chunk(calls or ([] if texts else [{"text": ""}]), True, spec, req,
                          handler))


def gemini_error(status, message):
    st = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
          404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}.get(status,
                                                                             "INTERNAL")
    return {"error": {"code": status, "message": message, "status": st}}


def gemini_count(req):
    return {"totalTokens": max(1, len(json.dumps(req)) // 4)}


def openai_error(status, message):
    kind = {400: "invalid_request_error", 401: "invalid_request_error",
            404: "invalid_request_error", 429: "rate_limit_exceeded"}.get(status,
                                                                          "server_error")
    return {"error": {"message": message, "type": kind, "code": None}}


def schema_sample(schema, depth=0):
    """A minimal value that satisfies a JSON (or Gemini OpenAPI-style) schema."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: schema_sample(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "fake"


def json_schema_of(req):
    """The response schema a side request asks for (Gemini generationConfig), or None."""
    cfg = req.get("generationConfig") or {}
    if cfg.get("responseMimeType") != "application/json":
        return None
    return cfg.get("responseJsonSchema") or cfg.get("responseSchema") or {}


def has_tools(req):
    return bool(req.get("tools"))


# API name, path suffix, plain handler, stream handler, error body, token count
# handler, stream test. Another API is one more row and a few more functions.
# Rows are tried in order; the first whose suffix ends the path (without its
# query) wins.
def stream_flag(req, path):
    return bool(req.get("stream"))


API_ROUTES = [
    ("chat_completions", "/chat/completions", chat_plain, chat_stream, openai_error, None,
     stream_flag),
    ("responses", "/responses", responses_plain, responses_stream, openai_error, None,
     stream_flag),
    ("anthropic_count_tokens", "/messages/count_tokens", None, None, anthropic_error,
     anthropic_count, stream_flag),
    ("anthropic_messages", "/messages", anthropic_plain, anthropic_stream, anthropic_error,
     None, stream_flag),
    ("gemini", ":streamGenerateContent", gemini_plain, gemini_stream, gemini_error, None,
     lambda req, path: True),
    ("gemini", ":generateContent", gemini_plain, gemini_stream, gemini_error, None,
     lambda req, path: False),
    ("gemini_count_tokens", ":countTokens", None, None, gemini_error, gemini_count,
     stream_flag),
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def record(self, api, body_text, flags=None):
        try:
            body = json.loads(body_text) if body_text else None
        except ValueError:
            body = {"_raw": body_text}
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            if k in ("authorization", "x-api-key", "x-goog-api-key"):
                v = "sha256:" + hashlib.sha256(v.encode("utf-8")).hexdigest()
            headers[k] = v
        entry = {"ts": time.time(), "mono": time.monotonic(), "method": self.command,
                 "path": self.path, "api": api, "headers": headers, "body": body}
        entry.update(flags or {})
        with self.server.log_lock:
            with open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
        return body if isinstance(body, dict) else {}

    def send_json(self, status, obj, extra=None, raw=None):
        data = raw.encode("utf-8") if raw is not None else json.dumps(obj).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def write_chunk(self, text):
        data = text.encode("utf-8")
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()

    def do_GET(self):
        self.send_json(404, {"error": {"message": "fake-llm: only POST is served"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body_text = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        route = None
        path = self.path.split("?", 1)[0]
        for r in API_ROUTES:
            if path.endswith(r[1]):
                route = r
                break
        try:
            parsed = json.loads(body_text) if body_text else {}
        except ValueError:
            parsed = {}
        if not isinstance(parsed, dict):
            parsed = {}
        self.path_model = None
        if ":" in path and "/models/" in path:
            self.path_model = path.rsplit("/models/", 1)[1].split(":", 1)[0]
        flags = {}
        if route is not None and route[5] is not None:
            flags["count"] = True
        elif route is not None and self.server.script.side is not None \
                and not has_tools(parsed):
            flags["side"] = True
        req = self.record(route[0] if route else None, body_text, flags)
        if route is None:
            self.send_json(404, {"error": {"message": "fake-llm: no API at " + path}})
            return
        _, _, plain, stream, error_body, count, want_stream = route
        if count is not None:
            self.send_json(200, count(req))
            return
        if flags.get("side"):
            spec = self.server.script.side
            schema = json_schema_of(req)
            if schema is not None and spec.get("status", 200) == 200:
                # structured side calls (gemini's model router, next-speaker
                # check) get a JSON text that satisfies their schema
                spec = dict(spec, text=json.dumps(schema_sample(schema)))
        else:
            spec = self.server.script.next()
        if spec.get("delay"):
            time.sleep(float(spec["delay"]))
        status = int(spec.get("status", 200))
        if status != 200:
            err = error_body(status, spec.get("error", "fake error %d" % status))
            self.send_json(status, err, spec.get("headers"), spec.get("body"))
            return
        if not want_stream(req, path) or spec.get("stream_as_json"):
            if spec.get("malformed"):
                self.send_json(200, None, raw="{\"choices\": [ this is not json")
            else:
                self.send_json(200, plain(spec, req, self), spec.get("headers"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (spec.get("headers") or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        n = 0
        for text in stream(spec, req, self):
            if spec.get("cut") and n >= 2:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.write_chunk(text)
            n += 1
            if spec.get("chunk_delay"):
                time.sleep(float(spec["chunk_delay"]))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    args = ap.parse_args()

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.script = Script(args.script)
    server.log_path = args.log
    server.log_lock = threading.Lock()
    open(args.log, "a", encoding="utf-8").close()
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    print(port, flush=True)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    timer = threading.Timer(args.max_seconds, stop)
    timer.daemon = True
    timer.start()
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
