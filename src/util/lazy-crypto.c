/* libcrypto (OpenSSL 3), loaded on first use (lazy.h): every function bernstein calls. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define CRYPTO_FNS(F, V, H) \
	F(int, CRYPTO_memcmp, (const void *a, const void *b, size_t n), (a, b, n)) \
	F(int, EVP_Digest, (const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl), (data, count, md, size, type, impl)) \
	V(EVP_MAC_CTX_free, (EVP_MAC_CTX *ctx), (ctx)) \
	F(EVP_MAC_CTX *, EVP_MAC_CTX_new, (EVP_MAC *mac), (mac)) \
	F(EVP_MAC *, EVP_MAC_fetch, (OSSL_LIB_CTX *lib, const char *alg, const char *props), (lib, alg, props)) \
	F(int, EVP_MAC_final, (EVP_MAC_CTX *ctx, unsigned char *out, size_t *outl, size_t outsize), (ctx, out, outl, outsize)) \
	V(EVP_MAC_free, (EVP_MAC *mac), (mac)) \
	F(int, EVP_MAC_init, (EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen, const OSSL_PARAM params[]), (ctx, key, keylen, params)) \
	F(int, EVP_MAC_update, (EVP_MAC_CTX *ctx, const unsigned char *data, size_t n), (ctx, data, n)) \
	F(const EVP_MD *, EVP_sha256, (void), ()) \
	F(OSSL_PARAM, OSSL_PARAM_construct_end, (void), ()) \
	F(OSSL_PARAM, OSSL_PARAM_construct_utf8_string, (const char *key, char *buf, size_t bsize), (key, buf, bsize))
/* clang-format on */

LAZY_SHIM(LAZY_CRYPTO, CRYPTO_FNS)
