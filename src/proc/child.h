/* What may run in the child of proc_spawn() between clone() and execve().
 *
 * proc_spawn() starts a process the way posix_spawn does: clone() with
 * CLONE_VM | CLONE_VFORK, the parent suspended until the child has called
 * execve or exited. Until then the child shares the parent's memory and its
 * thread pointer, so the code on that path may only make system calls and
 * touch its own stack and the arguments it was given: no malloc, no stdio,
 * no locks, nothing that uses the calling thread's id (raise, pthread_*),
 * no errno kept across calls (it is the parent's). Functions on that path are
 * marked VFORK_SAFE, which also keeps AddressSanitizer's stack instrumentation
 * out of them: the poisoning of frames that never return (the child execs)
 * would stay behind in the parent's address space. */
#ifndef BERNSTEIN_PROC_CHILD_H
#define BERNSTEIN_PROC_CHILD_H

#define VFORK_SAFE __attribute__((no_sanitize_address))

#endif
