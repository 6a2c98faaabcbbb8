#include "proc/ptydrive.h"

#include <errno.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#include "util/xalloc.h"
#include "util/banned.h"

/* A screen that holds still this long counts as drawn when the profile has no
 * ready pattern. */
#define SETTLE_MS 500
/* Replies the emulator owes the program, kept until the next step. */
#define REPLY_MAX 4096
/* Rows seen before the submit (not the agent's answer), kept up to this. */
#define BASELINE_MAX (256 * 1024)

enum phase {
	PH_BOOT,    /* waiting for the agent to be ready: nothing typed */
	PH_TYPED,   /* the prompt typed; the submit key due at submit_at */
	PH_RUNNING, /* submitted: watching for permission prompts and the end */
	PH_EXITING, /* done reported; exit keys typed; hang up at hangup_at */
	PH_OVER,    /* nothing more to do */
};

struct re {
	regex_t re;
	bool set;
};

struct ptydrive {
	const struct ptydrive_conf *conf;
	VTerm *vt;
	VTermScreen *scr;
	int rows, cols;
	struct re ready, working, done;
	struct re ignore[PTYDRIVE_MAX_IGNORE];
	struct re perm[PTYDRIVE_MAX_PERMS];
	bool perm_up[PTYDRIVE_MAX_PERMS];
	unsigned answers;
	char *prompt;
	bool allow;
	enum phase phase;
	char *screen;	     /* the screen's text at the last step */
	uint64_t changed_ms; /* when it last changed */
	bool changed_since_submit;
	uint64_t submit_at, submitted_ms, hangup_at, last_step_ms;
	struct sbuf baseline;	 /* every row seen before the submit, '\n' after each */
	uint64_t exit_submit_at; /* the exit keys typed: their submit key due then */
	struct sbuf scroll;	 /* rows scrolled off since the submit, '\n' after each */
	struct sbuf replies;	 /* the emulator's answers to the program's queries */
	const char *status;	 /* the last status reported */
};

/* ---- patterns ---- */

static int rx_compile(struct re *r, const char *pat, const char *key, struct diag *reterr)
{
	int e;

	if (!pat)
		return 0;
	e = regcomp(&r->re, pat, REG_EXTENDED | REG_NOSUB | REG_NEWLINE);
	if (e != 0) {
		char msg[160];

		(void)regerror(e, &r->re, msg, sizeof(msg));
		diag_set(reterr, NULL, 0, 0, "runtime.pty.%s: invalid pattern: %s", key, msg);
		return -EINVAL;
	}
	r->set = true;
	return 0;
}

static void rx_free(struct re *r)
{
	if (r->set)
		regfree(&r->re);
	r->set = false;
}

static bool rx_match(const struct re *r, const char *s)
{
	return r->set && regexec(&r->re, s, 0, NULL, 0) == 0;
}

static void res_free(struct ptydrive *d)
{
	size_t i;

	rx_free(&d->ready);
	rx_free(&d->working);
	rx_free(&d->done);
	for (i = 0; i < PTYDRIVE_MAX_IGNORE; i++)
		rx_free(&d->ignore[i]);
	for (i = 0; i < PTYDRIVE_MAX_PERMS; i++)
		rx_free(&d->perm[i]);
}

static int res_compile(struct ptydrive *d, const struct ptydrive_conf *c, struct diag *reterr)
{
	char key[48];
	size_t i;
	int r;

	if ((r = rx_compile(&d->ready, c->ready, "ready", reterr)) < 0 ||
	    (r = rx_compile(&d->working, c->working, "working", reterr)) < 0 ||
	    (r = rx_compile(&d->done, c->done, "done", reterr)) < 0)
		return r;
	for (i = 0; i < c->n_ignore && i < PTYDRIVE_MAX_IGNORE; i++) {
		(void)snprintf(key, sizeof(key), "ignore[%zu]", i);
		if ((r = rx_compile(&d->ignore[i], c->ignore[i], key, reterr)) < 0)
			return r;
	}
	for (i = 0; i < c->n_perms && i < PTYDRIVE_MAX_PERMS; i++) {
		(void)snprintf(key, sizeof(key), "permission[%zu].pattern", i);
		if ((r = rx_compile(&d->perm[i], c->perms[i].pattern, key, reterr)) < 0)
			return r;
	}
	return 0;
}

