/* SHA-256 and HMAC-SHA256 over libcrypto (OpenSSL 3 one-shot APIs). */
#ifndef BERNSTEIN_UTIL_HASH_H
#define BERNSTEIN_UTIL_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN     32
#define SHA256_HEX_LEN 64

void hash_sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);
/* hex: 65 bytes (64 lowercase hex digits + NUL). */
void hash_sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* HMAC-SHA256 over the concatenation of the parts (prev_hmac || payload). */
int hash_hmac_sha256(const void *key, size_t keylen, const void *const *parts, const size_t *lens,
		     size_t nparts, uint8_t out[SHA256_LEN]);
void hash_hex(const uint8_t *bin, size_t len, char *hex /* 2*len+1 */);
/* Constant-time comparison (CRYPTO_memcmp). */
bool hash_equal(const void *a, const void *b, size_t len);

#endif
