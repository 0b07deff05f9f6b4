"""Make a ZooKeeper subtree unreadable for everyone but one digest user (tests of "an error is never evidence
of absence": the scraper must mark that scope incomplete and the audit must refuse to plan in it)."""

from __future__ import annotations

from kazoo.security import make_digest_acl

from pulsar_ops.zkconn import ZkSecurity, connected


def lock_subtree(hosts: str, path: str, *, user: str = "owner", password: str = "secret") -> None:
    """Give ``path`` and everything below it an ACL only ``user:password`` (digest) can use."""
    with connected(hosts, ZkSecurity(auth=("digest", f"{user}:{password}"))) as admin:
        acl = [make_digest_acl(user, password, all=True)]

        def walk(p: str) -> None:
            for child in admin.get_children(p):
                walk(f"{p}/{child}")
            admin.set_acls(p, acl)

        walk(path)
