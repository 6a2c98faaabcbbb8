#!/usr/bin/env python3
"""A small W3C WebDriver client (Python stdlib only) for the dashboard test.

    with WebDriver.start(user_data_dir, width=390, height=844) as wd:
        wd.get(url)
        wd.wait(lambda: wd.find('.card[data-task="x"]'), 30, 'the card')
        wd.click('#btn-cancel')
        wd.screenshot(path)

start() runs Debian's chromedriver on a free loopback port (the process is
this script's child and is ended by its pid on exit) and opens a headless
Chromium session. Only the handful of endpoints the test needs: navigate,
find elements (CSS), click, attribute, text, execute script, screenshot.
"""
import base64
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

ELEMENT = 'element-6066-11e4-a52e-4f735466cecf'


class WebDriverError(Exception):
    pass


def _free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class WebDriver:
    def __init__(self, proc, base):
        self.proc = proc
        self.base = base
        self.session = None

    @classmethod
    def start(cls, user_data_dir, width=1280, height=900,
              driver='/usr/bin/chromedriver', browser='/usr/bin/chromium', log=None):
        port = _free_port()
        out = open(log, 'ab') if log else subprocess.DEVNULL
        proc = subprocess.Popen([driver, f'--port={port}', '--allowed-ips=127.0.0.1'],
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        wd = cls(proc, f'http://127.0.0.1:{port}')
        deadline = time.monotonic() + 30
        while True:
            try:
                wd._call('GET', '/status')
                break
            except (OSError, WebDriverError):
                if time.monotonic() > deadline or proc.poll() is not None:
                    wd.quit()
                    raise WebDriverError('chromedriver did not start')
                time.sleep(0.1)
        args = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--no-first-run', '--disable-extensions', '--disable-background-networking',
                '--disable-sync', '--disable-component-update', '--metrics-recording-only',
                f'--user-data-dir={user_data_dir}', f'--window-size={width},{height}']
        caps = {'capabilities': {'alwaysMatch': {
            'browserName': 'chrome',
            'goog:chromeOptions': {'binary': browser, 'args': args}}}}
        try:
            r = wd._call('POST', '/session', caps, timeout=90)
        except Exception:
            wd.quit()
            raise
        wd.session = r['sessionId']
        return wd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.quit()

    def _call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read() or b'{}').get('value')
        except urllib.error.HTTPError as e:
            try:
                v = json.loads(e.read()).get('value', {})
            except ValueError:
                v = {}
            raise WebDriverError(f'{method} {path}: {v.get("error")}: {v.get("message", "")[:300]}')

    def _s(self, method, path, body=None):
        return self._call(method, f'/session/{self.session}{path}', body)

    def quit(self):
        try:
            if self.session:
                self._s('DELETE', '')
        except Exception:
            pass
        self.session = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def get(self, url):
        self._s('POST', '/url', {'url': url})

    def find_all(self, css):
        return [e[ELEMENT] for e in self._s('POST', '/elements', {'using': 'css selector', 'value': css})]

    def find(self, css):
        v = self.find_all(css)
        return v[0] if v else None

    def click(self, css):
        e = self.find(css)
        if not e:
            raise WebDriverError(f'no element {css}')
        self._s('POST', f'/element/{e}/click', {})

    def text(self, css):
        e = self.find(css)
        return self._s('GET', f'/element/{e}/text') if e else None

    def script(self, js, *args):
        return self._s('POST', '/execute/sync', {'script': js, 'args': list(args)})

    def screenshot(self, path):
        png = base64.b64decode(self._s('GET', '/screenshot'))
        with open(path, 'wb') as f:
            f.write(png)
        return len(png)

    def wait(self, cond, seconds, what):
        deadline = time.monotonic() + seconds
        while True:
            try:
                v = cond()
            except WebDriverError:
                v = None
            if v:
                return v
            if time.monotonic() > deadline:
                raise WebDriverError(f'timed out waiting for {what}')
            time.sleep(0.1)
