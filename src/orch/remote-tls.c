/* TLS on the event connection (orch/remote-tls.h). */
#include "orch/remote-tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "util/hash.h"
#include "util/xalloc.h"
#include "util/banned.h"

#define CERT_DAYS 30

int remote_fp_parse(const char *s, size_t len, uint8_t ret[REMOTE_FP_LEN], struct diag *reterr)
{
	size_t i;

	if (len != REMOTE_FP_HEX) {
		diag_set(
			reterr, NULL, 0, 0,
			"the certificate fingerprint has %zu characters, not %d hex digits (SHA-256)",
			len, REMOTE_FP_HEX);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		if (hash_hex_value(s[i]) < 0) {
			diag_set(reterr, NULL, 0, 0,
				 "the certificate fingerprint holds a non-hex character at %zu",
				 i + 1);
			return -EINVAL;
		}
	}
	for (i = 0; i < REMOTE_FP_LEN; i++)
		ret[i] = (uint8_t)(hash_hex_value(s[2 * i]) << 4 | hash_hex_value(s[2 * i + 1]));
	return 0;
}

void remote_tls_error(char *buf, size_t size)
{
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, buf, size);
	else
		(void)snprintf(buf, size, "no TLS reason given");
	ERR_clear_error();
}

static int tls_fail(struct diag *reterr, const char *what)
{
	char why[256];

	remote_tls_error(why, sizeof(why));
	diag_set(reterr, NULL, 0, 0, "%s: %s", what, why);
	return -EIO;
}

static bool cert_fp(X509 *x, uint8_t md[REMOTE_FP_LEN])
{
	unsigned int n = 0;

	return x && X509_digest(x, EVP_sha256(), md, &n) == 1 && n == REMOTE_FP_LEN;
}

/* A self-signed certificate for key. */
static X509 *self_signed(EVP_PKEY *key)
{
	X509 *x = X509_new();
	X509_NAME *name;
	uint8_t serial[16];
	BIGNUM *bn = NULL;
	bool ok;

	if (!x)
		return NULL;
	ok = RAND_bytes(serial, sizeof(serial)) == 1;
	serial[0] &= 0x7f; /* positive */
	ok = ok && (bn = BN_bin2bn(serial, sizeof(serial), NULL)) &&
	     BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_set_version(x, 2) == 1 &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), (long)CERT_DAYS * 86400) &&
	     X509_set_pubkey(x, key) == 1 && (name = X509_get_subject_name(x)) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)"bernstein agent-relay", -1, -1,
					0) == 1 &&
	     X509_set_issuer_name(x, name) == 1 && X509_sign(x, key, EVP_sha256()) > 0;
	BN_free(bn);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int remote_tls_identity(char **ret_pem, char ret_fp[REMOTE_FP_HEX + 1], struct diag *reterr)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = key ? self_signed(key) : NULL;
	BIO *b = BIO_new(BIO_s_mem());
	uint8_t md[REMOTE_FP_LEN];
	char *data = NULL;
	long n;
	int r = 0;

	if (!key || !x || !b || !cert_fp(x, md) ||
	    PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    PEM_write_bio_X509(b, x) != 1 || (n = BIO_get_mem_data(b, &data)) <= 0) {
		r = tls_fail(reterr, "cannot make the connection's TLS key and certificate");
	} else {
		*ret_pem = xstrndup(data, (size_t)n);
		hash_hex(md, sizeof(md), ret_fp);
	}
	if (b && data && (n = BIO_get_mem_data(b, &data)) > 0)
		OPENSSL_cleanse(data, (size_t)n);
	BIO_free(b);
	X509_free(x);
	EVP_PKEY_free(key);
	return r;
}

static SSL_CTX *ctx_new(const SSL_METHOD *m)
{
	SSL_CTX *c = SSL_CTX_new(m);

	if (c && SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) != 1) {
		SSL_CTX_free(c);
		c = NULL;
	}
	return c;
}

SSL_CTX *remote_tls_server(const char *pem, char ret_fp[REMOTE_FP_HEX + 1], struct diag *reterr)
{
	BIO *kb = BIO_new_mem_buf(pem, -1), *cb = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	SSL_CTX *c = key && x ? ctx_new(TLS_server_method()) : NULL;
	uint8_t md[REMOTE_FP_LEN];

	if (!c || SSL_CTX_use_certificate(c, x) != 1 || SSL_CTX_use_PrivateKey(c, key) != 1 ||
	    SSL_CTX_check_private_key(c) != 1 || !cert_fp(x, md)) {
		(void)tls_fail(reterr,
			       key && x ? "cannot use the connection's TLS key"
					: "no TLS key and certificate in the job's key file");
		SSL_CTX_free(c);
		c = NULL;
	} else if (ret_fp) {
		hash_hex(md, sizeof(md), ret_fp);
	}
	X509_free(x);
	EVP_PKEY_free(key);
	BIO_free(kb);
	BIO_free(cb);
	return c;
}

bool remote_tls_peer_is(SSL *ssl, const uint8_t fp[REMOTE_FP_LEN])
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	uint8_t md[REMOTE_FP_LEN];
	bool ok = cert_fp(x, md) && CRYPTO_memcmp(md, fp, REMOTE_FP_LEN) == 0;

	X509_free(x);
	return ok;
}

static int ctx_fp_index = -1;

/* The server's certificate is the pinned one, whatever else a chain
 * check says (self-signed: no CA vouches for it; the pin does). */
static int verify_pin(int preverify, X509_STORE_CTX *xs)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	SSL_CTX *c = ssl ? SSL_get_SSL_CTX(ssl) : NULL;
	const uint8_t *fp = c ? SSL_CTX_get_ex_data(c, ctx_fp_index) : NULL;
	X509 *x = X509_STORE_CTX_get_current_cert(xs);
	uint8_t md[REMOTE_FP_LEN];

	(void)preverify;
	if (X509_STORE_CTX_get_error_depth(xs) != 0)
		return 1; /* only the leaf counts */
	if (fp && cert_fp(x, md) && CRYPTO_memcmp(md, fp, REMOTE_FP_LEN) == 0)
		return 1;
	X509_STORE_CTX_set_error(xs, X509_V_ERR_CERT_REJECTED);
	return 0;
}

SSL_CTX *remote_tls_client(uint8_t fp[REMOTE_FP_LEN], struct diag *reterr)
{
	SSL_CTX *c = ctx_new(TLS_client_method());

	if (ctx_fp_index < 0)
		ctx_fp_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	if (!c || ctx_fp_index < 0 || SSL_CTX_set_ex_data(c, ctx_fp_index, fp) != 1) {
		(void)tls_fail(reterr, "cannot set up TLS");
		SSL_CTX_free(c);
		return NULL;
	}
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, verify_pin);
	return c;
}
