#!/usr/bin/env python3
"""Check a running `bernstein serve` against docs/openapi.json (t0336).

usage: openapi-check.py SPEC URL TOKEN RUN TASK
       openapi-check.py --answer SPEC PATH STATUS FILE


For every path of the spec: a GET is made with RUN and TASK in its
parameters (an event stream with ?follow=0) and must answer 200 with the
spec's content type, and a JSON answer must match the spec's schema
exactly (every required key, no key the spec does not name unless
additionalProperties, the types, nullable, enums). A POST is made with an
empty object and its answer (a success or a refusal) must match the
ControlReply or Error schema. Errors (401, 404) must match Error. One line
per check, "ok PATH" or "FAIL PATH: why"; exit 1 when any failed.

--answer: the JSON answer saved in FILE, of a POST to PATH (a path of the
spec, e.g. /api/runs/{run}/tasks/{task}/retry) that answered STATUS (202:
a run that is not live, resumed; t0339), must match the spec's schema of
that status (Error for a status the spec does not name).
"""
import json
import sys
import urllib.error
import urllib.request

ANSWER = sys.argv[1] == '--answer'
spec = json.load(open(sys.argv[2] if ANSWER else sys.argv[1]))
URL, TOKEN, RUN, TASK = (None,) * 4 if ANSWER else sys.argv[2:6]
failed = 0


def resolve(s):
    while '$ref' in s:
        node = spec
        for part in s['$ref'].lstrip('#/').split('/'):
            node = node[part]
        s = node
    return s


def validate(v, s, where):
    s = resolve(s)
    if v is None:
        if s.get('nullable'):
            return
        raise ValueError(f'{where}: null where {s.get("type")} is required')
    t = s.get('type')
    ok = {'string': lambda x: isinstance(x, str),
          'integer': lambda x: isinstance(x, int) and not isinstance(x, bool),
          'number': lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
          'boolean': lambda x: isinstance(x, bool),
          'object': lambda x: isinstance(x, dict),
          'array': lambda x: isinstance(x, list)}
    if t and not ok[t](v):
        raise ValueError(f'{where}: {type(v).__name__} where {t} is required')
    if 'enum' in s and v not in s['enum']:
        raise ValueError(f'{where}: {v!r} not one of {s["enum"]}')
    if t == 'object':
        props = s.get('properties', {})
        for k in s.get('required', []):
            if k not in v:
                raise ValueError(f'{where}: missing "{k}"')
        for k, x in v.items():
            if k in props:
                validate(x, props[k], f'{where}.{k}')
            elif s.get('additionalProperties') is False:
                raise ValueError(f'{where}: "{k}" is not in the spec')
    if t == 'array':
        for i, x in enumerate(v):
            validate(x, s.get('items', {}), f'{where}[{i}]')


def fetch(method, path, token=TOKEN, body=None):
    req = urllib.request.Request(URL + path, method=method, data=body)
    if token:
        req.add_header('Authorization', 'Bearer ' + token)
    if body is not None:
        req.add_header('Content-Type', 'application/json')
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get('Content-Type', ''), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get('Content-Type', ''), e.read()


def report(name, err):
    global failed
    if err:
        failed += 1
        print(f'FAIL {name}: {err}')
    else:
        print(f'ok {name}')


error_schema = {'$ref': '#/components/schemas/Error'}
if ANSWER:
    path, status = sys.argv[3], sys.argv[4]
    resp = spec['paths'][path]['post']['responses'].get(status)
    schema = resp['content']['application/json']['schema'] if resp else error_schema
    try:
        validate(json.load(open(sys.argv[5])), schema, f'answer (HTTP {status})')
        report(f'POST {path} {status}', None)
    except (ValueError, KeyError, json.JSONDecodeError) as e:
        report(f'POST {path} {status}', e)
    sys.exit(1 if failed else 0)
for path, ops in spec['paths'].items():
    real = path.replace('{run}', RUN).replace('{task}', TASK)
    for method, op in ops.items():
        try:
            if method == 'get':
                if 'text/event-stream' in op['responses']['200']['content']:
                    real += '?follow=0'
                status, ctype, body = fetch('GET', real)
                if status != 200:
                    raise ValueError(f'HTTP {status}: {body[:200]!r}')
                (want, media), = op['responses']['200']['content'].items()
                if not ctype.startswith(want):
                    raise ValueError(f'Content-Type {ctype}, the spec says {want}')
                if want == 'application/json':
                    validate(json.loads(body), media['schema'], 'answer')
            else:
                status, ctype, body = fetch('POST', real, body=b'{}')
                if status == 404 and b'no such endpoint' in body:
                    raise ValueError('the server has no such endpoint')
                schema = op['responses'][str(status)]['content']['application/json']['schema'] \
                    if status in (200, 202) else error_schema
                validate(json.loads(body), schema, f'answer (HTTP {status})')
            report(f'{method.upper()} {path}', None)
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            report(f'{method.upper()} {path}', e)

for name, (status_want, method, path, token) in {
        'no token': (401, 'GET', '/api/runs', ''),
        'unknown endpoint': (404, 'GET', '/api/nosuch', TOKEN),
        'unknown task': (404, 'GET', f'/api/runs/{RUN}/tasks/nosuch', TOKEN)}.items():
    try:
        status, ctype, body = fetch(method, path, token)
        if status != status_want:
            raise ValueError(f'HTTP {status}, not {status_want}')
        validate(json.loads(body), error_schema, 'error')
        report(f'Error schema: {name}', None)
    except (ValueError, json.JSONDecodeError) as e:
        report(f'Error schema: {name}', e)
sys.exit(1 if failed else 0)
