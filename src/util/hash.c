/* SHA-256 and HMAC-SHA256 over OpenSSL 3 libcrypto. See hash.h. */
#include "util/hash.h"

#include <errno.h>
#include <stdlib.h>
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

void hash_sha1(const void *data, size_t len, uint8_t out[SHA1_LEN])
{
	static const unsigned char empty[1];
	unsigned int n = 0;

	if (!EVP_Digest(data ? data : empty, len, out, &n, EVP_sha1(), NULL) || n != SHA1_LEN)
		BUG("EVP_Digest(SHA-1) failed");
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

int hash_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void hash_sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	uint8_t md[SHA256_LEN];

	hash_sha256(data, len, md);
	hash_hex(md, sizeof(md), hex);
}

struct hash_hmac {
	EVP_MAC_CTX *ctx; /* keyed once; re-initialised with that key per message */
};

int hash_hmac_new(const void *key, size_t keylen, struct hash_hmac **ret)
{
	static const unsigned char empty[1];
	char digest[] = "SHA256";
	OSSL_PARAM params[2];
	struct hash_hmac *h = NULL;
	EVP_MAC *mac = NULL;
	EVP_MAC_CTX *ctx = NULL;
	int r = -EIO;

	if (!key && keylen)
		return -EINVAL;
	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!mac)
		goto out;
	ctx = EVP_MAC_CTX_new(mac); /* holds its own reference to mac */
	if (!ctx)
		goto out;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
	params[1] = OSSL_PARAM_construct_end();
	/* A NULL key means "keep the previous key" to EVP_MAC_init(); an empty
	 * key must still be a non-NULL pointer. */
	if (!EVP_MAC_init(ctx, key ? key : empty, keylen, params))
		goto out;
	h = xmalloc(sizeof(*h));
	h->ctx = ctx;
	ctx = NULL;
	*ret = h;
	r = 0;
out:
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
	return r;
}

int hash_hmac_compute(struct hash_hmac *h, const void *const *parts, const size_t *lens,
		      size_t nparts, uint8_t out[SHA256_LEN])
{
	uint8_t md[SHA256_LEN];
	size_t i, n = 0;

	if (!h || (nparts && (!parts || !lens)))
		return -EINVAL;
	for (i = 0; i < nparts; i++)
		if (!parts[i] && lens[i])
			return -EINVAL;
	/* NULL key: restart from the key schedule computed by hash_hmac_new()
	 * (OpenSSL copies the keyed inner state; nothing is re-fetched). */
	if (!EVP_MAC_init(h->ctx, NULL, 0, NULL))
		return -EIO;
	for (i = 0; i < nparts; i++)
		if (lens[i] && !EVP_MAC_update(h->ctx, parts[i], lens[i]))
			return -EIO;
	if (!EVP_MAC_final(h->ctx, md, &n, sizeof(md)) || n != SHA256_LEN)
		return -EIO;
	memcpy(out, md, SHA256_LEN); /* out is written only on success */
	return 0;
}

struct hash_hmac *hash_hmac_free(struct hash_hmac *h)
{
	if (!h)
		return NULL;
	EVP_MAC_CTX_free(h->ctx); /* cleanses the key material */
	free(h);
	return NULL;
}

int hash_hmac_sha256(const void *key, size_t keylen, const void *const *parts, const size_t *lens,
		     size_t nparts, uint8_t out[SHA256_LEN])
{
	struct hash_hmac *h = NULL;
	int r;

	if ((!key && keylen) || (nparts && (!parts || !lens)))
		return -EINVAL;
	r = hash_hmac_new(key, keylen, &h);
	if (r < 0)
		return r;
	r = hash_hmac_compute(h, parts, lens, nparts, out);
	hash_hmac_free(h);
	return r;
}

bool hash_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

static uint64_t rotl64(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl64(s->v1, 13) ^ s->v0;
	s->v0 = rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl64(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl64(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl64(s->v1, 17) ^ s->v2;
	s->v2 = rotl64(s->v2, 32);
}

static void sip_block(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

uint64_t hash_siphash24(const uint8_t key[16], const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8), last = (uint64_t)len << 56;
	struct sip s = {
		k0 ^ 0x736f6d6570736575ULL,
		k1 ^ 0x646f72616e646f6dULL,
		k0 ^ 0x6c7967656e657261ULL,
		k1 ^ 0x7465646279746573ULL,
	};
	size_t i, tail = len & 7;

	for (i = 0; i + 8 <= len; i += 8)
		sip_block(&s, load_le64(p + i));
	for (i = 0; i < tail; i++)
		last |= (uint64_t)p[len - tail + i] << (8 * i);
	sip_block(&s, last);
	s.v2 ^= 0xff;
	for (i = 0; i < 4; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
