#!/usr/bin/env python3
"""The dashboard's approve and reject buttons on a run that is not live (t0339).

usage: dashboard-review.py URL TOKEN ARTIFACTS_DIR PROFILE_DIR APPROVE_TASK REJECT_TASK FEEDBACK

Headless Chromium over WebDriver (webdriver.py), a phone-sized window. The
latest run has ended with both tasks waiting in review. APPROVE_TASK's
drawer, its approve button: the page says the run was resumed in the
background, follows the resumed run, and the card reaches 'done'. Once the
run is not live again, REJECT_TASK's drawer, its reject button (the
browser's prompt answered with FEEDBACK): resumed again, and the card comes
back to 'review' after a second attempt. Screenshots in ARTIFACTS_DIR. One
line per check, "ok ..." or "FAIL ..."; exit 1 when any failed.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import WebDriver, WebDriverError  # noqa: E402

URL, TOKEN, ART, PROFILE, APPROVE, REJECT, FEEDBACK = sys.argv[1:8]
failed = 0


def report(ok, what):
    global failed
    print(('ok ' if ok else 'FAIL ') + what, flush=True)
    failed += not ok


def card(wd, task):
    return wd.script('const c = document.querySelector(`.card[data-task="${arguments[0]}"]`);'
                     'return c ? c.dataset.state + "|" + c.parentElement.dataset.column + "|" + c.textContent : "";',
                     task) or ''


def live(wd):
    return '(live)' in (wd.text('#run-state') or '')


os.makedirs(ART, exist_ok=True)
try:
    with WebDriver.start(PROFILE, width=390, height=844, log=os.path.join(ART, 'chromedriver.log')) as wd:
        wd.get(URL + '/#token=' + TOKEN)
        wd.wait(lambda: card(wd, APPROVE).startswith('review|review|')
                and card(wd, REJECT).startswith('review|review|') and not live(wd), 30,
                'both tasks in the review column of a run that is not live')
        report(True, 'the board shows both tasks waiting in review, the run not live')
        wd.screenshot(os.path.join(ART, 'review-0-board.png'))

        wd.click(f'.card[data-task="{APPROVE}"]')
        wd.wait(lambda: wd.script('return !document.getElementById("drawer").hidden'), 10, 'the drawer')
        wd.click('#btn-approve')
        wd.wait(lambda: 'resumed in the background' in (wd.text('#d-result') or ''), 60,
                'the answer of the approve')
        report(True, 'approve: the page says the run was resumed in the background (%r)' % wd.text('#d-result'))
        wd.wait(lambda: card(wd, APPROVE).startswith('done|done|') and not live(wd), 90,
                'the approved task done on the board, the resume ended')
        report(True, 'the approved task reaches done on the board (the resumed run followed)')
        wd.screenshot(os.path.join(ART, 'review-1-approved.png'))
        wd.click('#d-close')

        wd.click(f'.card[data-task="{REJECT}"]')
        wd.wait(lambda: wd.script('return !document.getElementById("drawer").hidden'), 10, 'the drawer')
        # the browser's prompt dialog answered with the feedback
        wd.script('window.prompt = () => arguments[0]; return true;', FEEDBACK)
        wd.click('#btn-reject')
        wd.wait(lambda: 'resumed in the background' in (wd.text('#d-result') or ''), 60,
                'the answer of the reject')
        report(True, 'reject: the page says the run was resumed in the background')
        wd.wait(lambda: card(wd, REJECT).startswith('review|review|') and 'attempts 2' in card(wd, REJECT)
                and not live(wd), 90, 'the rejected task back in review after a second attempt')
        report(True, 'the rejected task comes back to review after its second attempt')
        wd.screenshot(os.path.join(ART, 'review-2-rejected.png'))
except WebDriverError as e:
    report(False, str(e))
sys.exit(1 if failed else 0)
