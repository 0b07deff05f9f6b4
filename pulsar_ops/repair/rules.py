"""The eligibility conditions the kinds' rules share with the audit's SQL, or that need more than one kind. Pure.

A kind's rule calls them on the snapshot's facts (plan) and on facts re-read at mark and at delete (apply), so
an edited plan can only ask for less than they allow. An unknown fact (a failed read, a value that does not
decode, a parameter the plan does not record) is never permission. The per-condition table: ``docs/repair.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pulsar_ops.errors import DecodeError
from pulsar_ops.formats.ledger_kind import ledger_kind
from pulsar_ops.formats.names import parse_ml_name, parse_topic
from pulsar_ops.formats.policies import in_bundle, topic_hash
from pulsar_ops.pulsar_names import (
    NAMESPACE_EVENTS_LOCAL_NAME,
    is_system_cursor,
    system_path_reason,
    system_topic_reason,
)
from pulsar_ops.repair.facts import (
    MIB,
    SNAPSHOT_SAYS,
    LedgerNow,
    ListedLedger,
    Ownership,
    Refusal,
    Retention,
    RetentionPair,
    RuleParams,
    TopicNow,
)

__all__ = ["LedgerNow", "ListedLedger", "Retention", "RetentionPair", "RuleParams", "TopicNow"]

# The kinds of orphan ledger a plan may delete (the audit reports the others, never plans them).
PLANNABLE_LEDGER_KINDS = frozenset({"data", "cursor", "schema", "compacted", "bucket"})


def plannable_ledger_kinds_sql() -> str:
    """:data:`PLANNABLE_LEDGER_KINDS` as a SQL list (``${plannable_ledger_kinds}`` in orphan_ledger.sql)."""
    return "(" + ", ".join(f"'{k}'" for k in sorted(PLANNABLE_LEDGER_KINDS)) + ")"


# --- delete-ledger-metadata --------------------------------------------------------------------------------


def ledger_delete_rule(f: LedgerNow, *, min_age_ms: int | None, now_ms: int) -> str | None:
    """Why ledger ``f`` must not be deleted (None: the rule allows it)."""
    lid = f.ledger_id
    if f.custom is None:
        return f"ledger {lid}: its metadata does not decode; its owner is unknown, not evidence of an orphan"
    app, component = f.custom.get("application"), f.custom.get("component")
    kind = ledger_kind(app, component, f.custom.get("pulsar/cursor") is not None)
    if kind not in PLANNABLE_LEDGER_KINDS:
        return (
            f"ledger {lid} is {kind} by its own custom metadata (application={app!r}, component={component!r}); "
            f"only {', '.join(sorted(PLANNABLE_LEDGER_KINDS))} ledgers are ever deleted"
        )
    own = _own_ledger(f.custom.get("pulsar/managed-ledger"))
    if own is not None:
        return f"ledger {lid} belongs to Pulsar's own managed ledger ({own}); it is never deleted"
    if min_age_ms is None:
        return "the plan records no min-age: re-plan from an audit that records its parameters"
    age = orphan_age_ms(f.ctime_ms, f.metadata_ctime_ms, now_ms)
    if age is None:
        return f"ledger {lid}: its znode's creation time is unknown; its age cannot be told"
    if is_orphan_too_young(age, min_age_ms):
        source = orphan_ctime_source(f.ctime_ms, f.metadata_ctime_ms)
        return (
            f"ledger {lid} was created {age // 1000} s ago ({source} ctime), less than the min-age "
            f"{min_age_ms // 1000} s"
        )
    if f.watermark is None or lid >= f.watermark:
        return Refusal(
            f"ledger {lid} is not below the highest ledger id referenced in the tree ({f.watermark}): "
            "it may be in flight",
            SNAPSHOT_SAYS,
        )
    if f.references_unknown is not None:
        return Refusal(f.references_unknown, SNAPSHOT_SAYS)
    if f.referenced_by is not None:
        return Refusal(f"ledger {lid} is referenced by {f.referenced_by}", SNAPSHOT_SAYS)
    return None


def _own_ledger(ml_name: str | None) -> str | None:
    """Why the managed ledger a ledger's custom metadata names is Pulsar's own (None: it is not, or unnamed)."""
    if not ml_name:
        return None
    try:
        ml = parse_ml_name(ml_name)
    except DecodeError:
        return None
    return system_topic_reason(ml.namespace, ml.local_name)


# --- the orphan ledger's age: one definition, for the rule and (rendered) for orphan_ledger.sql -------------------
# What min-age protects against is a ledger in flight: a broker's LedgerCreateOp has created its metadata znode and
# the managed ledger has not yet recorded it in its list (ManagedLedgerImpl stores the list after the create
# completes). That window opens when the znode is created, and the znode's ctime is exactly that instant, stamped by
# the ZooKeeper leader (PrepRequestProcessor: the TxnHeader time, Time.currentWallTime(); DataTree.createNode keeps
# it as ctime), one clock for every ledger, present for every metadata format and every client setting. The
# metadata's own ctime is optional (v3 or v2 text only, written only with storeSystemTimeAsLedgerCreationTime, off
# by default and never set by Pulsar's BookKeeperClientFactoryImpl; BookKeeper itself then takes the metadata
# store's ctime: LedgerMetadataSerDe.parseVersion3Config) and stamped by the broker's clock BEFORE the create
# (LedgerCreateOp: the builder's withCreationTime, then generateLedgerId, then createLedgerMetadata). So on
# consistent clocks it is never later than the znode's ctime; when it is later, the broker's clock runs ahead of
# ZooKeeper's and one of the two is wrong: the age is then counted from the later stamp. A metadata ctime can only
# shorten the age (withhold a plan), never lengthen it. The age is unknown without the znode's ctime.
def orphan_created_ms(znode_ctime_ms: int | None, metadata_ctime_ms: int | None) -> int | None:
    """The instant an orphan ledger's age is counted from: its metadata znode's ctime, or its metadata's own ctime
    when that is later (None: the znode's ctime is unknown). ``metadata_ctime_ms`` may be the snapshot's
    ``ctime_ms`` (the metadata's ctime, else the znode's): the result is the same."""
    if znode_ctime_ms is None or znode_ctime_ms <= 0:
        return None
    if metadata_ctime_ms is not None and metadata_ctime_ms > znode_ctime_ms:
        return metadata_ctime_ms
    return znode_ctime_ms


def orphan_ctime_source(znode_ctime_ms: int | None, metadata_ctime_ms: int | None) -> str:
    """Which stamp :func:`orphan_created_ms` counts from: ``metadata`` when it is the later one, else ``znode``."""
    later = znode_ctime_ms is not None and metadata_ctime_ms is not None and metadata_ctime_ms > znode_ctime_ms
    return "metadata" if later else "znode"


def orphan_age_ms(znode_ctime_ms: int | None, metadata_ctime_ms: int | None, now_ms: int) -> int | None:
    """An orphan ledger's age at ``now_ms`` (None: unknown)."""
    created = orphan_created_ms(znode_ctime_ms, metadata_ctime_ms)
    return None if created is None else now_ms - created


def is_orphan_too_young(age_ms: int | None, min_age_ms: int) -> bool:
    """Younger than min-age, or of unknown age (an unknown age is never old enough)."""
    return age_ms is None or age_ms < min_age_ms


def orphan_created_sql(row: str) -> str:
    """:func:`orphan_created_ms` over ``row`` (a ``stg_bk_ledgers`` row: znode_ctime_ms, metadata_ctime_ms)."""
    z, m = f"{row}.znode_ctime_ms", f"{row}.metadata_ctime_ms"
    return f"(CASE WHEN {z} > 0 THEN CASE WHEN {m} > {z} THEN {m} ELSE {z} END END)"


def orphan_ctime_source_sql(row: str) -> str:
    """:func:`orphan_ctime_source` over ``row`` (znode_ctime_ms, metadata_ctime_ms)."""
    z, m = f"{row}.znode_ctime_ms", f"{row}.metadata_ctime_ms"
    return f"(CASE WHEN {m} > {z} THEN 'metadata' ELSE 'znode' END)"


def orphan_too_young_sql(row: str) -> str:
    """:func:`is_orphan_too_young` over ``row`` (age_ms, min_age_ms)."""
    return f"({row}.age_ms IS NULL OR {row}.age_ms < {row}.min_age_ms)"


# --- retention: trim-unloaded and load-topic -----------------------------------------------------------------


def resolve_retention(
    topic: RetentionPair | None,
    base_topic: RetentionPair | None,
    namespace: RetentionPair | None,
    defaults: RetentionPair,
) -> Retention:
    """The retention a broker applies to a topic, as the audit resolves it (expired_retention_unloaded.sql,
    ``retention``): a topic policy (the partition's own, else its partitioned topic's; local scope before
    global), else the namespace's ``retention_policies``, each null dimension taking the broker default."""
    chosen = topic if topic is not None else base_topic
    if chosen is not None:
        t, s = chosen
        return Retention(t if t is not None else defaults[0], s if s is not None else defaults[1], "topic")
    if namespace is not None and (namespace[0] is not None or namespace[1] is not None):
        t, s = namespace
        return Retention(t if t is not None else defaults[0], s if s is not None else defaults[1], "namespace")
    return Retention(defaults[0], defaults[1], "broker")


def topic_policy_pair(local: RetentionPair | None, global_: RetentionPair | None) -> RetentionPair | None:
    """One topic's retention from its local- and global-scope topic policies (each dimension: local first);
    None when neither scope sets either dimension."""
    rows = [r for r in (local, global_) if r is not None and (r[0] is not None or r[1] is not None)]
    if not rows:
        return None
    lt = local[0] if local is not None else None
    ls = local[1] if local is not None else None
    gt = global_[0] if global_ is not None else None
    gs = global_[1] if global_ is not None else None
    return (lt if lt is not None else gt, ls if ls is not None else gs)


# --- the per-ledger predicates of the first-trim rule: Python, and the same rendered into the audit's SQL ---------
# sql/detect/expired_retention_unloaded.sql writes ${trim_candidate:L:S}, ${retention_expired:W:P} and
# ${at_first_trim:W} (expanded by pulsar_ops.audit.sql_files); first_trim_ids below calls the Python twins, and
# tests/unit/repair/test_retention_rule_sql.py runs both on generated topics.
MINUTE_MS = 60_000


def is_trim_candidate(li: ListedLedger, is_last: bool, slowest: tuple[int, int] | None) -> bool:
    """Not offloaded-and-deleted; the open ledger only when BookKeeper shows entries; before the slowest cursor's
    mark-delete ledger, or that ledger when fully consumed (no cursor with a position: every ledger)."""
    if li.bookkeeper_deleted:
        return False
    if is_last and (li.bk_last_entry_id if li.bk_last_entry_id is not None else -1) < 0:
        return False
    if slowest is None:
        return True
    md_ledger, md_entry = slowest
    return li.ledger_id < md_ledger or (
        li.ledger_id == md_ledger and li.entries is not None and md_entry == li.entries - 1
    )


def trim_candidate_sql(ledger: str, slowest: str) -> str:
    """:func:`is_trim_candidate` over ``ledger`` (an int_ledgers row) and ``slowest`` (md_ledger, md_entry)."""
    li, s = f"{ledger}.", f"{slowest}."
    return (
        f"(NOT {li}bookkeeper_deleted"
        f" AND (NOT {li}is_last OR coalesce({li}bk_last_entry_id, CAST(-1 AS BIGINT)) >= 0)"
        f" AND ({s}md_ledger IS NULL OR {li}ledger_id < {s}md_ledger"
        f" OR ({li}ledger_id = {s}md_ledger AND {s}md_entry = {li}entries - 1)))"
    )


def is_retention_expired(timestamp_ms: int | None, rt: int | None, by_size: bool, now_ms: int) -> bool:
    """Older than the retention time (-1: never), or beyond the retention size (``by_size``)."""
    by_time = rt is not None and rt >= 0 and timestamp_ms is not None and now_ms - timestamp_ms > rt * MINUTE_MS
    return by_time or by_size


def retention_expired_sql(row: str, params: str) -> str:
    """:func:`is_retention_expired` over ``row`` (timestamp_ms, rt, by_size) and ``params`` (now_ms)."""
    r, p = f"{row}.", f"{params}."
    return f"coalesce(({r}rt >= 0 AND {p}now_ms - {r}timestamp_ms > {r}rt * {MINUTE_MS}) OR {r}by_size, false)"


def is_at_first_trim(is_last: bool, rt: int | None, by_size: bool) -> bool:
    """A load re-stamps the open ledger with the load time (``ManagedLedgerImpl.initialize``): the first trim
    after it frees that ledger only when the retention time is 0 or the size rule takes it."""
    return not is_last or rt == 0 or by_size


def at_first_trim_sql(row: str) -> str:
    """:func:`is_at_first_trim` over ``row`` (is_last, rt, by_size)."""
    r = f"{row}."
    return f"(NOT {r}is_last OR {r}rt = 0 OR {r}by_size)"


def first_trim_ids(
    ledgers: Sequence[ListedLedger],
    slowest: tuple[int, int] | None,
    retention: Retention,
    now_ms: int,
) -> tuple[int, ...]:
    """The ledgers the broker's first trim after a load removes (the audit's ``first_trim_ledger_ids``), in list
    order: the expired prefix of the trim candidates (retention size counted from the newest; -1: infinite), each
    in the first trim by :func:`is_at_first_trim` (``ManagedLedgerImpl.internalTrimLedgers``)."""
    rt, rs = retention.time_minutes, retention.size_mb
    total = sum(li.size or 0 for li in ledgers)
    last = len(ledgers) - 1
    cands = [(idx, li) for idx, li in enumerate(ledgers) if is_trim_candidate(li, idx == last, slowest)]
    out: list[int] = []
    running = 0
    for idx, li in cands:
        running += li.size or 0
        by_size = rs is not None and rs >= 0 and total - running >= rs * MIB
        if not is_retention_expired(li.timestamp_ms, rt, by_size, now_ms):
            break  # the retention cut is a prefix
        if is_at_first_trim(idx == last, rt, by_size):
            out.append(li.ledger_id)
    return tuple(out)


def _retention_problem(t: TopicNow) -> str | None:
    if t.problem is not None:
        return t.problem
    if t.own is not None:
        return f"the managed ledger is Pulsar's own ({t.own}); no action touches it"
    if t.retention is None:
        return "the topic's retention is unknown (the plan records no broker defaults); re-plan"
    return None


def trim_rule(t: TopicNow, removed: Sequence[int], now_ms: int) -> str | None:
    """Why a ``trim-unloaded`` may not remove ``removed`` from the list (None: it may). It may remove the
    first-trim set or a subset of it, never leaving the list empty: upstream's trim
    (``ManagedLedgerImpl.internalTrimLedgers``) never removes the ledger being written to, and after a load that
    is a new ledger, so a trimmed list always holds one; an offline rewrite cannot create it."""
    why = _retention_problem(t) or _offline_problem(t)
    if why is not None:
        return why
    assert t.retention is not None
    if not removed:
        return "the action removes no ledger"
    listed = [li.ledger_id for li in t.ledgers]
    missing = [i for i in removed if i not in listed]
    if missing:
        return f"ledger {missing[0]} is not listed now"
    allowed = set(first_trim_ids(t.ledgers, t.slowest, t.retention, now_ms))
    beyond = sorted(set(removed) - allowed)
    if beyond:
        r = t.retention
        return (
            f"ledger {beyond[0]} is not in the first-trim set {sorted(allowed)} re-computed now (retention "
            f"{r.time_minutes} min / {r.size_mb} MB from the {r.source}, slowest cursor at {t.slowest})"
        )
    if len(set(removed)) >= len(listed):
        return "the rewrite would leave the ledger list empty; upstream's trim always keeps the current ledger"
    return None


def topic_policies_reason(namespace: str) -> str:
    """The ``topic_policies_unknown`` fact of a topic in ``namespace`` when the namespace has ``__change_events``."""
    return (
        f"namespace {namespace} has {NAMESPACE_EVENTS_LOCAL_NAME}, where SystemTopicBasedTopicPoliciesService keeps "
        "topic-level policies that no scrape reads"
    )


def _offline_problem(t: TopicNow) -> str | None:
    """What an offline trim cannot know that a load would (a load lets the broker apply it): topic-level policies
    kept outside ZooKeeper, and bundle ownership kept outside ZooKeeper."""
    if t.topic_policies_unknown is not None:
        return (
            f"the topic-level retention is unknown ({t.topic_policies_unknown}); an offline trim could delete what a "
            "topic policy retains: load the topic instead (its broker applies the real policy)"
        )
    if t.ownership_unknown is not None:
        return (
            f"bundle ownership is unknown ({t.ownership_unknown}); a broker may have the topic open: "
            "load the topic instead"
        )
    return None


def keep_current_ledger(ledgers: Sequence[ListedLedger], ids: Sequence[int]) -> list[int]:
    """``ids`` without the list's last ledger when they would remove every listed ledger: the largest subset a
    ``trim-unloaded`` may remove (:func:`trim_rule` never lets a rewrite empty the list)."""
    listed = [li.ledger_id for li in ledgers]
    if listed and set(listed) <= set(ids):
        return [i for i in ids if i != listed[-1]]
    return list(ids)


def load_topic_rule(t: TopicNow, expect_trimmed: Sequence[int], now_ms: int) -> str | None:
    """Why a ``load-topic`` must not be asked for (None: it may): the topic is still expired per the rule (its
    first-trim set is not empty) and every ledger the action predicts is in that set."""
    why = _retention_problem(t)
    if why is not None:
        return why
    assert t.retention is not None
    allowed = first_trim_ids(t.ledgers, t.slowest, t.retention, now_ms)
    if not allowed:
        return "nothing is past retention now: a load would trim nothing"
    beyond = sorted(set(expect_trimmed) - set(allowed))
    if beyond:
        return f"ledger {beyond[0]} is not in the first-trim set {sorted(allowed)} re-computed now"
    return None


# --- "the topic is not loaded": trim-unloaded, load-topic (plan) and drop-missing-ledger -------------------------


def topic_load_problem(topic: str, o: Ownership) -> str | None:
    """Why the snapshot says ``topic`` may be loaded, or cannot tell (None: it is not loaded). Loaded: a broker
    lists it, or an ownership covers its hash (NamespaceBundle.includes); unknown: its namespace's bundles do not
    decode, its service unit is in flight, or an unowned bundle proves nothing (ownership not in /namespace, or
    /namespace not read completely, and /service_unit_state not the truth) and not every broker listed its topics.
    The audit's twin (expired_retention_unloaded.sql's ``unloaded``, its ``owned = false`` rows) is pinned to this by
    tests/unit/repair/test_topic_loaded_rule.py, a topic a broker lists without a bundle and an ownership covering
    the hash that is not the bundle the policies' boundaries compute included. An unknown is never "not loaded"."""
    if topic in o.loaded_topics:
        return f"{topic} is loaded (a broker reported {topic} loaded)"
    try:
        ns = parse_topic(topic).namespace
    except DecodeError as e:
        return f"topic {topic}: {e.reason}"
    if ns in o.bundles_unknown:
        return f"the bundles of {ns} are unknown (its policies do not decode): whether {topic} is loaded is unknown"
    h = topic_hash(topic)
    for lo, hi in o.owned.get(ns, ()):
        if in_bundle(h, lo, hi):
            return f"{topic} is loaded (its bundle 0x{lo:08x}_0x{hi:08x} is owned)"
    for lo, hi in o.in_flight.get(ns, ()):
        if in_bundle(h, lo, hi):
            return f"{topic}'s bundle 0x{lo:08x}_0x{hi:08x} is neither owned nor free in /service_unit_state"
    if o.unowned_unknown is not None and not o.all_answered:
        return f"{o.unowned_unknown}, and not every broker listed its topics: whether {topic} is loaded is unknown"
    return None


# --- drop-missing-ledger -------------------------------------------------------------------------------------


def may_dangle(ledger_id: int, bookkeeper_deleted: bool) -> bool:
    """Whether a reference's ledger with no metadata is missing (lost): a real id (a negative one is a sentinel,
    such as a ``-1`` compacted ledger) that is not offloaded with its BookKeeper copy deleted on purpose
    (``OffloadContext.bookkeeperDeleted``: its data is in tiered storage and its metadata gone by design,
    ``ManagedLedgerImpl.cleanupOffloaded``). dangling_ledger.sql's twin is rendered from :func:`may_dangle_sql`."""
    return ledger_id >= 0 and not bookkeeper_deleted


def may_dangle_sql(row: str) -> str:
    """:func:`may_dangle` over ``row`` (ledger_id, bookkeeper_deleted): ``${may_dangle:ROW}``."""
    return f"({row}.ledger_id >= 0 AND NOT {row}.bookkeeper_deleted)"


def drop_missing_rule(
    dropped: Sequence[int], listed: Sequence[tuple[int, bool]] | None, present: Sequence[str]
) -> str | None:
    """Why a ``drop-missing-ledger`` may not drop ``dropped`` (None: it may): each id is listed now, a ledger whose
    absence is a loss (:func:`may_dangle`; ``listed``: ``(id, bookkeeper_deleted)`` per list entry) and its
    metadata is absent now under every path it may have (``present``: those of the paths that exist)."""
    if listed is None:
        return "the managed-ledger info is gone or does not decode; its list is unknown"
    if not dropped:
        return "the action drops no ledger"
    entries = dict(listed)
    unlisted = [i for i in dropped if i not in entries]
    if unlisted:
        return f"ledger {unlisted[0]} is not listed now"
    kept = [i for i in dropped if not may_dangle(i, entries[i])]
    if kept:
        what = "is a sentinel id" if kept[0] < 0 else "is offloaded and its BookKeeper copy deleted by design"
        return f"ledger {kept[0]} {what}: its metadata's absence is no loss"
    if present:
        return f"{present[0]} exists: that ledger is not missing"
    if len(set(dropped)) >= len(listed):
        return "the rewrite would leave the ledger list empty"
    return None


# --- delete-subscription -------------------------------------------------------------------------------------


def system_subscription(subscription: str, cursor_path: str | None = None) -> str | None:
    """Why a subscription is Pulsar's own and never deleted (None: a user's): a system cursor (compaction,
    replication, deduplication, transactions), or (``cursor_path``, its znode) a cursor of a topic Pulsar creates
    for itself, such as ``__change_events`` (:mod:`pulsar_ops.pulsar_names`)."""
    if is_system_cursor(subscription):
        return Refusal(f"{subscription!r} is a system cursor; it is never deleted", "kind-not-plannable")
    own = system_path_reason(cursor_path) if cursor_path is not None else None
    if own is not None:
        return Refusal(f"{cursor_path} is a cursor of Pulsar's own ({own}); it is never deleted", "kind-not-plannable")
    return None


def subscription_rule(
    subscription: str,
    last_active_ms: int | None,
    mtime_ms: int | None,
    *,
    inactive_after_ms: int | None,
    now_ms: int,
    cursor_path: str | None = None,
) -> str | None:
    """Why a subscription must not be deleted (None: it may): a user cursor of a user topic
    (:func:`system_subscription`; ``cursor_path``, the cursor znode, names the topic) idle for longer than
    inactive-after, by its ``lastActive`` or else its znode's mtime (the audit's inactive-subscription rule)."""
    if cursor_path is None:
        return system_subscription(subscription) or "the cursor's znode is not named: its topic is unknown"
    system = system_subscription(subscription, cursor_path)
    if system is not None:
        return system
    if inactive_after_ms is None:
        return "the plan records no inactive-after: re-plan from an audit that records its parameters"
    active = subscription_active_ms(last_active_ms, mtime_ms)
    if active is None:
        return f"subscription {subscription!r}: its last activity is unknown"
    if not is_subscription_idle(active, inactive_after_ms, now_ms):
        return (
            f"subscription {subscription!r} was active {(now_ms - active) // 1000} s ago, within inactive-after "
            f"{inactive_after_ms // 1000} s"
        )
    return None


# The subscription's idleness, one definition: the rule above calls it, inactive_subscription.sql renders it
# (${subscription_active:ROW}, ${subscription_idle:ROW:PARAMS}).
def subscription_active_ms(last_active_ms: int | None, mtime_ms: int | None) -> int | None:
    """A cursor's last activity: its ``lastActive``, else its znode's mtime; None when that is not a time. A
    ``lastActive`` of 0 is not recorded, never "active in 1970": ManagedCursorImpl's recovery keeps its own
    (``info.getLastActive() != 0 ? info.getLastActive() : lastActive``), i.e. the cursor is active when opened."""
    active = last_active_ms if last_active_ms is not None else mtime_ms
    return active if active is not None and active > 0 else None


def is_subscription_idle(active_ms: int | None, inactive_after_ms: int, now_ms: int) -> bool:
    """Last active before ``now_ms - inactive_after_ms`` (an unknown activity is never idle)."""
    return active_ms is not None and active_ms < now_ms - inactive_after_ms


def subscription_active_sql(row: str) -> str:
    """:func:`subscription_active_ms` over ``row`` (last_active_ms, mtime_ms)."""
    a = f"coalesce({row}.last_active_ms, {row}.mtime_ms)"
    return f"(CASE WHEN {a} > 0 THEN {a} END)"


def subscription_idle_sql(row: str, params: str) -> str:
    """:func:`is_subscription_idle` over ``row`` (active_ms) and ``params`` (now_ms, inactive_after_ms)."""
    return f"coalesce({row}.active_ms < {params}.now_ms - {params}.inactive_after_ms, false)"


# --- delete-subtree ------------------------------------------------------------------------------------------


def system_subtree_rule(path: str) -> str | None:
    """Why a subtree may never be deleted as a leak: it is metadata of Pulsar's own tenants, namespaces or topics
    (:func:`pulsar_ops.pulsar_names.system_path_reason`), e.g. the transaction coordinator assign topic's
    partitioned metadata that initialize-cluster-metadata writes and whose partitions never get a managed ledger."""
    own = system_path_reason(path)
    if own is not None:
        return f"{path} is Pulsar's own metadata ({own}); it is never a leak"
    return None


# --- delete-subtree: the leak's age (besides its proof, pulsar_ops.repair.safety.prove_leak) ------------------


def leak_age_rule(root: str, newest_mtime_ms: int | None, *, min_age_ms: int | None, now_ms: int) -> str | None:
    """Why a leak subtree must not be deleted yet (None: old enough): its newest znode was modified less than
    min-age ago (something may still be writing it), or that time is unknown. The audit's twin, znode_leak.sql's
    blocker, is rendered from :func:`leak_too_young_sql` (``${leak_too_young:m}``)."""
    if min_age_ms is None:
        return "the plan records no min-age: re-plan from an audit that records its parameters"
    if newest_mtime_ms is None or newest_mtime_ms <= 0:
        return f"{root}: the modification time of its znodes is unknown; its age cannot be told"
    idle = now_ms - newest_mtime_ms
    if is_leak_too_young(idle, min_age_ms):
        return (
            f"{root} was modified {idle // 1000} s ago (newest znode mtime), less than the min-age "
            f"{min_age_ms // 1000} s: something may still be writing it"
        )
    return None


def is_leak_too_young(idle_ms: int, min_age_ms: int) -> bool:
    """Modified less than min-age ago."""
    return idle_ms < min_age_ms


def leak_too_young_sql(row: str) -> str:
    """:func:`is_leak_too_young` over ``row`` (idle_ms, min_age_ms)."""
    return f"{row}.idle_ms < {row}.min_age_ms"
