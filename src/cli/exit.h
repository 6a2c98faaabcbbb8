/* The exit-code table (docs/exit-codes.md). Only cli/ chooses exit codes. */
#ifndef BERNSTEIN_CLI_EXIT_H
#define BERNSTEIN_CLI_EXIT_H

enum bexit {
	BEXIT_OK = 0,		/* success */
	BEXIT_FAILED = 1,	/* finished, but something checked failed (a task, --strict) */
	BEXIT_USAGE = 2,	/* bad command line */
	BEXIT_INVALID = 3,	/* invalid profile, catalogue or config */
	BEXIT_ENV = 4,		/* environment: binary or git missing, state locked, I/O */
	BEXIT_AUDIT = 5,	/* audit verification failed */
	BEXIT_REFUSED = 6,	/* capability mismatch: no adapter fits the task; receipt printed */
	BEXIT_BUDGET = 7,	/* a run reached its budget's cap: tasks were left unstarted */
	BEXIT_BUG = 70,		/* internal bug */
	BEXIT_LIBRARY = 127,	/* a shared library the command needs cannot be loaded */
	BEXIT_INTERRUPTED = 130 /* SIGINT */
};

#endif
