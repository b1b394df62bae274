#include "weir_http_mitm.h"

#include <openssl/pem.h>

/*
 * mitm_onboarding NAME: a page served by the proxy itself, for a client
 * that is not yet set up. The client asks for http://NAME/ through the
 * proxy, and gets per-platform instructions and its CA to download.
 * This is mitmproxy's mitm.it. It is plain HTTP by design: the client
 * does not trust the CA yet. The name is never looked up, and no origin
 * is contacted.
 *
 *   /              the instructions, with the CA's SHA-256 fingerprint
 *   /weir-ca.pem   the CA in PEM (Linux, macOS, Firefox, iOS)
 *   /weir-ca.der   the CA in DER (Windows, Android)
 */


static weir_int_t weir_http_mitm_onboard_page(weir_http_request_t *r,
    weir_http_mitm_srv_conf_t *mscf);


/* a content-phase handler before the forward proxy's */

weir_int_t
weir_http_mitm_onboard_handler(weir_http_request_t *r)
{
    size_t                      len;
    weir_str_t                  host, type, body;
    weir_http_mitm_srv_conf_t  *mscf;

    mscf = weir_http_get_module_srv_conf(r, weir_http_mitm_module);

    /* an absolute-form target (a client configured with the proxy) */
    if (mscf->onboarding.len == 0 || mscf->ca == NULL || r != r->main
        || r->schema_start == NULL || r->host_start == NULL
        || r->host_end == NULL)
    {
        return WEIR_DECLINED;
    }

    host.data = r->host_start;
    host.len = (size_t) (r->host_end - r->host_start);

    if (host.len != mscf->onboarding.len
        || weir_strncasecmp(host.data, mscf->onboarding.data, host.len)
           != 0)
    {
        return WEIR_DECLINED;
    }

    if (!(r->method & (WEIR_HTTP_GET | WEIR_HTTP_HEAD))) {
        return WEIR_HTTP_NOT_ALLOWED;
    }

    len = r->uri.len;

    if (len == 1 && r->uri.data[0] == '/') {
        return weir_http_mitm_onboard_page(r, mscf);
    }

    if (len == sizeof("/weir-ca.pem") - 1
        && weir_strncmp(r->uri.data, "/weir-ca.pem", len) == 0)
    {
        weir_str_set(&type, "application/x-pem-file");
        body = mscf->ca_pem;

    } else if (len == sizeof("/weir-ca.der") - 1
               && weir_strncmp(r->uri.data, "/weir-ca.der", len) == 0)
    {
        weir_str_set(&type, "application/x-x509-ca-cert");
        body = mscf->ca_der;

    } else {
        return WEIR_HTTP_NOT_FOUND;
    }

    return weir_http_send_response(r, WEIR_HTTP_OK, &type, &body);
}


