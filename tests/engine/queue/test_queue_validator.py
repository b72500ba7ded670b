"""The whole-configuration validator: every rule YuniKorn's validator has, with its message.

Each expected message below is the one yunikorn-core returns for the same file: `ParseAndValidateConfig`, or for
rows marked "built" the creation of the partition's queues (upstream prefixes those with `configured queue creation
failed:` and a newline; here the ACL message stands alone and the template one keeps the prefix on one line).
Messages of the YAML decoder (unknown keys, wrong types) are this service's own, with the line.
"""

from __future__ import annotations

import textwrap

import pytest

from engine.errors import QueueConfigError
from engine.queue.config import load_queue_config

VALID = "valid"
_ROOT_RESOURCES = "root queue must not have resource limits set"


def doc(body: str, name: str = "default") -> str:
    """A one-partition file; `body` is the partition's keys, written without indentation."""
    return f"partitions:\n  - name: {name}\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


def tree(queues: str, extra: str = "") -> str:
    """A partition whose root holds the given queue list (written at column 0)."""
    inner = textwrap.indent(textwrap.dedent(queues).strip("\n"), "      ")
    return doc(f"queues:\n  - name: root\n    queues:\n{inner}\n{textwrap.dedent(extra)}")


def verdict(text: str) -> str:
    """`valid`, or the configuration error."""
    try:
        load_queue_config(text, "queues.yaml")
    except QueueConfigError as exc:
        return str(exc)
    return VALID


