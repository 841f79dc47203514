"""`easyfirst serve`'s options (easyfirst/cli/serve.py): each bad value refused in one line with exit
status 2 before the model is loaded, and a port that cannot be had refused before the model is loaded
too (bind), naming the flag. No server is started."""

from __future__ import annotations

import socket

import pytest
from verbs import easyfirst

from easyfirst.cli.serve import bind
from easyfirst.errors import InputError


@pytest.mark.parametrize(
    "args, line",
    [
        (["--max-words", "0"], "--max-words must be an integer >= 1, not 0"),
        (["--max-body", "-1"], "--max-body must be an integer >= 1, not -1"),
        (["--max-sentences", "0"], "--max-sentences must be an integer >= 1, not 0"),
        (["--max-attention", "0"], "--max-attention must be an integer >= 1, not 0"),
        (["--workers", "0"], "--workers must be an integer >= 1, not 0"),
        (["--port", "70000"], "--port must be 0 to 65535, not 70000"),
        (["--batch-window", "-1"], "--batch-window must be a finite number >= 0, not -1.0"),
        (["--graceful-timeout", "-0.5"], "--graceful-timeout must be a finite number >= 0, not -0.5"),
        (["--workers", "2", "--device", "cuda"], "--workers 2: more than one worker needs --device cpu"),
        (["--device", "banana"], "--device: not a device name: 'banana'"),
        (["--port", "many"], "--port: "),  # Click's words, which differ between versions
    ],
)
def test_a_bad_option_is_one_line_and_exit_status_2(args, line):
    code, stdout, stderr = easyfirst("serve", *args)
    assert code == 2, stderr
    assert stderr.strip().startswith(line) and len(stderr.strip().splitlines()) == 1, stderr
    assert stdout == ""


def test_a_busy_port_is_refused_naming_the_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(InputError) as error:
            bind("127.0.0.1", port, 1)
    assert str(error.value).startswith(f"--port: cannot listen on 127.0.0.1:{port}: ")


def test_an_address_that_is_not_this_machines_is_refused_naming_the_host():
    with pytest.raises(InputError, match=r"^--host: cannot listen on 192\.0\.2\.1:0: "):
        bind("192.0.2.1", 0, 1)  # TEST-NET-1: never a local address
    with pytest.raises(InputError, match=r"^--host no-such-host\.invalid: "):
        bind("no-such-host.invalid", 0, 1)


def test_a_free_port_is_bound_and_listening():
    sock = bind("127.0.0.1", 0, 1)
    try:
        port = sock.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the kernel accepts on a listening socket before any accept() call
    finally:
        sock.close()