int ptydrive_conf_check(const struct ptydrive_conf *conf, struct diag *reterr)
{
	struct ptydrive d;
	int r;

	memset(&d, 0, sizeof(d));
	r = res_compile(&d, conf, reterr);
	res_free(&d);
	return r;
}

void ptydrive_rows_cols(const struct ptydrive_conf *conf, unsigned *rows, unsigned *cols)
{
	*rows = conf && conf->rows ? conf->rows : PTYDRIVE_DEFAULT_ROWS;
	*cols = conf && conf->cols ? conf->cols : PTYDRIVE_DEFAULT_COLS;
}

/* ---- the screen as text ---- */

static void add_utf8(struct sbuf *sb, uint32_t c)
{
	char b[4];
	size_t n;

	/* never a control character (the emulator consumed those), never an
	 * invalid code point */
	if (c < 0x20 || (c >= 0x7f && c < 0xa0) || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = ' ';
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	(void)sbuf_add(sb, b, n);
}

static void add_cell(struct sbuf *sb, const VTermScreenCell *cell)
{
	int k;

	if (cell->chars[0] == (uint32_t)-1)
		return; /* the right half of a wide character */
	if (cell->chars[0] == 0) {
		(void)sbuf_addc(sb, ' ');
		return;
	}
	for (k = 0; k < VTERM_MAX_CHARS_PER_CELL && cell->chars[k]; k++)
		add_utf8(sb, cell->chars[k]);
}

static void rtrim_row(struct sbuf *sb, size_t row_start)
{
	while (sb->len > row_start && sb->buf[sb->len - 1] == ' ')
		sbuf_setlen(sb, sb->len - 1);
}

char *ptydrive_screen_text(struct ptydrive *d)
{
	struct sbuf sb;
	VTermScreenCell cell;
	VTermPos pos;
	size_t start;

	sbuf_init(&sb, SIZE_MAX);
	for (pos.row = 0; pos.row < d->rows; pos.row++) {
		start = sb.len;
		for (pos.col = 0; pos.col < d->cols; pos.col++) {
			if (!vterm_screen_get_cell(d->scr, pos, &cell))
				continue;
			add_cell(&sb, &cell);
		}
		rtrim_row(&sb, start);
		(void)sbuf_addc(&sb, '\n');
	}
	/* no trailing empty rows */
	while (sb.len && sb.buf[sb.len - 1] == '\n')
		sbuf_setlen(&sb, sb.len - 1);
	return sbuf_detach(&sb, NULL);
}

/* libvterm: a row scrolled off the top; kept once the prompt is submitted,
 * so a message longer than the screen is not lost. */
static int on_pushline(int cols, const VTermScreenCell *cells, void *user)
{
	struct ptydrive *d = user;
	size_t start = d->scroll.len;
	int i;

	if (d->phase != PH_RUNNING || d->scroll.len >= PTYDRIVE_TEXT_MAX * 2)
		return 1;
	for (i = 0; i < cols; i++)
		add_cell(&d->scroll, &cells[i]);
	rtrim_row(&d->scroll, start);
	(void)sbuf_addc(&d->scroll, '\n');
	return 1;
}

static void on_output(const char *s, size_t len, void *user)
{
	struct ptydrive *d = user;

	if (d->replies.len + len <= REPLY_MAX)
		(void)sbuf_add(&d->replies, s, len);
}

static const VTermScreenCallbacks screen_cbs = {.sb_pushline = on_pushline};

/* Queries libvterm leaves unanswered that TUIs wait for: the default colours
 * (OSC 10 and 11 with "?"; gemini asks for the background at start-up). A
 * dark terminal: white on black. */
static int on_osc(const char *command, size_t len, void *user)
{
	static const char bg[] = "\033]11;rgb:0000/0000/0000\033\\";
	static const char fg[] = "\033]10;rgb:ffff/ffff/ffff\033\\";
	struct ptydrive *d = user;

	if (len == 4 && memcmp(command, "11;?", 4) == 0)
		on_output(bg, sizeof(bg) - 1, d);
	else if (len == 4 && memcmp(command, "10;?", 4) == 0)
		on_output(fg, sizeof(fg) - 1, d);
	return 0; /* not handled: libvterm goes on as before */
}

static const VTermParserCallbacks fallback_cbs = {.osc = on_osc};

/* ---- life ---- */

int ptydrive_new(const struct ptydrive_conf *conf, const char *prompt, bool allow, uint64_t now,
		 struct ptydrive **ret, struct diag *reterr)
{
	struct ptydrive *d = xcalloc(1, sizeof(*d));
	unsigned rows, cols;
	int r;

	d->conf = conf;
	ptydrive_rows_cols(conf, &rows, &cols);
	d->rows = (int)rows;
	d->cols = (int)cols;
	sbuf_init(&d->scroll, PTYDRIVE_TEXT_MAX * 2 + 4096);
	sbuf_init(&d->replies, REPLY_MAX);
	sbuf_init(&d->baseline, BASELINE_MAX);
	r = res_compile(d, conf, reterr);
	if (r < 0) {
		ptydrive_free(d);
		return r;
	}
	d->vt = vterm_new(d->rows, d->cols);
	if (!d->vt)
		abort(); /* out of memory */
	vterm_set_utf8(d->vt, 1);
	vterm_output_set_callback(d->vt, on_output, d);
	vterm_state_set_unrecognised_fallbacks(vterm_obtain_state(d->vt), &fallback_cbs, d);
	d->scr = vterm_obtain_screen(d->vt);
	vterm_screen_set_callbacks(d->scr, &screen_cbs, d);
	vterm_screen_enable_altscreen(d->scr, 1);
	vterm_screen_reset(d->scr, 1);
	d->prompt = xstrdup(prompt ? prompt : "");
	d->allow = allow;
	d->changed_ms = now;
	d->last_step_ms = now;
	*ret = d;
	return 0;
}

struct ptydrive *ptydrive_free(struct ptydrive *d)
{
	if (!d)
		return NULL;
	if (d->vt)
		vterm_free(d->vt);
	res_free(d);
	free(d->prompt);
	free(d->screen);
	sbuf_release(&d->baseline);
	sbuf_release(&d->scroll);
	sbuf_release(&d->replies);
	free(d);
	return NULL;
}

void ptydrive_feed(struct ptydrive *d, const char *buf, size_t n)
{
	if (d->phase != PH_OVER && n)
		(void)vterm_input_write(d->vt, buf, n);
}

uint64_t ptydrive_next_ms(const struct ptydrive *d)
{
	if (d->phase == PH_OVER)
		return 0;
	return d->last_step_ms + PTYDRIVE_POLL_MS;
}

/* ---- reports ---- */

static void report(struct sbuf *lines, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;

	if (s) {
		(void)sbuf_adds(lines, s);
		(void)sbuf_addc(lines, '\n');
	}
	free(s);
	json_decref(o);
}

static void set_status(struct ptydrive *d, struct sbuf *lines, const char *status)
{
	if (d->status && strcmp(d->status, status) == 0)
		return;
	d->status = status;
	report(lines, json_pack("{s:s,s:s}", "pty", "status", "status", status));
}

/* ---- the message: the screen diff since the submit ---- */

static bool has_word_char(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z'))
			return true;
	return false;
}

/* Does baseline hold row (n bytes) as a whole row? */
static bool in_rows(const char *rows, const char *row, size_t n)
{
	const char *p = rows;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len == n && memcmp(p, row, n) == 0)
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* The row, stripped of the decoration around it, is a piece of the prompt
 * (the TUI echoing what was typed, wrapped to the screen). */
static bool prompt_echo(const struct ptydrive *d, const char *row, size_t n)
{
	size_t a = 0, b = n;
	char *piece;
	bool echo;

	while (a < b && !has_word_char(row + a, 1))
		a++;
	while (b > a && !has_word_char(row + b - 1, 1) && row[b - 1] != '.' && row[b - 1] != '?')
		b--;
	if (!d->prompt[0] || b < a + 3)
		return false;
	piece = xstrndup(row + a, b - a);
	echo = strstr(d->prompt, piece) != NULL;
	free(piece);
	return echo;
}

static bool chrome(const struct ptydrive *d, const char *row)
{
	size_t i;

	if (rx_match(&d->ready, row) || rx_match(&d->working, row) || rx_match(&d->done, row))
		return true;
	for (i = 0; i < PTYDRIVE_MAX_IGNORE; i++)
		if (rx_match(&d->ignore[i], row))
			return true;
	for (i = 0; i < PTYDRIVE_MAX_PERMS; i++)
		if (rx_match(&d->perm[i], row))
			return true;
	return false;
}

static void diff_rows(const struct ptydrive *d, const char *rows, struct sbuf *out)
{
	const char *p = rows;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *row = xstrndup(p, len);

		if (has_word_char(row, len) && !in_rows(d->baseline.buf, row, len) &&
		    !chrome(d, row) && !prompt_echo(d, row, len) &&
		    out->len + len + 1 <= PTYDRIVE_TEXT_MAX) {
			if (out->len)
				(void)sbuf_addc(out, '\n');
			(void)sbuf_add(out, row, len);
		}
		free(row);
		p = nl ? nl + 1 : NULL;
	}
}

