/* The environment block a process starts with is what the kernel shows in
 * /proc/PID/environ (mm->env_start..env_end, the strings above the stack)
 * to anything allowed to read it: root, and while the process is dumpable,
 * every process of the same uid (the agents and gates it starts among them).
 * envscrub_take() moves the environment to the heap and zeroes that block in
 * place, so that file shows only NUL bytes from then on; making the process
 * non-dumpable (cli/) hides its memory, the heap copy included, from other
 * uids that lack CAP_SYS_PTRACE. */
#ifndef BERNSTEIN_UTIL_ENVSCRUB_H
#define BERNSTEIN_UTIL_ENVSCRUB_H

/* A copy of envp (NULL-terminated; NULL counts as empty) in one heap
 * allocation, the array and its strings together; then every byte of every
 * string envp points to is zeroed (explicit_bzero). envp's array itself is
 * left as it is: its pointers now point to empty strings. The caller makes
 * the copy the process environment (environ = copy) before anything else
 * reads a variable, and keeps it for the life of the process: getenv()
 * returns pointers into it. Free it with free() only if nothing can hold
 * such a pointer (tests). Never fails (OOM aborts). */
char **envscrub_take(char *const *envp);

#endif
