/* Sandbox tiers: the mechanisms the spawn path applies from a declared
 * policy (docs/security.md, docs/runs.md "Sandboxed tasks").
 *
 * A tier is how one agent (and everything it starts) is confined:
 *   landlock   Landlock rules set in the agent's own process before its
 *              execve (proc/landlock.h): reads and executes only beneath
 *              the read-only paths, writes only beneath the read-write ones;
 *   bwrap      bubblewrap: every namespace of its own (user, mount, PID,
 *              network, IPC, UTS), a root that holds only the allowed
 *              paths (read-only binds, the read-write ones writable), a
 *              private /tmp, /dev and /proc, all capabilities dropped, then
 *              the same Landlock rules inside;
 *   container  an OCI runtime (crun, or runc) with a bundle bernstein
 *              writes: the allowed paths bound into an empty read-only
 *              root, its own namespaces, no capabilities.
 * The tiers are ordered by strength: none < landlock < bwrap < container.
 *
 * This module knows nothing of profiles or runs: it is given the lists. */
#ifndef BERNSTEIN_PROC_SANDBOX_H
#define BERNSTEIN_PROC_SANDBOX_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

enum sandbox_kind {
	SANDBOX_KIND_NONE,	/* "none": the agent runs as the user, unconfined */
	SANDBOX_KIND_LANDLOCK,	/* "landlock" */
	SANDBOX_KIND_BWRAP,	/* "bwrap" */
	SANDBOX_KIND_CONTAINER, /* "container" */
	_SANDBOX_KIND_MAX,
	_SANDBOX_KIND_INVALID = -EINVAL,
};

const char *sandbox_kind_to_string(enum sandbox_kind k);
enum sandbox_kind sandbox_kind_from_string(const char *s);

#endif
