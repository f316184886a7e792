/*
 * Certificates for the https tests, made with sumcache's own builder
 * (proxy/cert/cert.c): a test CA, and origin certificates for 127.0.0.1
 * that are good, expired, for another host, or self-signed.
 */
#ifndef TLSFILES_H
#define TLSFILES_H

/* Writes under dir: testca.crt, and NAME.crt / NAME.key for NAME in
 * good, expired, wronghost (signed by the test CA) and selfsigned. */
void tlsfiles_write(const char *dir);

#endif
