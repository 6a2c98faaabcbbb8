/* libyaml, loaded on first use (lazy.h): every function bernstein calls. */
#include <yaml.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define YAML_FNS(F, V, H) \
	V(yaml_event_delete, (yaml_event_t *ev), (ev)) \
	V(yaml_parser_delete, (yaml_parser_t *p), (p)) \
	F(int, yaml_parser_initialize, (yaml_parser_t *p), (p)) \
	F(int, yaml_parser_parse, (yaml_parser_t *p, yaml_event_t *ev), (p, ev)) \
	V(yaml_parser_set_encoding, (yaml_parser_t *p, yaml_encoding_t enc), (p, enc)) \
	V(yaml_parser_set_input_string, (yaml_parser_t *p, const unsigned char *in, size_t n), (p, in, n))
/* clang-format on */

LAZY_SHIM(LAZY_YAML, YAML_FNS)