/* Add the screen's rows to the baseline (the TUI's banner, tips and
 * whatever a redraw shows before the prompt is submitted are not its answer). */
static void remember_rows(struct ptydrive *d)
{
	const char *p = d->screen;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len && !in_rows(d->baseline.buf, p, len) &&
		    d->baseline.len + len + 1 <= BASELINE_MAX) {
			(void)sbuf_add(&d->baseline, p, len);
			(void)sbuf_addc(&d->baseline, '\n');
		}
		p = nl ? nl + 1 : NULL;
	}
}

static void report_message(struct ptydrive *d, struct sbuf *lines)
{
	struct sbuf msg;

	if (!d->submitted_ms)
		sbuf_reset(&d->baseline); /* it never got the prompt: all it showed */
	sbuf_init(&msg, PTYDRIVE_TEXT_MAX);
	diff_rows(d, d->scroll.buf, &msg);
	diff_rows(d, d->screen, &msg);
	if (msg.len)
		report(lines, json_pack("{s:s,s:s%}", "pty", "text", "text", msg.buf, msg.len));
	sbuf_release(&msg);
}

/* ---- the step ---- */

static void type(struct sbuf *keys, const char *s)
{
	if (s)
		(void)sbuf_adds(keys, s);
}

/* The first row of the screen that matches r, or "". */
static char *matching_row(const struct ptydrive *d, const struct re *r)
{
	const char *p = d->screen;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *row = xstrndup(p, len);

		if (rx_match(r, row))
			return row;
		free(row);
		p = nl ? nl + 1 : NULL;
	}
	return xstrdup("");
}

