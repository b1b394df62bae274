#ifndef _WEIR_HTTP_V1_H_INCLUDED_
#define _WEIR_HTTP_V1_H_INCLUDED_

/* HTTP/1.0 and HTTP/1.1 downstream connections */

extern weir_http_proto_t  weir_http_v1_proto;

/* a new connection or a keep-alive one waiting for its next request */
void weir_http_v1_init_connection(weir_connection_t *c);
void weir_http_v1_wait_request_handler(weir_event_t *ev);
void weir_http_v1_set_keepalive(weir_http_request_t *r);
void weir_http_v1_set_lingering_close(weir_connection_t *c);
void weir_http_close_connection(weir_connection_t *c);

#endif /* _WEIR_HTTP_V1_H_INCLUDED_ */
