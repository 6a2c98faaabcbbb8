/* Fuzz target for the TLS pieces of the Slurm executor's event connection
 * (orch/remote-tls.c): the parser of the certificate fingerprint a job is
 * given (BERNSTEIN_EXEC_FINGERPRINT, from a batch script anyone who edits
 * the job could change), and the loader of a relay's key file (PEM) a
 * resumed relay reads back. Properties, besides never crashing:
 *   - a fingerprint is accepted exactly when it is 64 hex digits, and then
 *     each byte is the pair of digits it came from; a refusal is -EINVAL
 *     with a message and leaves the output untouched;
 *   - a key file that is not a matching key and certificate gives no
 *     context, with a message. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "orch/remote-tls.h"
#include "util/hash.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t fp[REMOTE_FP_LEN], sentinel[REMOTE_FP_LEN];
	const char *s = (const char *)data;
	struct diag d = {0};
	bool hex = size == REMOTE_FP_HEX;
	size_t i;
	int r;

	for (i = 0; hex && i < size; i++)
		hex = hash_hex_value(s[i]) >= 0;
	memset(fp, 0x5a, sizeof(fp));
	memcpy(sentinel, fp, sizeof(fp));
	r = remote_fp_parse(s, size, fp, &d);
	if (hex != (r == 0))
		abort();
	if (r < 0 && (r != -EINVAL || !d.msg[0] || memcmp(fp, sentinel, sizeof(fp)) != 0))
		abort();
	for (i = 0; r == 0 && i < REMOTE_FP_LEN; i++)
		if (fp[i] !=
		    (uint8_t)(hash_hex_value(s[2 * i]) << 4 | hash_hex_value(s[2 * i + 1])))
			abort();

	/* the same bytes as a relay's key file */
	if (size < 65536) {
		char *pem = malloc(size + 1);
		char hexfp[REMOTE_FP_HEX + 1];
		SSL_CTX *c;

		if (!pem)
			return 0;
		memcpy(pem, data, size);
		pem[size] = '\0';
		memset(&d, 0, sizeof(d));
		c = remote_tls_server(pem, hexfp, &d);
		if (!c && !d.msg[0])
			abort();
		if (c && strlen(hexfp) != REMOTE_FP_HEX)
			abort();
		SSL_CTX_free(c);
		free(pem);
	}
	return 0;
}
