"""Hostile record classes about size and cost: deep nesting, huge maps and numbers, unicode, oversize records,
wrong topics, backtracking regexps and costly CEL."""

from __future__ import annotations

import itertools
from typing import Any

from tests.faults.hostile_records import (
    ALL,
    BIG,
    CLAIM,
    DEC,
    HUGE_LABELS,
    NONE,
    SET_LABEL,
    TOO_LARGE_BYTES,
    VAL,
    C,
    R,
    S,
    T,
    _Builder,
    by_cpu,
    cel,
    cluster,
    encode,
    event,
    hole,
    labels,
    placement,
    predicate,
    submission,
)
from topics.names import TopicRole


def deep_nesting(b: _Builder) -> None:
    """An unknown field nested hundreds or thousands of levels deep: refused before it reaches any state."""
    for depth, arrays in itertools.product((300, 1000, 5000), (False, True)):
        opening, closing = (b"[", b"]") if arrays else (b'{"deeper":', b"}")
        deep = opening * depth + b"1" + closing * depth
        variant = f"{'arrays' if arrays else 'objects'}-{depth}"
        p = placement("hostile", "deep", {"x-unknown": hole("deep")})
        raw = encode(event("placement.applied", p), deep=deep)
        b.bad(variant, S, "Placement/hostile/deep", raw, r"nest|depth|deep|recursion", DEC, times=2)
        mc = cluster("hc1", {SET_LABEL: "hostile"})
        raw = encode(event("managedcluster.applied", {**mc, "status": {**mc["status"], "x": hole("deep")}}), deep=deep)
        b.bad(f"cluster-{variant}", C, "ManagedCluster/hc1", raw, r"nest|depth|deep|recursion", DEC)
    for depth in (5, 12):  # as deep as upstream objects go: accepted, the unknown field kept
        nested: Any = 1
        for _ in range(depth):
            nested = {"deeper": nested}
        b.placement(f"objects-{depth}", "hostile", {"x-unknown": nested}, ALL)


def huge_labels(b: _Builder) -> None:
    """100,000-entry maps where users put labels: legal, under 1 MiB, and must not take long."""
    b.placement("match-100k-labels", "weird", predicate(labelSelector=labels(**HUGE_LABELS)), frozenset({"huge"}))
    b.placement("placement-100k-labels", "hostile", {}, ALL, labels=HUGE_LABELS)
    exists = [{"key": k, "operator": "Exists"} for k in itertools.islice(HUGE_LABELS, 20_000)]
    b.placement("20k-expressions", "weird", predicate(labelSelector={"matchExpressions": exists}), frozenset({"huge"}))
    b.app("application-100k-tags", "bob", [], "root.analytics", tags=HUGE_LABELS)


def huge_numbers(b: _Builder) -> None:
    """Numbers JSON can spell but no int32 (or double) holds, and words that look like numbers."""
    key, reason = "Placement/hostile/numbers", r"weight|JSON|number|infinit|integer"
    weighted = event("placement.applied", placement("hostile", "numbers", by_cpu(hole("n"))))
    literal = {"1e400": b"1e400", "-1e400": b"-1e400", "2^200": str(2**200).encode(), "2^64": str(2**64).encode(),
               "-2^200": str(-(2**200)).encode(), "NaN": b"NaN", "Infinity": b"Infinity", "-Infinity": b"-Infinity",
               "0x10": b"0x10", "+5": b"+5", "01": b"01", "1_000": b"1_000"}  # fmt: skip
    for variant, text in literal.items():
        b.bad(f"weight-{variant}", S, key, encode(weighted, n=text), reason, None, times=3)
    for word in ("NaN", "Infinity", "-Infinity", "1e400", "9" * 400, "2147483648"):
        value = event("placement.applied", placement("hostile", "numbers", by_cpu(word)))
        b.bad(f"weight-string-{word[:12]}", S, key, value, r"weight", VAL, times=2)
    scores = [{"name": "cpu", "value": hole("n")}]
    score = {"metadata": {"name": "cpu", "namespace": "hc1"}, "status": {"scores": scores}}
    for variant, text in (("1e400", b"1e400"), ("2^200", str(2**200).encode()), ("NaN", b"NaN")):
        raw = encode(event("addonplacementscore.applied", score), n=text)
        b.bad(f"addon-score-{variant}", C, "AddOnPlacementScore/hc1/cpu", raw, r"value|JSON|number|infinit", None)
    good = [("minus-zero", b"-0", None), ("minus-zero-float", b"-0.0", None), ("underflow-1e-400", b"1e-400", None),
            ("int32-max", str(2**31 - 1).encode(), {"hc4"}), ("int32-min", str(-(2**31)).encode(), {"hc1"}),
            ("one", b"1", {"hc4"})]  # fmt: skip  # a weight of 0 ties every cluster: any one may win
    for variant, text, clusters in good:
        for _ in range(3):
            name = b.unique(f"weight-{variant}")
            raw = encode(event("placement.applied", placement("hostile", name, by_cpu(hole("n"), 1))), n=text)
            chosen = None if clusters is None else frozenset(clusters)
            b.placement(f"weight-{variant}", "hostile", {}, chosen, name, raw)


