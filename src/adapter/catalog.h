/* The adapter catalogue: which adapters exist (capability profiles,
 * profiles/NAME.yaml, and registry.yaml for adapters without a profile), the
 * strategy each declares on the five axes (strategy-matrix.yaml), which may
 * take images (multimodal.yaml) and the copy of `bernstein integrations list`
 * (use-cases.yaml).
 *
 * Layers, lowest precedence first: the files embedded in the binary at build
 * time (catalog/ of the source tree), then a user directory, then a repository
 * directory (the CLI passes $XDG_CONFIG_HOME/bernstein/catalog,
 * <repo>/bernstein/catalog and <repo>/.bernstein/catalog; nothing here
 * reads the environment). In each
 * directory every file is optional. A row in a higher layer replaces the
 * whole row of the same name in a lower one (a profile may replace a registry
 * entry and the other way round); new names are added. Within one layer a
 * name may have a profile or a registry.yaml entry, not both. Every row
 * remembers the file and line it came from.
 *
 * Loading is strict (util/yaml.h): unknown keys, duplicate keys, aliases,
 * wrong types and unknown axis values are errors with FILE:LINE:COL. Nothing
 * here runs or looks up a binary: strategy is declared, never probed. */
#ifndef BERNSTEIN_ADAPTER_CATALOG_H
#define BERNSTEIN_ADAPTER_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "adapter/axes.h"
#include "util/arena.h"
#include "util/diag.h"
#include "util/strvec.h"

struct ydoc;
struct ynode;
struct profile;
struct diag_list;
struct contract_index;
struct strategy_resolved;
struct pricing_row;

#define CATALOG_MATRIX_FILE	"strategy-matrix.yaml"
#define CATALOG_REGISTRY_FILE	"registry.yaml"
#define CATALOG_MULTIMODAL_FILE "multimodal.yaml"
#define CATALOG_USE_CASES_FILE	"use-cases.yaml"
#define CATALOG_PRICING_FILE	"pricing.yaml" /* adapter/pricing.h */
#define CATALOG_ROLES_FILE	"roles.yaml"   /* the roles' prompt preambles */
/* Prefix of the diagnostic name of embedded files: "<embedded>/registry.yaml". */
#define CATALOG_EMBEDDED_PREFIX "<embedded>/"
/* Largest catalogue file accepted. */
#define CATALOG_MAX_FILE_BYTES (1024 * 1024)
/* Adapter names: [a-z0-9][a-z0-9_-]*, at most this many bytes. */
#define CATALOG_MAX_NAME 64

/* One file of catalog/ compiled into the binary (scripts/embed-catalog.py).
 * name is relative to catalog/ ("strategy-matrix.yaml", "profiles/x.yaml");
 * data is NUL-terminated, len excludes the NUL. The table ends with a NULL
 * name. */
struct catalog_file {
	const char *name;
	const unsigned char *data;
	size_t len;
};
extern const struct catalog_file catalog_embedded[];
extern const size_t catalog_embedded_count;
/* The embedded file called name, or NULL. */
const struct catalog_file *catalog_embedded_find(const char *name);

/* The same YAML files but the profiles (static data, below) already loaded,
 * compiled in at build time (scripts/catalog-compile.c loads each with
 * util/yaml.c and writes its tree without pointers, util/ycompiled.h):
 * catalog_add_embedded() turns each table into a struct ydoc in one linear
 * pass and hands it to the same schema code that reads a parsed file,
 * without running libyaml. name as in
 * catalog_embedded[]; the file's nodes are catalog_compiled_data's
 * [first, first + count). Sorted by name, ending with a NULL name. */
struct ycompiled;
struct ydoc;
struct catalog_tree {
	const char *name;
	size_t first, count;
};
extern const struct catalog_tree catalog_compiled[];
extern const struct ycompiled catalog_compiled_data;
/* The compiled tree of the embedded file called name, or NULL. */
const struct catalog_tree *catalog_compiled_find(const char *name);
/* The embedded file t as a document (ydoc_free() it), named
 * CATALOG_EMBEDDED_PREFIX + t->name in diagnostics. */
int catalog_compiled_doc(const struct catalog_tree *t, struct ydoc **ret, struct diag *reterr);

