/* libvterm, loaded on first use (lazy.h): every function bernstein calls. */
#include <vterm.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define VTERM_FNS(F, V, H) \
	V(vterm_free, (VTerm *vt), (vt)) \
	F(size_t, vterm_input_write, (VTerm *vt, const char *bytes, size_t len), (vt, bytes, len)) \
	F(VTerm *, vterm_new, (int rows, int cols), (rows, cols)) \
	F(VTermScreen *, vterm_obtain_screen, (VTerm *vt), (vt)) \
	F(VTermState *, vterm_obtain_state, (VTerm *vt), (vt)) \
	V(vterm_output_set_callback, (VTerm *vt, VTermOutputCallback *fn, void *user), (vt, fn, user)) \
	V(vterm_screen_enable_altscreen, (VTermScreen *s, int on), (s, on)) \
	F(int, vterm_screen_get_cell, (const VTermScreen *s, VTermPos pos, VTermScreenCell *cell), (s, pos, cell)) \
	V(vterm_screen_reset, (VTermScreen *s, int hard), (s, hard)) \
	V(vterm_screen_set_callbacks, (VTermScreen *s, const VTermScreenCallbacks *cb, void *user), (s, cb, user)) \
	V(vterm_set_utf8, (VTerm *vt, int on), (vt, on)) \
	V(vterm_state_set_unrecognised_fallbacks, (VTermState *st, const VTermParserCallbacks *cb, void *user), (st, cb, user))
/* clang-format on */

LAZY_SHIM(LAZY_VTERM, VTERM_FNS)