/* Answer the permission prompts on the screen; true when one is up. */
static bool permissions(struct ptydrive *d, struct sbuf *lines, struct sbuf *keys)
{
	bool up = false;
	size_t i;

	for (i = 0; i < PTYDRIVE_MAX_PERMS; i++) {
		const struct ptydrive_perm *pp = &d->conf->perms[i];
		char *row;

		if (!d->perm[i].set)
			continue;
		if (!rx_match(&d->perm[i], d->screen)) {
			d->perm_up[i] = false;
			continue;
		}
		up = true;
		if (d->perm_up[i])
			continue; /* answered already; waiting for it to go */
		d->perm_up[i] = true;
		set_status(d, lines, "permission");
		if (d->answers >= PTYDRIVE_MAX_ANSWERS)
			continue;
		d->answers++;
		row = matching_row(d, &d->perm[i]);
		report(lines, json_pack("{s:s,s:s,s:s}", "pty", "permission", "prompt", row,
					"answer", d->allow ? "allow" : "deny"));
		free(row);
		type(keys, d->allow ? pp->allow : pp->deny);
	}
	return up;
}

static uint64_t submit_delay(const struct ptydrive_conf *c)
{
	return c->submit_delay_ms ? c->submit_delay_ms : PTYDRIVE_DEFAULT_SUBMIT_DELAY_MS;
}

static void finish(struct ptydrive *d, uint64_t now, const char *by, struct sbuf *lines,
		   struct sbuf *keys)
{
	report_message(d, lines);
	report(lines, json_pack("{s:s,s:b,s:s}", "pty", "result", "ok", 1, "by", by));
	set_status(d, lines, "done");
	d->phase = PH_EXITING;
	d->hangup_at = now;
	if (!d->conf->exit_keys)
		return;
	/* typed like the prompt: the text, then the submit key a while later
	 * (a TUI may take keys that come at once for a paste) */
	type(keys, d->conf->exit_keys);
	d->exit_submit_at = now + submit_delay(d->conf);
	d->hangup_at = d->exit_submit_at +
		       (d->conf->exit_wait_ms ? d->conf->exit_wait_ms : PTYDRIVE_DEFAULT_EXIT_MS);
}