/* The embedded profiles (catalog/profiles/NAME.yaml) as static data, in
 * file name order, ending with NULL: written at build time by
 * scripts/catalog-static.c, which loads the embedded catalogue through the
 * full checking path (catalog_add_embedded_parsed()) and writes each
 * profile as a C initialiser (adapter/catalog-cgen.h), hash and canonical
 * bytes included. catalog_add_embedded() uses them as they are: no
 * document, no parse, nothing allocated or freed. The catalogue never owns
 * them (struct catalog's profiles[] holds only the loaded ones). The
 * generator itself links an empty table (catalog-static-empty.c). */
extern const struct profile *const catalog_static_profiles[];

/* Where a value was declared. file lives as long as the catalogue. */
struct catalog_origin {
	const char *file;
	unsigned line, col;
};

/* A strategy declaration: a matrix row or an inline strategy: block.
 * resume, dangerous_mode and event_channel are required; output_mode and
 * session_state default to git-diff and stateless. */
struct strategy_decl {
	struct adapter_strategy strategy;
	bool axis_declared[_AXIS_MAX];		      /* the key was present */
	struct catalog_origin axis_origin[_AXIS_MAX]; /* its value, when declared */
	struct catalog_origin origin;		      /* the row itself (its key) */
	const char *note;			      /* prose, or NULL */
};

struct matrix_row {
	const char *name;
	struct strategy_decl decl;
};

struct registry_entry {
	const char *name;
	const char *display_name;
	const char *binary;		      /* NULL when builtin */
	const char *const *version_args;      /* NULL-terminated, never NULL ({"--version"}) */
	bool builtin;			      /* served by bernstein itself, nothing to probe */
	const struct strategy_decl *strategy; /* the inline override, or NULL */
	struct catalog_origin origin;	      /* for a profile: its name: key */
	const struct profile *profile;	      /* built from this profile, or NULL */
	unsigned layer;			      /* 0 embedded, then one per directory */
};

/* multimodal.yaml: adapters: {NAME: true|false}. true grants image input. */
struct multimodal_row {
	const char *name;
	bool vision;
	struct catalog_origin origin;
};

/* use-cases.yaml: agents: {NAME: {summary: ..., install: ...}}. */
struct use_case {
	const char *name;
	const char *summary; /* what the agent is good for */
	const char *install; /* how to install it */
	struct catalog_origin origin;
};

/* roles.yaml: roles: {NAME: {preamble: ...}}: the short text a task of the
 * role is introduced with in its rendered prompt (orch/context.h). */
struct role_preamble {
	const char *name;
	const char *preamble;
	struct catalog_origin origin;
};

/* The embedded tables but the prices (registry.yaml, strategy-matrix.yaml,
 * multimodal.yaml, use-cases.yaml, roles.yaml) as static data, written at
 * build time with the profiles (catalog_static_profiles[] above) from the
 * same catalogue loaded through every check: what
 * catalog_add_embedded() merges in without a document. rows and entries
 * sorted by name (registry.yaml's entries only: a profile's entry is made
 * from the profile), the others in file order. Empty in the generator. */
struct catalog_static_tables {
	const struct matrix_row *const *rows;
	size_t n_rows;
	const struct registry_entry *const *entries;
	size_t n_entries;
	const struct multimodal_row *const *multimodal;
	size_t n_multimodal;
	const struct use_case *const *use_cases;
	size_t n_use_cases;
	const struct role_preamble *const *roles;
	size_t n_roles;
};
extern const struct catalog_static_tables catalog_static_tables;

enum catalog_kind {
	CATALOG_KIND_MATRIX,
	CATALOG_KIND_REGISTRY,
	CATALOG_KIND_MULTIMODAL,
	CATALOG_KIND_USE_CASES,
	CATALOG_KIND_PRICING, /* pricing.yaml: models, not adapters (adapter/pricing.h) */
	CATALOG_KIND_ROLES,   /* roles.yaml: roles, not adapters */
	_CATALOG_KIND_MAX,
	_CATALOG_KIND_INVALID = -EINVAL,
};

/* Rows and entries are kept sorted by name. Everything they point to lives
 * in the arena. */