def unicode_oddities(b: _Builder) -> None:
    """Lone surrogates (refused: no UTF-8 form exists), and NUL, bidi overrides, non-NFC forms, emoji (valid JSON
    strings: accepted and decided like any other name)."""
    for variant, escape in (("high", b"\\ud800"), ("low", b"\\udc00"), ("high-then-letter", b"\\ud800\\u0041"),
                            ("reversed-pair", b"\\udc00\\ud800")):  # fmt: skip
        raw = encode(event("placement.applied", placement("hostile", hole("s"))), s=b'"x' + escape + b'"')
        b.bad(f"lone-surrogate-{variant}", S, "Placement/hostile/x", raw, r"surrogate|JSON|unicode|utf", DEC, times=3)
        raw = encode(event("application.submitted", submission("u", hole("s"), [])), s=b'"a' + escape + b'"')
        b.bad(f"lone-surrogate-user-{variant}", S, "Application/default", raw, r"surrogate|JSON|unicode|utf", DEC)
    names = {
        "nul": "nul\u0000name", "rtl-override": "\u202egnp.exe", "bidi-isolates": "a\u2066b\u2069c",
        "nfd": "cafe\u0301", "nfc": "caf\u00e9", "hangul-jamo": "\u1100\u1161", "emoji": "\U0001f984-unicorn",
        "zwj-family": "\U0001f468\u200d\U0001f469\u200d\U0001f467", "bom": "\ufeffbom", "noncharacter": "x\uffff",
        "zero-width": "a\u200bb", "combining-pile": "z" + "\u0301" * 200, "private-use": "\U000f0000",
        "newline": "line\nbreak", "ansi-escape": "\u001b[31mred",
    }  # fmt: skip
    for variant, name in names.items():
        b.placement(f"name-{variant}", "hostile", {}, ALL, name=name)
        b.placement(f"namespace-{variant}", name, {}, NONE, name="p")  # no binding there: decided, no clusters
        b.app(f"user-{variant}", name, [], "root.analytics")
        b.app(f"user-with-groups-{variant}", name, ["dev"], "root.analytics")
        b.app(f"application-id-{variant}", "bob", [], "root.analytics", app=f"app-{name}-{variant}")
        mc = f"w-{variant}-{name}"
        value = event("managedcluster.applied", cluster(mc, {SET_LABEL: "weird", "note": name}))
        b.accepted(f"cluster-{variant}", C, f"ManagedCluster/{mc}", value)
    b.placement("weird-set", "weird", {}, None)


def oversize(b: _Builder) -> None:
    """500 KB names and values (decided), and records whose dead letter must be cut to fit 1 MiB."""
    big = "n" * BIG
    b.placement("500KB-placement-name", "hostile", {}, ALL, name=big)
    b.app("500KB-user", "u" * BIG, [], "root.analytics")
    b.app("500KB-user-with-groups", "u" * BIG, ["dev"])
    b.app("500KB-application-id", "bob", [], "root.analytics", app="a" * BIG + "-id")
    # past cel-go's 100,000 code points an expression does not compile: the placement is Misconfigured
    b.placement("500KB-cel-string", "hostile", cel(f"'{'c' * BIG}'.size() > 0"), NONE)
    value = event("managedcluster.applied", cluster("big-label", {"blob": "v" * BIG}))
    b.accepted("500KB-label-value", C, "ManagedCluster/big-label", value)
    key = f"Placement/hostile/{big}"
    value = event("placement.applied", placement("hostile", "m" * (BIG - 10)))
    b.bad("500KB-name-key-mismatch", S, key, value, r"does not match", VAL)
    value = event("", placement("hostile", big), type="placement.applied.v7")
    b.bad("500KB-name-unknown-version", S, key, value, r"version", VAL)
    value = event("placement.applied", placement("hostile", "too-large", annotations={"blob": "x" * TOO_LARGE_BYTES}))
    b.bad("2MiB-value", S, "Placement/hostile/too-large", value, r"bytes|large|size", DEC)


