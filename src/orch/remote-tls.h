/* TLS on the event connection between `bernstein agent-relay` and
 * `bernstein agent-exec` (orch/remote.h, docs/executors.md, "The
 * connection"): OpenSSL's libssl, TLS 1.3 only.
 *
 * The relay (the server) makes an ephemeral identity per job: an EC P-256
 * key and a self-signed certificate. The job gets only the certificate's
 * SHA-256 fingerprint (not secret: it is in the batch script) and accepts
 * no other certificate (pinning; no CA is consulted): a host that cannot
 * show that certificate's key gets a TLS alert and not one byte of the
 * job's token. The token then authenticates the job to the relay, inside
 * the encrypted connection.
 *
 * libssl and not another TLS library: it is the same Debian package
 * (libssl3) as the libcrypto bernstein already links for SHA-256 and HMAC,
 * so it adds no package and no second crypto implementation. Nothing here
 * prints. */
#ifndef BERNSTEIN_ORCH_REMOTE_TLS_H
#define BERNSTEIN_ORCH_REMOTE_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "util/diag.h"

#define REMOTE_FP_LEN 32 /* SHA-256 of the certificate's DER */
#define REMOTE_FP_HEX 64

/* A fingerprint as the job is given it (BERNSTEIN_EXEC_FINGERPRINT):
 * exactly REMOTE_FP_HEX hex digits (either case), nothing else. 0 and
 * ret filled, or -EINVAL with why (the offending position) in reterr. */
int remote_fp_parse(const char *s, size_t len, uint8_t ret[REMOTE_FP_LEN], struct diag *reterr);

/* A fresh identity: the key and its self-signed certificate, both PEM in
 * one NUL-terminated buffer (*ret_pem, caller wipes and frees), and the
 * certificate's fingerprint as lowercase hex. 0, or -EIO with why. */
int remote_tls_identity(char **ret_pem, char ret_fp[REMOTE_FP_HEX + 1], struct diag *reterr);

/* The relay's context from such a PEM (the key and its certificate), and
 * the certificate's fingerprint as hex (ret_fp may be NULL). NULL with
 * why when the PEM holds no matching key and certificate. */
SSL_CTX *remote_tls_server(const char *pem, char ret_fp[REMOTE_FP_HEX + 1], struct diag *reterr);

/* The job's context: the handshake fails (the client sends a
 * bad-certificate alert) unless the server's certificate hashes to fp.
 * fp must outlive the context. NULL with why. */
SSL_CTX *remote_tls_client(uint8_t fp[REMOTE_FP_LEN], struct diag *reterr);

/* After a handshake: whether the peer's certificate hashes to fp (the
 * client checks again what its verify callback decided). */
bool remote_tls_peer_is(SSL *ssl, const uint8_t fp[REMOTE_FP_LEN]);

/* The first error OpenSSL queued for this thread, as text (the queue is
 * cleared): for a reason in a message. */
void remote_tls_error(char *buf, size_t size);

#endif