struct catalog {
	struct arena arena;
	const struct matrix_row **rows;
	size_t n_rows, alloc_rows;
	const struct registry_entry **entries;
	size_t n_entries, alloc_entries;
	const struct multimodal_row **multimodal; /* unsorted, one per name */
	size_t n_multimodal;
	const struct use_case **use_cases; /* unsorted, one per name */
	size_t n_use_cases;
	const struct pricing_row **pricing; /* unsorted, one per model (adapter/pricing.h) */
	size_t n_pricing;
	const struct role_preamble **roles; /* unsorted, one per role */
	size_t n_roles;
	/* every profile loaded, in use or replaced (owned); not the embedded
	 * ones, static data (catalog_static_profiles[]) */
	struct profile **profiles;
	size_t n_profiles;
	struct contract_index *contracts; /* set by catalog_validate() (owned) */
	unsigned layer;			  /* the layer files are being added to */
	bool overridden;		  /* a user or repo directory contributed a file */
	/* The embedded pricing.yaml is parsed on first use (no command but
	 * those that price an attempt needs it): until then pricing[] holds
	 * the rows of the override layers only. Read the table through
	 * catalog_pricing() or catalog_pricing_rows(). */
	bool pricing_pending;
	unsigned pricing_layer; /* the embedded pricing's layer */
};

/* An empty catalogue. Never NULL. */
struct catalog *catalog_new(void);
struct catalog *catalog_free(struct catalog *cat);

/* Parse one file of the given kind from memory (name is used in diagnostics
 * and origins) and merge its rows over the catalogue's. On error the
 * catalogue is unchanged: -EINVAL (bad content) or -EFBIG (too large). */
int catalog_add_buf(struct catalog *cat, enum catalog_kind kind, const char *name, const char *buf,
		    size_t len, struct diag *reterr);
/* Same, from a file. -ENOENT (no diag) when the file does not exist. */
int catalog_add_file(struct catalog *cat, enum catalog_kind kind, const char *path,
		     struct diag *reterr);
/* Load a capability profile (adapter/profile.h, gate 1 without the strategy
 * rules) from memory and make it the registry entry of its name. source
 * names the file; stem is the file's stem ('name:' must equal it). */
int catalog_add_profile_buf(struct catalog *cat, const char *stem, const char *source,
			    const char *buf, size_t len, struct diag *reterr);
/* The same from a file, DIR/profiles/NAME.yaml. */
int catalog_add_profile_file(struct catalog *cat, const char *path, struct diag *reterr);
/* The embedded registry.yaml, strategy-matrix.yaml (both required),
 * multimodal.yaml, use-cases.yaml, roles.yaml (pricing.yaml on first use)
 * and profiles/NAME.yaml (catalog_static_profiles[]), in the current
 * layer. */
int catalog_add_embedded(struct catalog *cat, struct diag *reterr);
/* The same, parsing the embedded YAML bytes with libyaml instead of using
 * the compiled trees: what catalog_add_embedded() did before the trees
 * existed, kept for the test that both give the same catalogue
 * (tests/unit/test-catalog-compiled.c). */
int catalog_add_embedded_parsed(struct catalog *cat, struct diag *reterr);
/* A new layer: DIR/registry.yaml, DIR/strategy-matrix.yaml,
 * DIR/multimodal.yaml, DIR/use-cases.yaml, then DIR/profiles/NAME.yaml in
 * name order, each if it exists. dir NULL, or a directory that does not
 * exist, adds nothing. */
int catalog_add_dir(struct catalog *cat, const char *dir, struct diag *reterr);
/* The gates that need the whole catalogue, for every profile in use (see
 * catalog_check_profile()); the contracts are embedded < user_dir <
 * repo_dir. Reports the first problem (with the number of others). */
int catalog_validate(struct catalog *cat, const char *user_dir, const char *repo_dir,
		     struct diag *reterr);
/* embedded < user_dir < repo_dir (either may be NULL), then
 * catalog_validate(). */
int catalog_load(const char *user_dir, const char *repo_dir, struct catalog **ret,
		 struct diag *reterr);
