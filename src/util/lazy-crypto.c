/* libcrypto (OpenSSL 3), loaded on first use (lazy.h): every function bernstein calls. */
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <stdarg.h>
#include <string.h>

#include "util/lazy-shim.h"
#include "util/banned.h"

/* clang-format off */
#define CRYPTO_FNS(F, V, H) \
	F(long, BIO_ctrl, (BIO *b, int cmd, long larg, void *parg), (b, cmd, larg, parg)) \
	F(int, BIO_free, (BIO *b), (b)) \
	F(BIO *, BIO_new, (const BIO_METHOD *type), (type)) \
	F(BIO *, BIO_new_mem_buf, (const void *buf, int len), (buf, len)) \
	F(const BIO_METHOD *, BIO_s_mem, (void), ()) \
	F(BIGNUM *, BN_bin2bn, (const unsigned char *s, int len, BIGNUM *ret), (s, len, ret)) \
	V(BN_free, (BIGNUM *a), (a)) \
	F(ASN1_INTEGER *, BN_to_ASN1_INTEGER, (const BIGNUM *bn, ASN1_INTEGER *ai), (bn, ai)) \
	F(int, CRYPTO_get_ex_new_index, (int cls, long argl, void *argp, CRYPTO_EX_new *nf, CRYPTO_EX_dup *df, CRYPTO_EX_free *ff), (cls, argl, argp, nf, df, ff)) \
	V(ERR_clear_error, (void), ()) \
	V(ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len)) \
	F(unsigned long, ERR_get_error, (void), ()) \
	H(EVP_PKEY_Q_keygen) \
	V(EVP_PKEY_free, (EVP_PKEY *pkey), (pkey)) \
	V(OPENSSL_cleanse, (void *ptr, size_t len), (ptr, len)) \
	F(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *b, EVP_PKEY **x, pem_password_cb *cb, void *u), (b, x, cb, u)) \
	F(X509 *, PEM_read_bio_X509, (BIO *b, X509 **x, pem_password_cb *cb, void *u), (b, x, cb, u)) \
	F(int, PEM_write_bio_PrivateKey, (BIO *b, const EVP_PKEY *x, const EVP_CIPHER *enc, const unsigned char *kstr, int klen, pem_password_cb *cb, void *u), (b, x, enc, kstr, klen, cb, u)) \
	F(int, PEM_write_bio_X509, (BIO *b, const X509 *x), (b, x)) \
	F(int, RAND_bytes, (unsigned char *buf, int num), (buf, num)) \
	F(int, X509_NAME_add_entry_by_txt, (X509_NAME *name, const char *field, int type, const unsigned char *bytes, int len, int loc, int set), (name, field, type, bytes, len, loc, set)) \
	F(X509 *, X509_STORE_CTX_get_current_cert, (const X509_STORE_CTX *ctx), (ctx)) \
	F(int, X509_STORE_CTX_get_error_depth, (const X509_STORE_CTX *ctx), (ctx)) \
	F(void *, X509_STORE_CTX_get_ex_data, (const X509_STORE_CTX *ctx, int idx), (ctx, idx)) \
	V(X509_STORE_CTX_set_error, (X509_STORE_CTX *ctx, int s), (ctx, s)) \
	F(int, X509_digest, (const X509 *x, const EVP_MD *type, unsigned char *md, unsigned int *len), (x, type, md, len)) \
	V(X509_free, (X509 *x), (x)) \
	F(ASN1_INTEGER *, X509_get_serialNumber, (X509 *x), (x)) \
	F(X509_NAME *, X509_get_subject_name, (const X509 *x), (x)) \
	F(ASN1_TIME *, X509_getm_notAfter, (const X509 *x), (x)) \
	F(ASN1_TIME *, X509_getm_notBefore, (const X509 *x), (x)) \
	F(ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME *s, long adj), (s, adj)) \
	F(X509 *, X509_new, (void), ()) \
	F(int, X509_set_issuer_name, (X509 *x, const X509_NAME *name), (x, name)) \
	F(int, X509_set_pubkey, (X509 *x, EVP_PKEY *pkey), (x, pkey)) \
	F(int, X509_set_version, (X509 *x, long version), (x, version)) \
	F(int, X509_sign, (X509 *x, EVP_PKEY *pkey, const EVP_MD *md), (x, pkey, md)) \
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
	F(const EVP_MD *, EVP_sha1, (void), ()) \
	F(OSSL_PARAM, OSSL_PARAM_construct_end, (void), ()) \
	F(OSSL_PARAM, OSSL_PARAM_construct_utf8_string, (const char *key, char *buf, size_t bsize), (key, buf, bsize))
/* clang-format on */

LAZY_SHIM(LAZY_CRYPTO, CRYPTO_FNS)

/* Variadic: the one parameter each key type takes (EVP_PKEY_Q_keygen(3):
 * "EC" a curve name, "RSA" a size_t of bits, the others none), passed on. */
__attribute__((visibility("hidden"))) EVP_PKEY *
EVP_PKEY_Q_keygen(OSSL_LIB_CTX *lib, const char *propq, const char *type, ...)
{
	va_list ap;
	EVP_PKEY *k;

	va_start(ap, type);
	if (strcmp(type, "EC") == 0) {
		const char *curve = va_arg(ap, const char *);

		k = LAZY_FN(EVP_PKEY_Q_keygen)(lib, propq, type, curve);
	} else if (strcmp(type, "RSA") == 0) {
		size_t bits = va_arg(ap, size_t);

		k = LAZY_FN(EVP_PKEY_Q_keygen)(lib, propq, type, bits);
	} else {
		k = LAZY_FN(EVP_PKEY_Q_keygen)(lib, propq, type);
	}
	va_end(ap);
	return k;
}
