/* SHA-256 and HMAC-SHA256 over libcrypto (OpenSSL 3); SipHash-2-4 for hash
 * tables fed by untrusted input. */
#ifndef BERNSTEIN_UTIL_HASH_H
#define BERNSTEIN_UTIL_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN     32
#define SHA256_HEX_LEN 64
#define SHA1_LEN       20

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* SHA-1: only where a format fixes it (git's index checksum), never for
 * anything bernstein trusts. */
void hash_sha1(const void *data, size_t len, uint8_t out[SHA1_LEN]);
/* hex: 65 bytes (64 lowercase hex digits + NUL). */
void hash_sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* HMAC-SHA256 over the concatenation of the parts (prev_hmac || payload). */
int hash_hmac_sha256(const void *key, size_t keylen, const void *const *parts, const size_t *lens,
		     size_t nparts, uint8_t out[SHA256_LEN]);
/* HMAC-SHA256 under one key for many messages (the audit verifier's one
 * per record): the algorithm is fetched and the key schedule computed once,
 * so each message costs its hashing only, with no allocation of ours.
 * hash_hmac_new(): -EINVAL (NULL key with keylen > 0) or -EIO when libcrypto
 * cannot (no default provider). The key is copied into libcrypto's state,
 * which is cleansed on free. */
struct hash_hmac;
int hash_hmac_new(const void *key, size_t keylen, struct hash_hmac **ret);
/* The MAC of the concatenation of the parts; out is written only on
 * success. -EINVAL for a NULL part with a length, -EIO if libcrypto fails. */
int hash_hmac_compute(struct hash_hmac *h, const void *const *parts, const size_t *lens,
		      size_t nparts, uint8_t out[SHA256_LEN]);
/* Accepts NULL, returns NULL. */
struct hash_hmac *hash_hmac_free(struct hash_hmac *h);
void hash_hex(const uint8_t *bin, size_t len, char *hex /* 2*len+1 */);
/* The value of the hex digit c (either case), or -1. */
int hash_hex_value(int c);
/* Constant-time comparison (CRYPTO_memcmp). */
bool hash_equal(const void *a, const void *b, size_t len);

/* SipHash-2-4 (Aumasson and Bernstein, 2012) of data under a 128-bit key: a
 * keyed hash for tables whose keys come from a file, so that no file can be
 * made whose keys all collide. Not a MAC for anything stored. */
uint64_t hash_siphash24(const uint8_t key[16], const void *data, size_t len);

#endif
