"""Cleaning up after a node that a test made refuse its parameters (imported as `registrations`).

A C++ node refusing a parameter exits with 2 at once, without unregistering from the master
(its /rosout publisher and logger services stay registered). The ``roscore`` fixture then finds
the shared master unclean and replaces it (~0.6 s a test); :func:`forget_node` removes the dead
node's registrations as ``rosnode cleanup`` would, so the master stays in use."""
from __future__ import annotations

import xmlrpc.client

from netloop.master import RosMaster


def forget_node(master: RosMaster, name: str) -> None:
    """Unregister everything ``name`` (a node whose process has ended) registered on ``master``."""
    def call(method, *args):
        return master.rpc_caller(lambda: getattr(xmlrpc.client.ServerProxy(master.uri), method)(name, *args))

    code, _, uri = call("lookupNode", name)
    if code != 1:
        return   # it never registered
    _, _, (publishers, subscribers, services) = call("getSystemState")
    for topic, nodes in publishers:
        if name in nodes:
            call("unregisterPublisher", topic, uri)
    for topic, nodes in subscribers:
        if name in nodes:
            call("unregisterSubscriber", topic, uri)
    for service, nodes in services:
        if name in nodes:
            code, _, api = call("lookupService", service)
            if code == 1:
                call("unregisterService", service, api)
