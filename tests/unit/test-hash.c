#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/hash.h"

static void hmac_one(const void *key, size_t keylen, const void *data, size_t len,
		     char hex[SHA256_HEX_LEN + 1])
{
	const void *parts[1] = {data};
	size_t lens[1] = {len};
	uint8_t md[SHA256_LEN];

	assert_int_equal(hash_hmac_sha256(key, keylen, parts, lens, 1, md), 0);
	hash_hex(md, sizeof(md), hex);
}

/* FIPS 180-2 appendix B.1 and B.2. */
static void test_sha256_fips(void **state)
{
	static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[SHA256_HEX_LEN + 1];
	uint8_t md[SHA256_LEN];

	(void)state;
	hash_sha256_hex("", 0, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hash_sha256_hex(NULL, 0, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hash_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hash_sha256_hex(m448, strlen(m448), hex);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	hash_sha256("abc", 3, md);
	assert_int_equal(md[0], 0xba);
	assert_int_equal(md[31], 0xad);
}

/* RFC 4231 section 4: test cases 1-4, 6 and 7 (5 is a truncated output). */
static void test_hmac_rfc4231(void **state)
{
	static const char tc6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char tc7[] =
		"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.";
	char hex[SHA256_HEX_LEN + 1];
	uint8_t key[131], data[50];
	size_t i;

	(void)state;
	memset(key, 0x0b, 20);
	hmac_one(key, 20, "Hi There", 8, hex);
	assert_string_equal(hex,
			    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

	hmac_one("Jefe", 4, "what do ya want for nothing?", 28, hex);
	assert_string_equal(hex,
			    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

	memset(key, 0xaa, 20);
	memset(data, 0xdd, 50);
	hmac_one(key, 20, data, 50, hex);
	assert_string_equal(hex,
			    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

	for (i = 0; i < 25; i++)
		key[i] = (uint8_t)(i + 1);
	memset(data, 0xcd, 50);
	hmac_one(key, 25, data, 50, hex);
	assert_string_equal(hex,
			    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

	memset(key, 0xaa, 131);
	hmac_one(key, 131, tc6, strlen(tc6), hex);
	assert_string_equal(hex,
			    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	hmac_one(key, 131, tc7, strlen(tc7), hex);
	assert_string_equal(hex,
			    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* The audit chain MACs prev_hmac || payload: the parts must behave exactly
 * like their concatenation, wherever the cuts fall. */
static void test_hmac_multipart_equals_single(void **state)
{
	static const char tc7[] =
		"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.";
	uint8_t key[131], whole[SHA256_LEN], split[SHA256_LEN];
	const void *one[1] = {tc7};
	size_t onelen[1] = {sizeof(tc7) - 1};
	size_t cut1, cut2, n = sizeof(tc7) - 1;

	(void)state;
	memset(key, 0xaa, sizeof(key));
	assert_int_equal(hash_hmac_sha256(key, sizeof(key), one, onelen, 1, whole), 0);
	for (cut1 = 0; cut1 <= n; cut1 += 7) {
		for (cut2 = cut1; cut2 <= n; cut2 += 13) {
			const void *parts[3] = {tc7, tc7 + cut1, tc7 + cut2};
			size_t lens[3] = {cut1, cut2 - cut1, n - cut2};

			memset(split, 0, sizeof(split));
			assert_int_equal(hash_hmac_sha256(key, sizeof(key), parts, lens, 3, split),
					 0);
			assert_memory_equal(whole, split, SHA256_LEN);
		}
	}
	/* And a genuinely different message differs. */
	onelen[0] = n - 1;
	assert_int_equal(hash_hmac_sha256(key, sizeof(key), one, onelen, 1, split), 0);
	assert_false(hash_equal(whole, split, SHA256_LEN));
}

/* Values computed with Python's hmac module. */
static void test_hmac_empty_key_and_message(void **state)
{
	uint8_t md[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1];
	const void *parts[2] = {NULL, ""};
	size_t lens[2] = {0, 0};

	(void)state;
	assert_int_equal(hash_hmac_sha256("", 0, NULL, NULL, 0, md), 0);
	hash_hex(md, sizeof(md), hex);
	assert_string_equal(hex,
			    "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
	memset(md, 0, sizeof(md));
	assert_int_equal(hash_hmac_sha256(NULL, 0, parts, lens, 2, md), 0);
	hash_hex(md, sizeof(md), hex);
	assert_string_equal(hex,
			    "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_hmac_bad_arguments(void **state)
{
	uint8_t md[SHA256_LEN], before[SHA256_LEN];
	const void *parts[1] = {NULL};
	size_t lens[1] = {3};

	(void)state;
	memset(md, 0x5a, sizeof(md));
	memcpy(before, md, sizeof(md));
	assert_int_equal(hash_hmac_sha256(NULL, 4, NULL, NULL, 0, md), -EINVAL);
	assert_int_equal(hash_hmac_sha256("k", 1, parts, lens, 1, md), -EINVAL);
	assert_int_equal(hash_hmac_sha256("k", 1, NULL, lens, 1, md), -EINVAL);
	assert_memory_equal(md, before, sizeof(md)); /* untouched on failure */
}

/* A keyed context reused for many messages gives what the one-shot call
 * gives for each (RFC 4231 test case 2 first, so the key is checked too). */
static void test_hmac_context_reuse(void **state)
{
	static const char msg[] = "what do ya want for nothing?";
	struct hash_hmac *h = NULL, *empty = NULL;
	uint8_t md[SHA256_LEN], want[SHA256_LEN], before[SHA256_LEN];
	char hex[SHA256_HEX_LEN + 1], buf[300];
	size_t i, n;

	(void)state;
	assert_int_equal(hash_hmac_new("Jefe", 4, &h), 0);
	for (i = 0; i < 3; i++) {
		const void *parts[2] = {msg, msg + 10};
		size_t lens[2] = {10, sizeof(msg) - 1 - 10};

		memset(md, 0, sizeof(md));
		assert_int_equal(hash_hmac_compute(h, parts, lens, 2, md), 0);
		hash_hex(md, sizeof(md), hex);
		assert_string_equal(
			hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	}
	/* many different messages, interleaved with a second context */
	assert_int_equal(hash_hmac_new(NULL, 0, &empty), 0);
	for (n = 0; n < sizeof(buf); n += 7) {
		const void *one[1] = {buf};
		size_t len[1] = {n};

		for (i = 0; i < n; i++)
			buf[i] = (char)(i * 31 + n);
		assert_int_equal(hash_hmac_compute(h, one, len, 1, md), 0);
		assert_int_equal(hash_hmac_sha256("Jefe", 4, one, len, 1, want), 0);
		assert_memory_equal(md, want, SHA256_LEN);
		assert_int_equal(hash_hmac_compute(empty, one, len, 1, md), 0);
		assert_int_equal(hash_hmac_sha256("", 0, one, len, 1, want), 0);
		assert_memory_equal(md, want, SHA256_LEN);
	}
	/* bad arguments leave out alone; the context still works after */
	{
		const void *parts[1] = {NULL};
		size_t lens[1] = {3};

		memset(md, 0x5a, sizeof(md));
		memcpy(before, md, sizeof(md));
		assert_int_equal(hash_hmac_compute(h, parts, lens, 1, md), -EINVAL);
		assert_int_equal(hash_hmac_compute(h, NULL, lens, 1, md), -EINVAL);
		assert_int_equal(hash_hmac_compute(NULL, NULL, NULL, 0, md), -EINVAL);
		assert_memory_equal(md, before, sizeof(md));
		assert_int_equal(hash_hmac_new(NULL, 4, &empty), -EINVAL);
	}
	assert_int_equal(hash_hmac_compute(h, NULL, NULL, 0, md), 0);
	assert_int_equal(hash_hmac_sha256("Jefe", 4, NULL, NULL, 0, want), 0);
	assert_memory_equal(md, want, SHA256_LEN);
	assert_null(hash_hmac_free(h));
	assert_null(hash_hmac_free(empty));
	assert_null(hash_hmac_free(NULL));
}

static void test_hex_and_equal(void **state)
{
	static const uint8_t bin[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
	char hex[2 * sizeof(bin) + 1];
	uint8_t a[SHA256_LEN], b[SHA256_LEN];

	(void)state;
	memset(hex, 'x', sizeof(hex));
	hash_hex(bin, sizeof(bin), hex);
	assert_string_equal(hex, "00017f80abff");
	hash_hex(bin, 0, hex);
	assert_string_equal(hex, "");

	hash_sha256("abc", 3, a);
	memcpy(b, a, sizeof(b));
	assert_true(hash_equal(a, b, sizeof(a)));
	b[31] ^= 1;
	assert_false(hash_equal(a, b, sizeof(a)));
	b[31] ^= 1;
	b[0] ^= 0x80;
	assert_false(hash_equal(a, b, sizeof(a)));
	assert_true(hash_equal(a, b, 0));
}

/* The reference vectors of SipHash-2-4: key 00..0f, message 00 01 .. of
 * length n; lengths on both sides of every 8-byte boundary up to 63. */
static void test_siphash24_vectors(void **state)
{
	static const struct {
		size_t len;
		uint64_t want;
	} v[] = {
		{0, 0x726fdb47dd0e0e31ULL},  {1, 0x74f839c593dc67fdULL},
		{7, 0xab0200f58b01d137ULL},  {8, 0x93f5f5799a932462ULL},
		{15, 0xa129ca6149be45e5ULL}, {16, 0x3f2acc7f57c29bdbULL},
		{63, 0x958a324ceb064572ULL},
	};
	uint8_t key[16], msg[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_true(hash_siphash24(key, msg, v[i].len) == v[i].want);
	key[0] ^= 1; /* another key, another hash */
	assert_true(hash_siphash24(key, msg, 15) != 0xa129ca6149be45e5ULL);
}

/* Every byte: the 22 hex digits have their value, nothing else is one. */
static void test_hex_value(void **state)
{
	int c, n = 0;

	(void)state;
	for (c = -128; c < 256; c++) {
		int v = hash_hex_value(c);

		if (v < 0)
			continue;
		n++;
		assert_true(v < 16);
		assert_true((c >= '0' && c <= '9' && v == c - '0') ||
			    (c >= 'a' && c <= 'f' && v == c - 'a' + 10) ||
			    (c >= 'A' && c <= 'F' && v == c - 'A' + 10));
	}
	assert_int_equal(n, 22);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_fips),
		cmocka_unit_test(test_hex_value),
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_hmac_multipart_equals_single),
		cmocka_unit_test(test_hmac_empty_key_and_message),
		cmocka_unit_test(test_hmac_bad_arguments),
		cmocka_unit_test(test_hmac_context_reuse),
		cmocka_unit_test(test_hex_and_equal),
		cmocka_unit_test(test_siphash24_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
