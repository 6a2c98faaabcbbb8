#!/usr/bin/env python3
"""The dashboard in a real browser (t0338): headless Chromium over WebDriver.

usage: dashboard-check.py URL TOKEN ARTIFACTS_DIR PROFILE_DIR DONE_TASKS HANG_TASK READY_FILE

On a phone-sized window (390x844): the page opened with #token=... before
any run exists ("no runs yet"; READY_FILE is then created, for the test to
start the run, which the page must pick up by itself); the
board shows every task of DONE_TASKS (comma-separated) reach the 'done'
column, each seen in another state first (moving); HANG_TASK's drawer shows
its live events; its cancel button cancels it (the card moves to
'cancelled'); the audit pill says intact. Screenshots of each step go to
ARTIFACTS_DIR. One line per check, "ok ..." or "FAIL ..."; exit 1 when any
failed.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import WebDriver, WebDriverError  # noqa: E402

URL, TOKEN, ART, PROFILE, DONE, HANG, READY = sys.argv[1:8]
DONE = DONE.split(',')
failed = 0


def report(ok, what):
    global failed
    print(('ok ' if ok else 'FAIL ') + what, flush=True)
    failed += not ok


def state(wd, task):
    return wd.script('const c = document.querySelector(`.card[data-task="${arguments[0]}"]`);'
                     'return c ? c.dataset.state + "|" + c.parentElement.dataset.column : null;', task)


os.makedirs(ART, exist_ok=True)
try:
    with WebDriver.start(PROFILE, width=390, height=844, log=os.path.join(ART, 'chromedriver.log')) as wd:
        wd.get(URL + '/#token=' + TOKEN)
        wd.wait(lambda: 'no runs yet' in (wd.text('#board') or ''), 30, 'the empty board')
        report(True, 'the page opens before any run ("no runs yet")')
        wd.screenshot(os.path.join(ART, '0-no-runs.png'))
        open(READY, 'w').close()
        seen = {t: set() for t in DONE}

        def watch():
            for t in DONE:
                s = state(wd, t)
                if s:
                    seen[t].add(s.split('|')[0])
            return True

        wd.wait(lambda: watch() and state(wd, HANG) and state(wd, HANG).startswith('running'), 60,
                'the hanging task running on the board')
        report(True, 'the board shows the running task')
        report(wd.script('return location.hash') == '', 'the token left the address bar')
        wd.screenshot(os.path.join(ART, '1-board-running.png'))
        wd.wait(lambda: watch() and all((state(wd, t) or '').startswith('done|done') for t in DONE), 90,
                'every task done on the board')
        moved = all(len(seen[t] - {'done'}) > 0 for t in DONE)
        report(moved, 'the tasks moved to done (seen earlier in: %s)' % {t: sorted(seen[t]) for t in DONE})
        report(True, 'every task reached the done column')
        wd.screenshot(os.path.join(ART, '2-board-done.png'))
        wd.wait(lambda: 'intact' in (wd.text('#audit') or ''), 30, 'the audit status')
        report(True, 'the audit pill says intact')
        wd.click(f'.card[data-task="{HANG}"]')
        wd.wait(lambda: wd.script('return !document.getElementById("drawer").hidden'), 10, 'the drawer')
        wd.wait(lambda: 'waiting-for-cancel' in (wd.text('#d-events') or ''), 30, 'the live events in the drawer')
        report(True, "the drawer shows the task's live events")
        wd.screenshot(os.path.join(ART, '3-drawer.png'))
        wd.click('#btn-cancel')
        wd.wait(lambda: (state(wd, HANG) or '').startswith('cancelled'), 60, 'the task cancelled on the board')
        report(True, 'a cancel from the page cancels the task')
        res = wd.text('#d-result') or ''
        report('cancel' in res, f'the drawer says what the run answered ({res!r})')
        wd.screenshot(os.path.join(ART, '4-cancelled.png'))
        wd.click('#d-close')
        wd.click(f'.card[data-task="{DONE[0]}"]')
        wd.wait(lambda: '1200 / 300' in (wd.text('#d-attempts') or ''), 30, "the done task's tokens")
        report(True, "a done task's drawer shows its attempt's tokens (1200 / 300)")
        wd.wait(lambda: 'check' in (wd.script('return document.getElementById("d-gates").textContent') or '')
                or '(no gate ran)' in (wd.script('return document.getElementById("d-gates").textContent') or ''),
                30, 'the gate logs section')
        wd.screenshot(os.path.join(ART, '5-done-drawer.png'))
        sw, iw = wd.script('return [document.documentElement.scrollWidth, window.innerWidth]')
        report(sw <= iw and iw <= 520, f'a phone-sized window ({iw}px; headless Chromium has a minimum) and nothing wider ({sw}px)')
except WebDriverError as e:
    report(False, str(e))
sys.exit(1 if failed else 0)
