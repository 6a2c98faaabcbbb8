/* Libraries loaded on first use. See lazy.h. */
#include "util/lazy.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "config.h"
#include "util/diag.h"
#include "util/banned.h"

#ifndef LAZY_SONAME_SQLITE
#define LAZY_SONAME_SQLITE NULL
#endif
#ifndef LAZY_SONAME_CRYPTO
#define LAZY_SONAME_CRYPTO NULL
#endif
#ifndef LAZY_SONAME_VTERM
#define LAZY_SONAME_VTERM NULL
#endif
#ifndef LAZY_SONAME_YAML
#define LAZY_SONAME_YAML NULL
#endif
#ifndef LAZY_SONAME_SSL
#define LAZY_SONAME_SSL NULL
#endif
#ifndef LAZY_SONAME_JANSSON
#define LAZY_SONAME_JANSSON NULL
#endif

/* One per library, for the whole process: like the loader's own list of
 * loaded objects, this state cannot belong to a caller. */
struct lazy_lib {
	const char *what;   /* "SQLite", for the error */
	const char *soname; /* NULL: linked in, nothing to load */
	pthread_mutex_t lock;
	int state; /* under lock: 0 not tried, 1 loaded, -1 failed */
	void *handle;
	char why[400]; /* the failure, once state is -1 */
};

static struct lazy_lib arg_lazy_libs[_LAZY_ID_MAX] = {
	[LAZY_SQLITE] = {"SQLite", LAZY_SONAME_SQLITE, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
	[LAZY_CRYPTO] = {"libcrypto", LAZY_SONAME_CRYPTO, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
	[LAZY_VTERM] = {"libvterm", LAZY_SONAME_VTERM, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
	[LAZY_YAML] = {"libyaml", LAZY_SONAME_YAML, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
	[LAZY_SSL] = {"libssl", LAZY_SONAME_SSL, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
	[LAZY_JANSSON] = {"jansson", LAZY_SONAME_JANSSON, PTHREAD_MUTEX_INITIALIZER, 0, NULL, ""},
};

static _Atomic(lazy_fail_fn *) arg_lazy_fail;

void lazy_set_fail_handler(lazy_fail_fn *fn)
{
	atomic_store(&arg_lazy_fail, fn);
}

/* Under l->lock. */
static void copy_why(struct lazy_lib *l, const char *msg)
{
	size_t i;

	for (i = 0; msg && msg[i] && i + 1 < sizeof(l->why); i++)
		l->why[i] = msg[i];
	l->why[i] = '\0';
}

/* Under l->lock: dlopen once. */
static int open_locked(struct lazy_lib *l)
{
	if (l->state == 0) {
		(void)dlerror();
		l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
		if (l->handle) {
			l->state = 1;
		} else {
			const char *e = dlerror();

			copy_why(l, e ? e : "dlopen failed");
			l->state = -1;
		}
	}
	return l->state > 0 ? 0 : -ELIBACC;
}

int lazy_load(enum lazy_id id, struct diag *reterr)
{
	struct lazy_lib *l;
	int r;

	if ((unsigned)id >= _LAZY_ID_MAX)
		return -EINVAL;
	l = &arg_lazy_libs[id];
	if (!l->soname)
		return 0;
	(void)pthread_mutex_lock(&l->lock);
	r = open_locked(l);
	if (r < 0)
		diag_set(reterr, "", 0, 0, "cannot load %s (%s): %s", l->what, l->soname, l->why);
	(void)pthread_mutex_unlock(&l->lock);
	return r;
}

int lazy_load_all(struct diag *reterr)
{
	int id, r;

	for (id = 0; id < _LAZY_ID_MAX; id++) {
		r = lazy_load((enum lazy_id)id, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

static _Noreturn void fail(const struct lazy_lib *l)
{
	lazy_fail_fn *fn = atomic_load(&arg_lazy_fail);

	if (fn)
		fn(l->what, l->soname, l->why);
	abort();
}

void lazy_resolve(enum lazy_id id, const char *const *names, void **slots, unsigned n)
{
	struct lazy_lib *l;
	unsigned i;

	if ((unsigned)id >= _LAZY_ID_MAX)
		abort();
	l = &arg_lazy_libs[id];
	(void)pthread_mutex_lock(&l->lock);
	if (!l->soname) {
		copy_why(l, "not built to be loaded lazily");
		l->state = -1;
	}
	if (open_locked(l) < 0)
		goto failed;
	for (i = 0; i < n; i++) {
		if (slots[i])
			continue; /* resolved by an earlier call */
		(void)dlerror();
		slots[i] = dlsym(l->handle, names[i]);
		if (!slots[i]) {
			const char *e = dlerror();

			copy_why(l, e ? e : names[i]);
			goto failed;
		}
	}
	(void)pthread_mutex_unlock(&l->lock);
	return;
failed:
	(void)pthread_mutex_unlock(&l->lock);
	fail(l);
}
