/* libssl (OpenSSL 3), loaded on first use (lazy.h): every function bernstein
 * calls (TLS on the Slurm executor's event connection, orch/remote-tls.h).
 * Its libcrypto functions are in lazy-crypto.c. */
#include <openssl/ssl.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define SSL_FNS(F, V, H) \
	F(int, SSL_CTX_check_private_key, (const SSL_CTX *ctx), (ctx)) \
	F(long, SSL_CTX_ctrl, (SSL_CTX *ctx, int cmd, long larg, void *parg), (ctx, cmd, larg, parg)) \
	V(SSL_CTX_free, (SSL_CTX *ctx), (ctx)) \
	F(void *, SSL_CTX_get_ex_data, (const SSL_CTX *ctx, int idx), (ctx, idx)) \
	F(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *meth), (meth)) \
	F(int, SSL_CTX_set_ex_data, (SSL_CTX *ctx, int idx, void *data), (ctx, idx, data)) \
	F(int, SSL_CTX_set_num_tickets, (SSL_CTX *ctx, size_t n), (ctx, n)) \
	V(SSL_CTX_set_verify, (SSL_CTX *ctx, int mode, SSL_verify_cb cb), (ctx, mode, cb)) \
	F(int, SSL_CTX_use_PrivateKey, (SSL_CTX *ctx, EVP_PKEY *pkey), (ctx, pkey)) \
	F(int, SSL_CTX_use_certificate, (SSL_CTX *ctx, X509 *x), (ctx, x)) \
	F(int, SSL_accept, (SSL *s), (s)) \
	F(int, SSL_connect, (SSL *s), (s)) \
	F(int, SSL_do_handshake, (SSL *s), (s)) \
	V(SSL_free, (SSL *s), (s)) \
	F(X509 *, SSL_get1_peer_certificate, (const SSL *s), (s)) \
	F(SSL_CTX *, SSL_get_SSL_CTX, (const SSL *s), (s)) \
	F(int, SSL_get_error, (const SSL *s, int ret), (s, ret)) \
	F(int, SSL_get_ex_data_X509_STORE_CTX_idx, (void), ()) \
	F(long, SSL_get_verify_result, (const SSL *s), (s)) \
	F(SSL *, SSL_new, (SSL_CTX *ctx), (ctx)) \
	F(int, SSL_pending, (const SSL *s), (s)) \
	F(int, SSL_read_ex, (SSL *s, void *buf, size_t num, size_t *got), (s, buf, num, got)) \
	V(SSL_set_accept_state, (SSL *s), (s)) \
	V(SSL_set_connect_state, (SSL *s), (s)) \
	F(int, SSL_set_fd, (SSL *s, int fd), (s, fd)) \
	F(int, SSL_write_ex, (SSL *s, const void *buf, size_t num, size_t *put), (s, buf, num, put)) \
	F(const SSL_METHOD *, TLS_client_method, (void), ()) \
	F(const SSL_METHOD *, TLS_server_method, (void), ())
/* clang-format on */

LAZY_SHIM(LAZY_SSL, SSL_FNS)