_CASES: list[tuple[str, str, str]] = [
    # --- queue structure ------------------------------------------------------------------------------------
    ("no queues key", doc("placementrules: []"), "queue config is not set"),
    ("root max", doc("queues:\n  - name: root\n    resources: {max: {memory: 10}}"), _ROOT_RESOURCES),
    ("root guaranteed", doc("queues:\n  - name: root\n    resources: {guaranteed: {vcore: 1}}"), _ROOT_RESOURCES),
    ("root empty max map", doc("queues:\n  - name: root\n    resources: {max: {}}"), _ROOT_RESOURCES),
    ("root resources without maps", doc("queues:\n  - name: root\n    resources: {}"), VALID),
    ("inserted root, resources below", doc("queues:\n  - name: a\n    resources: {max: {memory: 1}}"), VALID),
    (
        "invalid queue name",
        tree("- name: dev.team"),
        "invalid queue name, max 64 characters consisting of "
        "alphanumeric characters and '-', '_', '#', '@', '/', ':' allowed",
    ),
    ("duplicate queue", tree("- name: a\n- name: A"), "duplicate child name found with name 'A', level 1"),
    # --- ACLs: admin before submit ---------------------------------------------------------------------------
    ("acl fields", tree("- name: a\n  submitacl: 'a b c'"), "multiple spaces found in ACL: 'a b c'"),
    (
        "admin first",
        tree("- name: a\n  submitacl: 'a b c'\n  adminacl: 'x y z'"),
        "multiple spaces found in ACL: 'x y z'",
    ),
    ("built: acl split on single spaces", tree("- name: a\n  submitacl: ' * '"), "multiple spaces found in ACL: ' * '"),
    # --- quantities ------------------------------------------------------------------------------------------
    ("memory: lots", tree("- name: a\n  resources: {max: {memory: lots}}"), "invalid quantity"),
    ("memory: 1.5", tree("- name: a\n  resources: {max: {memory: 1.5}}"), "invalid quantity"),
    ("milli memory", tree("- name: a\n  resources: {max: {memory: 1m}}"), "invalid suffix"),
    ("lower ki", tree("- name: a\n  resources: {max: {memory: 1ki}}"), "invalid suffix"),
    ("overflow", tree("- name: a\n  resources: {max: {memory: 8Ei}}"), "invalid quantity: overflow"),
    (
        "vcore overflow",
        tree("- name: a\n  resources: {max: {vcore: 9223372036854775807}}"),
        "invalid quantity: overflow",
    ),
    ("si and spaces", tree("- name: a\n  resources: {max: {memory: ' 10 Gi', vcore: 500m, pods: 5k}}"), VALID),
    # --- queue resources down the tree -----------------------------------------------------------------------
    (
        "guaranteed over max",
        tree("- name: a\n  resources: {guaranteed: {memory: 20}, max: {memory: 10}}"),
        "guaranteed resource map[memory:20] is larger than maximum resource map[memory:10] for queue a",
    ),
    (
        "vcore in millicores",
        tree("- name: a\n  resources: {guaranteed: {vcore: 2}, max: {vcore: 1, x: 1}}"),
        "guaranteed resource map[vcore:2000] is larger than maximum resource map[vcore:1000 x:1] for queue a",
    ),
    ("undefined type is unlimited", tree("- name: a\n  resources: {guaranteed: {gpu: 9}, max: {memory: 1}}"), VALID),
    (
        "child max over parent max",
        tree("- name: p\n  resources: {max: {memory: 10}}\n  queues:\n  - name: c\n    resources: {max: {memory: 20}}"),
        "max resource of parent map[memory:10] is smaller than maximum resource map[memory:20] for queue c",
    ),
    (
        "children guaranteed over parent guaranteed",
        tree(
            "- name: p\n  resources: {guaranteed: {memory: 10}}\n  queues:\n"
            "  - name: c1\n    resources: {guaranteed: {memory: 6}}\n"
            "  - name: c2\n    resources: {guaranteed: {memory: 6}}"
        ),
        "guaranteed resource of parent map[memory:10] is smaller than sum of guaranteed resources map[memory:12] "
        "of the children for queue p",
    ),
    (
        "children guaranteed over parent max",
        tree(
            "- name: p\n  resources: {max: {memory: 10}}\n  queues:\n"
            "  - name: c1\n    resources: {guaranteed: {memory: 6}}\n"
            "  - name: c2\n    resources: {guaranteed: {memory: 6}}"
        ),
        "max resource map[memory:10] is smaller than sum of guaranteed resources map[memory:12] of the children "
        "for queue p",
    ),
    (
        "grandchildren count through a parent without guarantee",
        tree(
            "- name: p\n  resources: {guaranteed: {memory: 5}}\n  queues:\n  - name: m\n    queues:\n"
            "    - name: c\n      resources: {guaranteed: {memory: 6}}"
        ),
        "guaranteed resource of parent map[memory:5] is smaller than sum of guaranteed resources map[memory:6] "
        "of the children for queue p",
    ),
    # --- maximum applications --------------------------------------------------------------------------------
    (
        "child apps over parent",
        tree("- name: p\n  maxapplications: 5\n  queues:\n  - name: c\n    maxapplications: 6"),
        "parent maxApplications must be larger than child maxApplications",
    ),
    (
        "child apps unset",
        tree("- name: p\n  maxapplications: 5\n  queues:\n  - name: c"),
        "maxApplications is either undefined or zero, which is not allowed when parent queue's maxApplications "
        "is defined",
    ),
    ("apps equal", tree("- name: p\n  maxapplications: 5\n  queues:\n  - name: c\n    maxapplications: 5"), VALID),
    # numbers are read as a YAML decoder reads them: hex, octal (`010` is 8), underscores, floats truncated
    *[
        (
            f"maxapplications {text}",
            tree(f"- name: p\n  maxapplications: 8\n  queues:\n  - name: c\n    maxapplications: {text}"),
            want,
        )
        for text, want in [
            ("0x10", "parent maxApplications must be larger than child maxApplications"),
            ("1_000", "parent maxApplications must be larger than child maxApplications"),
            ("1e3", "parent maxApplications must be larger than child maxApplications"),
            ("010", VALID),
            ("0b11", VALID),
            ("8.9", VALID),
            (
                ".5",
                "maxApplications is either undefined or zero, which is not allowed when parent queue's "
                "maxApplications is defined",
            ),
            ("-1", "maxapplications must be a non-negative integer (line 10)"),
            ("'5'", "maxapplications must be a non-negative integer (line 10)"),
        ]
    ],
    # --- one queue's limit list ------------------------------------------------------------------------------
    (
        "limit without names",
        tree("- name: a\n  limits:\n  - {limit: l1, maxapplications: 5}"),
        "empty user and group lists defined in limit '{l1 [] [] map[] 5}'",
    ),
    (
        "limit without names, resources shown",
        tree("- name: a\n  limits:\n  - {limit: l1, users: [], maxresources: {vcore: 1, memory: 2G}}"),
        "empty user and group lists defined in limit '{l1 [] [] map[memory:2G vcore:1] 0}'",
    ),
    (
        "limit user name",
        tree("- name: a\n  limits:\n  - {users: [1bad], maxapplications: 1}"),
        "invalid limit user name '1bad' in limit definition",
    ),
    (
        "limit group name",
        tree("- name: a\n  limits:\n  - {groups: [a@b], maxapplications: 1}"),
        "invalid limit group name 'a@b' in limit definition",
    ),
    (
        "limit user twice",
        tree("- name: a\n  limits:\n  - {users: [bob], maxapplications: 1}\n  - {users: [bob], maxapplications: 2}"),
        "duplicated user name 'bob', already exists",
    ),
    (
        "limit group twice",
        tree("- name: a\n  limits:\n  - {groups: [dev, dev], maxapplications: 1}"),
        "duplicated group name 'dev'",
    ),
    (
        "user after wildcard",
        tree("- name: a\n  limits:\n  - {users: ['*'], maxapplications: 1}\n  - {users: [bob], maxapplications: 1}"),
        "should not set no wildcard user bob after wildcard user limit",
    ),
    (
        "group after wildcard",
        tree(
            "- name: a\n  limits:\n  - {groups: [dev], maxapplications: 1}\n"
            "  - {groups: ['*'], maxapplications: 1}\n  - {groups: [appdev], maxapplications: 2}"
        ),
        "should not set no wildcard group appdev after wildcard group limit",
    ),
    (
        "only a wildcard group",
        tree("- name: a\n  limits:\n  - {groups: ['*'], maxapplications: 1}"),
        "should not specify only one group limit that is using the wildcard. There must be at least one limit "
        "with a group name defined ",
    ),
    (
        "wildcards last",
        tree(
            "- name: a\n  limits:\n  - {users: [bob], groups: [dev], maxapplications: 1}\n"
            "  - {users: ['*'], groups: ['*'], maxapplications: 1}"
        ),
        VALID,
    ),
    (
        "limit zero resources",
        tree("- name: a\n  limits:\n  - {limit: l1, users: [bob], maxresources: {memory: 0}}"),
        "MaxResources should be greater than zero in 'l1' limit",
    ),
    (
        "limit nothing limited",
        tree("- name: a\n  limits:\n  - {limit: l1, users: [bob]}"),
        "invalid resource combination for limit l1 all resource limits are null",
    ),
    (
        "limit apps over queue",
        tree("- name: a\n  maxapplications: 2\n  limits:\n  - {limit: l1, users: [bob], maxapplications: 3}"),
        "invalid MaxApplications settings for limit l1 exceed current the queue MaxApplications",
    ),
    (
        "limit resources over queue",
        tree(
            "- name: a\n  resources: {max: {memory: 5}}\n  limits:\n"
            "  - {limit: l1, users: [bob], maxresources: {memory: 6}}"
        ),
        "invalid MaxResources settings for limit l1 exeecd current the queue MaxResources",
    ),
    (
        "limit on a queue with a bad max",
        tree("- name: a\n  resources: {max: {memory: lots}}\n  limits:\n  - {users: [bob], maxapplications: 1}"),
        "parse queue a max resource failed: invalid quantity",
    ),
    (
        "limit bad quantity",
        tree("- name: a\n  limits:\n  - {users: [bob], maxresources: {memory: lots}}"),
        "invalid quantity",
    ),
    # --- partition limits and root limits --------------------------------------------------------------------
    (
        "partition and root limits differ",
        doc(
            "limits:\n  - {users: [bob], maxapplications: 1}\nqueues:\n  - name: root\n    limits:\n"
            "      - {users: [bob], maxapplications: 2}"
        ),
        "partition limits and root queue limits are not equivalent",
    ),
    (
        "partition and root limits equal",
        doc(
            "limits:\n  - {users: [bob], maxapplications: 1}\nqueues:\n  - name: root\n    limits:\n"
            "      - {users: [bob], maxapplications: 1}"
        ),
        VALID,
    ),
    (
        "partition limits become root limits",
        doc("limits:\n  - {users: [1bad], maxapplications: 1}\nqueues: []"),
        "invalid limit user name '1bad' in limit definition",
    ),
    # --- limits inherited down the tree ----------------------------------------------------------------------
    (
        "user resources widened",
        tree(
            "- name: p\n  limits:\n  - {users: [alice], maxresources: {memory: 10}}\n  queues:\n  - name: c\n"
            "    limits:\n    - {users: [alice], maxresources: {memory: 20}}"
        ),
        "user alice max resource map[memory:20] of queue c is greater than immediate or ancestor parent maximum "
        "resource map[memory:10]",
    ),
    (
        "group resources widened past a wildcard",
        tree(
            "- name: p\n  limits:\n  - {groups: [dev], maxapplications: 1}\n"
            "  - {groups: ['*'], maxresources: {memory: 10}}\n  queues:\n  - name: c\n"
            "    limits:\n    - {groups: [ops], maxresources: {memory: 20}}"
        ),
        "group ops max resource map[memory:20] of queue c is greater than wildcard maximum resource map[memory:10] "
        "of immediate or ancestor parent queue",
    ),
    (
        "user apps widened",
        tree(
            "- name: p\n  limits:\n  - {users: [alice], maxapplications: 10}\n  queues:\n  - name: c\n"
            "    limits:\n    - {users: [alice], maxapplications: 20}"
        ),
        "user alice max applications 20 of queue c is greater than immediate or ancestor parent max applications 10",
    ),
    (
        "user apps unlimited below a limit",
        tree(
            "- name: p\n  limits:\n  - {users: [alice], maxapplications: 10}\n  queues:\n  - name: c\n"
            "    limits:\n    - {users: [alice], maxresources: {memory: 1}}"
        ),
        "user alice max applications 0 of queue c is greater than immediate or ancestor parent max applications 10",
    ),
    (
        "user apps past a wildcard",
        tree(
            "- name: p\n  limits:\n  - {users: ['*'], maxapplications: 10}\n  queues:\n  - name: c\n"
            "    limits:\n    - {users: [bob], maxapplications: 11}"
        ),
        "user bob max applications 11 of queue c is greater than wildcard max applications 10 of immediate or "
        "ancestor parent queue",
    ),
    (
        "limits narrowed",
        tree(
            "- name: p\n  limits:\n  - {users: [alice], maxapplications: 10}\n  queues:\n"
            "  - name: c\n    limits:\n    - {users: [alice], maxapplications: 5}"
        ),
        VALID,
    ),
    # --- node sort policy, preemption, properties, resolver --------------------------------------------------
    ("nodesortpolicy random", doc("queues: []\nnodesortpolicy: {type: random}"), "undefined policy: random"),
    ("nodesortpolicy is case-sensitive", doc("queues: []\nnodesortpolicy: {type: Fair}"), "undefined policy: Fair"),
    ("nodesortpolicy binpacking", doc("queues: []\nnodesortpolicy: {type: binpacking}"), VALID),
    (
        "negative weight",
        doc("queues: []\nnodesortpolicy: {type: fair, resourceweights: {vcore: -0.5}}"),
        "negative resource weight for vcore is not allowed",
    ),
    (
        "weight not a number",
        doc("queues: []\nnodesortpolicy: {resourceweights: {vcore: lots}}"),
        "resourceweights.vcore must be a number (line 4)",
    ),
    (
        "weight out of range",
        doc("queues: []\nnodesortpolicy: {resourceweights: {vcore: 1e400}}"),
        "resourceweights.vcore must be a number (line 4)",
    ),
    ("weight forms", doc("queues: []\nnodesortpolicy: {resourceweights: {a: 0x10, b: .5, c: 1_0, d: .inf}}"), VALID),
    ("preemption flags", doc("queues: []\npreemption: {enabled: false, quotapreemptionenabled: true}"), VALID),
    ("preemption unknown key", doc("queues: []\npreemption: {delay: 5}"), "unknown key delay in preemption (line 4)"),
    ("properties are free text", tree("- name: a\n  properties: {application.sort.policy: bogus, x: '1'}"), VALID),
    (
        "resolver has no args",
        doc("queues: []\nusergroupresolver: {type: os, args: {}}"),
        "unknown key args in usergroupresolver (line 4)",
    ),
    # --- partitions and rules --------------------------------------------------------------------------------
    (
        "duplicate partition",
        doc("queues: []") + "  - name: DEFAULT\n    queues: []\n",
        "duplicate partition name found with name default",
    ),
    (
        "rule name",
        doc("queues: []\nplacementrules:\n  - name: bad-name"),
        "invalid rule name bad-name, a name must be a valid identifier",
    ),
    (
        "rule filter type",
        doc("queues: []\nplacementrules:\n  - name: user\n    filter: {type: both}"),
        "invalid rule filter type both, filter type  must be either '', allow or deny",
    ),
    (
        "static path",
        doc("queues: []\nplacementrules:\n  - {name: fixed, value: missing}"),
        "placement rule no. #0 (fixed) references non-existing queues (root.missing) and create is 'false'",
    ),
    # --- built: refused when upstream creates the queues -----------------------------------------------------
    (
        "built: parent child template quantity",
        tree("- name: p\n  parent: true\n  childtemplate:\n    resources: {max: {memory: lots}}"),
        "configured queue creation failed: invalid quantity",
    ),
    (
        "built: a leaf's template is never read",
        tree("- name: l\n  childtemplate:\n    resources: {max: {memory: lots}}"),
        VALID,
    ),
]


@pytest.mark.parametrize(("text", "expected"), [case[1:] for case in _CASES], ids=[case[0] for case in _CASES])
def test_validator_rules(text: str, expected: str) -> None:
    assert verdict(text) == expected


def test_first_partition_errors_before_a_later_duplicate() -> None:
    """Partitions are validated in file order: the first one's error wins over a later duplicate name."""
    text = doc("queues: []\nnodesortpolicy: {type: random}") + "  - name: default\n    queues: []\n"
    assert verdict(text) == "undefined policy: random"
