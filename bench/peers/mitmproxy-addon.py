"""mitmdump's addon for the bench (mitmdump -s): the MITM arms' names
(bench.test and the names under it) are connected to 127.0.0.1, as the
run's DNS server tells weir and Squid; mitmproxy 8.1 asks the system's
resolver, which the bench does not change."""

DOMAIN = 'bench.test'


def server_connect(data):
    host, port = data.server.address
    if host == DOMAIN or host.endswith('.' + DOMAIN):
        data.server.address = ('127.0.0.1', port)