/* The same with any number of override directories: dirs is
 * NULL-terminated (NULL: none), in ascending precedence, each one's layer
 * over the ones before (the CLI's order: docs/profile-format.md,
 * "Catalogue overrides"). */
int catalog_load_dirs(const char *const *dirs, struct catalog **ret, struct diag *reterr);
int catalog_validate_dirs(struct catalog *cat, const char *const *dirs, struct diag *reterr);

enum catalog_check_flags {
	/* also gate 3's declaration requirement and the registry conflict, for
	 * a profile that is not (yet) part of the catalogue */
	CATALOG_CHECK_STANDALONE = 1 << 0,
};
/* Check profile p against the catalogue: gate 1's strategy rules (against
 * its inline strategy, else its matrix row, else the default), the vision
 * grant of multimodal.yaml, gate 2 (the contract named by p->contract; a
 * 'contract:' naming no contract is an error, an absent contract for the
 * default name leaves the profile unbacked) and, with
 * CATALOG_CHECK_STANDALONE, a strategy-matrix row for its name and no
 * registry.yaml entry of the same name in the layer it would join.
 * Contracts come from cat->contracts (the embedded ones when NULL). Appends
 * every problem to *ret and returns their number. */
size_t catalog_check_profile(const struct catalog *cat, const struct profile *p,
			     enum catalog_check_flags flags, struct diag_list *ret);
/* Resolve p's strategy as the catalogue would (its inline block, else the
 * matrix row of its name, else the default; adapter/strategy.h). Returns the
 * enum strategy_source. */
int catalog_profile_strategy(const struct catalog *cat, const struct profile *p,
			     struct strategy_resolved *ret);

/* The file kind for a base name ("registry.yaml"), or -EINVAL. */
enum catalog_kind catalog_kind_from_name(const char *basename);

const struct registry_entry *catalog_find(const struct catalog *cat, const char *name);
const struct matrix_row *catalog_matrix_find(const struct catalog *cat, const char *name);
/* multimodal.yaml grants name image input. */
bool catalog_vision(const struct catalog *cat, const char *name);
/* name's use-cases.yaml entry, or NULL. */
const struct use_case *catalog_use_case(const struct catalog *cat, const char *name);
/* The preamble of a role (roles.yaml), or NULL. */
const char *catalog_role_preamble(const struct catalog *cat, const char *role);
/* The prices of model (pricing.h's lookup over every layer), or NULL:
 * unknown model, cost unknown. */
const struct pricing_row *catalog_pricing(const struct catalog *cat, const char *model);
/* Every pricing row of every layer (the table pricing_find() searches),
 * *ret_n of them. Both functions complete the table on first use (the
 * embedded rows under the override layers' ones, exactly as if parsed
 * first): the catalogue is logically const, not to be shared between
 * threads. */
const struct pricing_row *const *catalog_pricing_rows(const struct catalog *cat, size_t *ret_n);

/* Conformance (the seed's assert_strategies_declared): every named adapter
 * (names NULL-terminated, or NULL for every registry adapter) must have a
 * matrix row; an inline strategy: block alone does not count. Appends the
 * undeclared names, sorted, to *ret and returns their number. */
size_t catalog_undeclared(const struct catalog *cat, const char *const *names, struct strvec *ret);
#define CATALOG_UNDECLARED_MSG                                                                     \
	"adapters missing a strategy declaration in the strategy matrix "                          \
	"(resume / dangerous-mode / event-channel): "
/* 0, or -EINVAL with the message
 *   adapters missing a strategy declaration in the strategy matrix
 *   (resume / dangerous-mode / event-channel): a, b
 * (no file or line: the error is about the catalogue as a whole). A message
 * too long for a diag keeps whole names and ends ", ... (N more)". */
int catalog_check(const struct catalog *cat, const char *const *names, struct diag *reterr);

/* Parse a strategy block (a matrix row or an inline strategy: map) of doc
 * into *ret, strings in arena, origins naming file. what names the map in
 * messages. Also used by profile loaders for their own strategy: block. */
int catalog_parse_strategy(const struct ydoc *doc, const struct ynode *node, const char *what,
			   struct arena *arena, const char *file, struct strategy_decl *ret,
			   struct diag *reterr);

#endif