static weir_int_t
weir_http_mitm_onboard_page(weir_http_request_t *r,
    weir_http_mitm_srv_conf_t *mscf)
{
    weir_str_t  type, body;

    weir_str_set(&type, "text/html; charset=utf-8");

    if (weir_pstrfmt(r->pool, &body,
        "<!DOCTYPE html>\n"
        "<html><head><meta charset=\"utf-8\">"
        "<title>weir: trust the interception CA</title></head>\n"
        "<body>\n"
        "<h1>Trust weir's interception CA</h1>\n"
        "<p>This client goes through weir, an intercepting proxy. To let "
        "it read HTTPS, trust its CA once. Do this only on a machine you "
        "test with: the CA can vouch for any name.</p>\n"
        "<p>SHA-256 fingerprint: <code>%s</code><br>\n"
        "Download: <a href=\"/weir-ca.pem\">weir-ca.pem</a> (PEM) or "
        "<a href=\"/weir-ca.der\">weir-ca.der</a> (DER).</p>\n"
        "<h2>Debian, Ubuntu</h2>\n"
        "<pre>curl -x http://PROXY http://%.*s/weir-ca.pem -o "
        "weir-ca.crt\n"
        "sudo cp weir-ca.crt /usr/local/share/ca-certificates/\n"
        "sudo update-ca-certificates</pre>\n"
        "<h2>Fedora</h2>\n"
        "<pre>sudo cp weir-ca.pem /etc/pki/ca-trust/source/anchors/\n"
        "sudo update-ca-trust</pre>\n"
        "<h2>macOS</h2>\n"
        "<pre>sudo security add-trusted-cert -d -r trustRoot "
        "-k /Library/Keychains/System.keychain weir-ca.pem</pre>\n"
        "<h2>Windows</h2>\n"
        "<p>Open weir-ca.der, choose <em>Install Certificate</em>, "
        "<em>Local Machine</em>, and the store <em>Trusted Root "
        "Certification Authorities</em>. Or, as an administrator:</p>\n"
        "<pre>certutil -addstore root weir-ca.der</pre>\n"
        "<h2>Firefox</h2>\n"
        "<p>Firefox keeps its own store: Settings, Privacy &amp; "
        "Security, Certificates, View Certificates, Authorities, "
        "Import weir-ca.pem, and tick <em>Trust this CA to identify "
        "websites</em>.</p>\n"
        "<h2>Android</h2>\n"
        "<p>Download weir-ca.der, then Settings, Security, Encryption "
        "&amp; credentials, Install a certificate, CA certificate. Apps "
        "trust user CAs only when they ask to (Android 7 and later).</p>\n"
        "<h2>iOS</h2>\n"
        "<p>Open weir-ca.pem in Safari and install the profile "
        "(Settings, General, VPN &amp; Device Management). Then turn "
        "on full trust: Settings, General, About, Certificate Trust "
        "Settings.</p>\n"
        "<h2>Command-line clients</h2>\n"
        "<pre>curl --cacert weir-ca.pem -x http://PROXY https://...\n"
        "SSL_CERT_FILE=weir-ca.pem python3 ...\n"
        "NODE_EXTRA_CA_CERTS=weir-ca.pem node ...</pre>\n"
        "</body></html>\n",
        mscf->ca_fingerprint, WEIR_STR_ARG(mscf->onboarding))
        != WEIR_OK)
    {
        return WEIR_HTTP_INTERNAL_SERVER_ERROR;
    }

    return weir_http_send_response(r, WEIR_HTTP_OK, &type, &body);
}


/* the downloads and the fingerprint, made once with the configuration */

weir_int_t
weir_http_mitm_onboard_init(weir_conf_t *cf, weir_http_mitm_srv_conf_t *mscf)
{
    int             len;
    BIO            *bio;
    char           *data;
    long            n;
    unsigned int    i;
    unsigned char  *p;

    bio = BIO_new(BIO_s_mem());

    if (bio == NULL || !PEM_write_bio_X509(bio, mscf->ca->cert)) {
        BIO_free(bio);
        return WEIR_ERROR;
    }

    n = BIO_get_mem_data(bio, &data);

    mscf->ca_pem.data = weir_pnalloc(cf->pool, (size_t) n);
    if (mscf->ca_pem.data == NULL) {
        BIO_free(bio);
        return WEIR_ERROR;
    }

    mscf->ca_pem.len = (size_t) n;
    weir_memcpy(mscf->ca_pem.data, data, (size_t) n);
    BIO_free(bio);

    len = i2d_X509(mscf->ca->cert, NULL);
    if (len <= 0) {
        return WEIR_ERROR;
    }

    mscf->ca_der.data = weir_pnalloc(cf->pool, (size_t) len);
    if (mscf->ca_der.data == NULL) {
        return WEIR_ERROR;
    }

    p = mscf->ca_der.data;
    mscf->ca_der.len = (size_t) i2d_X509(mscf->ca->cert, &p);

    p = (unsigned char *) mscf->ca_fingerprint;

    for (i = 0; i < 32; i++) {
        p = weir_slprintf(p, (unsigned char *) mscf->ca_fingerprint
                             + sizeof(mscf->ca_fingerprint),
                          i ? ":%02X" : "%02X",
                          (unsigned) mscf->ca->fingerprint[i]);
    }

    return WEIR_OK;
}