def wrong_topic(b: _Builder) -> None:
    """Valid events sent to a topic they do not belong on."""
    p = event("placement.applied", placement("hostile", "topic"))
    mc = event("managedcluster.applied", cluster("hc1", {SET_LABEL: "hostile"}))
    pk = "Placement/hostile/topic"
    cases: list[tuple[str, TopicRole, str, dict[str, Any]]] = [
        ("placement-on-cluster-status", C, pk, p),
        ("placement-on-taints", T, "hc1", p),
        ("placement-on-recommendations", R, pk, p),
        ("cluster-on-submissions", S, "ManagedCluster/hc1", mc),
        ("cluster-on-submissions-placement-key", S, pk, mc),
        ("taints-on-cluster-status", C, "ManagedCluster/hc1", event("cluster.taints.updated", {"cluster": "hc1"})),
        ("submission-on-taints", T, "hc1", event("application.submitted", submission("t", "b", []))),
        ("decision-on-submissions", S, pk, event("placement.decided", {"namespace": "hostile", "name": "topic"})),
        ("request-on-recommendations", R, "PlacementRule/hostile/topic", event("candidates.proposed", {})),
        ("recommendation-on-submissions", S, "PlacementRule/hostile/topic", event("recommendation.posted", {})),
    ]
    for variant, topic, key, value in cases:
        b.bad(variant, topic, key, value, r"belong|topic|subject kind|cannot be sent", VAL, times=5)


def regex_queue(b: _Builder) -> None:
    """Submissions whose user or group sends the filters of hostile_queues.yaml into catastrophic backtracking."""
    for n in (24, 32, 40, 48, 64, 100, 1000, 20_000):
        evil = "a" * n + "-"
        b.app(f"user-{n}a-dash", evil, [])
        b.app(f"user-{n}a-dash-groups", evil, ["dev"], "root.analytics")
        b.app(f"group-{n}a-dash", "bob", [evil], "root.analytics")
        b.app(f"user-{n}a", "a" * n, [])
        b.app(f"group-{n}a", "bob", ["a" * n])
        b.app(f"both-{n}a-dash", evil, [evil, "ops"])


def regex_cel(b: _Builder) -> None:
    """CEL regexps that backtrack catastrophically in a backtracking engine; RE2 answers at once."""
    for n in (28, 36, 48):
        evil = "a" * n + "!"
        cases = [
            ("matches", f"'{evil}'.matches('(a+)+$')", NONE),
            ("not-matches", f"!'{evil}'.matches('(a+)+$')", ALL),
            ("find", f"'{evil}'.find('(a+)+$') == ''", ALL),
            ("find-all", f"'{evil}'.findAll('(a+)+$').size() == 0", ALL),
            ("alternation", f"'{evil}'.matches('^(a|aa)+$')", NONE),
            ("label", f"(managedCluster.metadata.labels.env + '{evil}').matches('(a+)+$')", NONE),
            ("label-alternation", f"!(managedCluster.metadata.labels.region + '{evil}').matches('(a|a)+$')", ALL),
            ("plain", f"'{'a' * n}'.matches('(a+)+$')", ALL),
            ("prod", "managedCluster.metadata.labels.env.matches('^(p|pr|pro|prod)+$')", frozenset({"hc1", "hc2"})),
        ]
        for variant, text, clusters in cases:
            b.placement(f"{variant}-{n}", "hostile", cel(text), clusters)


def costly_cel(b: _Builder) -> None:
    """Expressions upstream stops at its cost limit (so: no match), and cheap ones it must still run."""
    big, mid, small = ("[" + ", ".join(map(str, range(n))) + "]" for n in (1000, 300, 30))
    replaces = "'a'" + ".replace('a', 'aaaaaaaaaa')" * 12
    octuple = ".map(s, s + s + s + s + s + s + s + s)"
    runaway = [
        ("nested-exists-1000", f"{big}.exists(x, {big}.exists(y, x * y < 0))"),
        ("nested-all-1000", f"{big}.all(x, {big}.all(y, x + y >= 0))"),
        ("nested-map-1000", f"{big}.map(x, {big}.map(y, x + y)).size() == 0"),
        ("triple-exists-300", f"{mid}.exists(x, {mid}.exists(y, {mid}.exists(z, x + y + z < 0)))"),
        ("replace-chain-12", f"{replaces}.size() < 0"),
        ("replace-chain-12-true", f"{replaces}.size() > 0"),
        ("string-octupling", f"['a']{octuple * 10}[0].size() < 0"),
        ("nested-parentheses-2000", "(" * 2000 + "true" + ")" * 2000),
    ]
    for variant, text in runaway:
        for _ in range(2):
            b.placement(variant, "hostile", cel(text), NONE)
    cheap = [
        ("small-all", "[1, 2, 3].all(x, x > 0)", ALL),
        ("nested-all-30", f"{small}.all(x, {small}.all(y, x + y >= 0))", ALL),
        ("short-replace-chain", "'a'.replace('a', 'aa').replace('a', 'aa').size() == 4", ALL),
        ("claims", f"managedCluster.status.clusterClaims.exists(c, c.name == '{CLAIM}' && c.value == 'AWS')",
         frozenset({"hc1", "hc3"})),
    ]  # fmt: skip
    for variant, text, clusters in cheap:
        for _ in range(2):
            b.placement(variant, "hostile", cel(text), clusters)
