/* SHA-256 and HMAC-SHA256 over OpenSSL 3 libcrypto. See hash.h. */
#include "util/hash.h"

#include <errno.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "util/xalloc.h"
#include "util/banned.h"

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	static const unsigned char empty[1];
	unsigned int n = 0;

	/* Only a broken libcrypto (no default provider) or OOM fails here. */
	if (!EVP_Digest(data ? data : empty, len, out, &n, EVP_sha256(), NULL) || n != SHA256_LEN)
		BUG("EVP_Digest(SHA-256) failed");
}

void hash_hex(const uint8_t *bin, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		hex[2 * i] = digits[bin[i] >> 4];
		hex[2 * i + 1] = digits[bin[i] & 0x0f];
	}
	hex[2 * len] = '\0';
}

void hash_sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	uint8_t md[SHA256_LEN];

	hash_sha256(data, len, md);
	hash_hex(md, sizeof(md), hex);
}

int hash_hmac_sha256(const void *key, size_t keylen, const void *const *parts, const size_t *lens,
		     size_t nparts, uint8_t out[SHA256_LEN])
{
	static const unsigned char empty[1];
	char digest[] = "SHA256";
	OSSL_PARAM params[2];
	EVP_MAC *mac = NULL;
	EVP_MAC_CTX *ctx = NULL;
	uint8_t md[SHA256_LEN];
	size_t i, n = 0;
	int r = -EIO;

	if ((!key && keylen) || (nparts && (!parts || !lens)))
		return -EINVAL;
	for (i = 0; i < nparts; i++)
		if (!parts[i] && lens[i])
			return -EINVAL;

	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!mac)
		goto out;
	ctx = EVP_MAC_CTX_new(mac);
	if (!ctx)
		goto out;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	/* A NULL key means "keep the previous key" to EVP_MAC_init(); an empty
	 * key must still be a non-NULL pointer. */
	if (!EVP_MAC_init(ctx, key ? key : empty, keylen, params))
		goto out;
	for (i = 0; i < nparts; i++)
		if (lens[i] && !EVP_MAC_update(ctx, parts[i], lens[i]))
			goto out;
	if (!EVP_MAC_final(ctx, md, &n, sizeof(md)) || n != SHA256_LEN)
		goto out;
	memcpy(out, md, SHA256_LEN); /* out is written only on success */
	r = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return r;
}

bool hash_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}