/* Before the submit: type the prompt once the agent is ready, then its
 * submit key. */
static void step_prompt(struct ptydrive *d, uint64_t now, struct sbuf *lines, struct sbuf *keys)
{
	const struct ptydrive_conf *c = d->conf;

	if (d->phase == PH_BOOT) {
		if (d->ready.set ? !rx_match(&d->ready, d->screen)
				 : now - d->changed_ms < SETTLE_MS || !d->screen[0])
			return;
		set_status(d, lines, "ready");
		if (c->paste)
			type(keys, "\033[200~");
		type(keys, d->prompt);
		if (c->paste)
			type(keys, "\033[201~");
		d->submit_at = now + submit_delay(c);
		d->phase = PH_TYPED;
		return;
	}
	if (now < d->submit_at)
		return;
	type(keys, c->submit ? c->submit : "\r");
	d->submitted_ms = now;
	remember_rows(d);
	d->phase = PH_RUNNING;
	set_status(d, lines, "working");
}

/* After the submit: working, or done (the done pattern, or a still screen). */
static void step_running(struct ptydrive *d, uint64_t now, struct sbuf *lines, struct sbuf *keys)
{
	const struct ptydrive_conf *c = d->conf;
	uint64_t idle = c->idle_done_ms ? c->idle_done_ms : PTYDRIVE_DEFAULT_IDLE_MS;
	bool working = rx_match(&d->working, d->screen);

	if (working || d->status == NULL || strcmp(d->status, "permission") == 0)
		set_status(d, lines, "working");
	if (!d->changed_since_submit || working)
		return;
	if (d->done.set && rx_match(&d->done, d->screen)) {
		finish(d, now, "done", lines, keys);
		return;
	}
	if (now - d->changed_ms >= idle && now - d->submitted_ms >= idle &&
	    (!d->ready.set || rx_match(&d->ready, d->screen)))
		finish(d, now, "idle", lines, keys);
}

enum ptydrive_action ptydrive_step(struct ptydrive *d, uint64_t now, struct sbuf *lines,
				   struct sbuf *keys)
{
	const struct ptydrive_conf *c = d->conf;
	bool perm;
	char *text;

	d->last_step_ms = now;
	if (d->replies.len) {
		(void)sbuf_add(keys, d->replies.buf, d->replies.len);
		sbuf_reset(&d->replies);
	}
	if (d->phase == PH_OVER)
		return PTYDRIVE_NONE;
	text = ptydrive_screen_text(d);
	if (!d->screen || strcmp(text, d->screen) != 0) {
		free(d->screen);
		d->screen = text;
		d->changed_ms = now;
		if (d->phase == PH_RUNNING)
			d->changed_since_submit = true;
	} else {
		free(text);
	}
	if (d->phase == PH_EXITING) {
		if (d->exit_submit_at && now >= d->exit_submit_at) {
			type(keys, c->submit ? c->submit : "\r");
			d->exit_submit_at = 0;
		}
		if (now < d->hangup_at)
			return PTYDRIVE_NONE;
		d->phase = PH_OVER;
		return PTYDRIVE_HANGUP;
	}

	perm = permissions(d, lines, keys);
	if (d->phase < PH_RUNNING && d->changed_ms == now)
		remember_rows(d);
	if (perm)
		return PTYDRIVE_NONE;
	if (d->phase < PH_RUNNING)
		step_prompt(d, now, lines, keys);
	else if (d->phase == PH_RUNNING)
		step_running(d, now, lines, keys);
	return PTYDRIVE_NONE;
}

void ptydrive_eof(struct ptydrive *d, uint64_t now, struct sbuf *lines)
{
	char *text;

	if (d->phase == PH_OVER && d->status && strcmp(d->status, "exited") == 0)
		return;
	text = ptydrive_screen_text(d);
	free(d->screen);
	d->screen = text;
	d->last_step_ms = now;
	/* the turn was not over: what the screen says (before the prompt:
	 * all of it, e.g. why the agent could not start) */
	if (d->phase <= PH_RUNNING)
		report_message(d, lines);
	set_status(d, lines, "exited");
	d->phase = PH_OVER;
}
