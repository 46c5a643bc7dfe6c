/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Between the agent's API handlers (api.c) and its listeners (api_serve.c). */
#ifndef BM_API_H
#define BM_API_H

#include <microhttpd.h>

/* A JSON error reply {"error": msg}. */
enum MHD_Result ag_api_error(struct MHD_Connection *c, unsigned int status, const char *msg);
/* libmicrohttpd's access handler and completion callback for the API socket (cls: the agent). */
enum MHD_Result ag_api_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **con_cls);
void ag_api_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe);

#endif /* BM_API_H */
