#!/usr/bin/env python3
"""Which part of idem may include which (docs/gateway-internals.md, "Layers").

Usage: layering_test.py [--self-test] [--root SRC]

Reads every file under include/ and src/ and checks its #include lines against RULES and
the gateway's folder graph. Exits 1 naming file:line, the rule and its reason for every
include that breaks one. --self-test first plants one forbidden include per rule in a
temporary copy of the tree and checks that each is reported, so the test can fail.

Includes are resolved as the compiler resolves them: "x" relative to the including
file's folder, then in src/, include/ and tests/; <x>, and a "x" found in none of those,
is a system or library header, named by its spelling (<boost/asio.hpp>).
"""

import argparse
import collections
import os
import re
import shutil
import sys
import tempfile

ROOTS = ("src", "include", "tests")
ASIO_BEAST = r"^<boost/(asio|beast)\b"

# ---- the rules --------------------------------------------------------------------------------
#
# name                  files                        never include                      how
# --------------------  ---------------------------  ---------------------------------  -------
# public-no-src         include/idem/**              src/, tests/                       direct
# public-std-boost      include/idem/**              <x/...> but Boost, <sys/>, idem/   direct
# public-no-engine      include/idem/**              src/engine/                        direct
# on-uncertain-pure     include/idem/on_uncertain.h  Asio, Beast                        reached
# core-below-users      src/core/**                  gateway/, stores/, engine/, lib/,  direct
#                                                    cli/
# core-no-asio          src/core/**                  Asio, Beast                        reached
# stores-below-faces    src/stores/**                gateway/, engine/, lib/, cli/      direct
# engine-on-store-api   src/engine/**                gateway/, stores/, lib/, cli/      direct
# lib-on-engine         src/lib/**                   gateway/, stores/, cli/            direct
# util-lowest           src/util/**                  any other folder of src/           direct
# gateway-on-store-api  src/gateway/**               stores/, lib/, cli/                direct
# model-no-asio         the model (see below)        Asio, Beast, engine/claim.h        reached
# model-no-runtime      the model                    gateway/pipeline/, http/, admin/   reached
# http-below-handlers   src/gateway/http/**          gateway/pipeline/, admin/          direct
# pipeline-below-admin  src/gateway/pipeline/**      gateway/admin/                     direct
# admin-no-pipeline     src/gateway/admin/**         gateway/pipeline/gateway.h         direct
# gateway-cycles        src/gateway/**               a folder that includes this one    (graph)
#
# "direct": the file's own #include lines. "reached": also every project header reached
# from it, the first one that breaks the rule named with the chain that leads there.
# The model is every file of src/gateway/model/, what src/gateway/CMakeLists.txt lists as
# the sources of idem_gateway_model (read from that file, so a source added there is
# checked too; each must lie in model/, as the folder is the target), and every project
# header they reach.
Rule = collections.namedtuple("Rule", "name files forbidden reach reason")
MODEL = "the gateway's model"
MODEL_FOLDER = "src/gateway/model/"
RULES = [
    Rule("public-no-src", r"^include/idem/", r"^(src|tests)/", False,
         "the public headers are the installed contract: an installed user has no src/ or tests/"),
    Rule("public-std-boost", r"^include/idem/", r"^<(?!boost/|idem/|sys/)[^>]*/", False,
         "an installed user compiles the public headers with the standard library and Boost only"),
    Rule("public-no-engine", r"^include/idem/", r"^src/engine/", False,
         "the claim runner and the marks of uncertain records are internal (the Guard holds its "
         "runner behind a pointer): an installed user has no src/engine/"),
    Rule("on-uncertain-pure", r"^include/idem/on_uncertain\.h$", ASIO_BEAST, True,
         "the claim runner's pure decisions, which the gateway's model includes without Asio"),
    Rule("core-below-users", r"^src/core/", r"^src/(gateway|stores|engine|lib|cli)/", False,
         "the engine's core knows nothing of what is built on it: stores, the claim runner, the "
         "library's Guard and helpers, the gateway"),
    Rule("core-no-asio", r"^src/core/", ASIO_BEAST, True,
         "the engine's core does no I/O: it is tested exhaustively without sockets or executors"),
    Rule("stores-below-faces", r"^src/stores/", r"^src/(gateway|engine|lib|cli)/", False,
         "a backend implements idem/store.h on the core and knows nothing of the claim runner or "
         "the faces above it"),
    Rule("engine-on-store-api", r"^src/engine/", r"^src/(gateway|stores|lib|cli)/", False,
         "the claim runner runs on any Store through include/idem/ and knows nothing of the faces "
         "built on it: the library's Guard and helpers, the gateway"),
    Rule("lib-on-engine", r"^src/lib/", r"^src/(gateway|stores|cli)/", False,
         "the Guard, Deduplicator and locks run on any Store through include/idem/ and the claim "
         "runner of src/engine/"),
    Rule("util-lowest", r"^src/util/", r"^src/(?!util/)", False,
         "the generic helpers are the lowest layer: everything may use them, they use no other"),
    Rule("gateway-on-store-api", r"^src/gateway/", r"^src/(stores|lib|cli)/", False,
         "the gateway runs on any Store through include/idem/ (store.h, open.h) and claims through "
         "src/engine/; cli/ composes it"),
    Rule("model-no-asio", MODEL, ASIO_BEAST + r"|^src/engine/claim\.h$", True,
         "idem_gateway_model decides without I/O and compiles without Asio (idem/on_uncertain.h "
         "has the claim decisions), so every decision is tested without sockets"),
    Rule("model-no-runtime", MODEL, r"^src/gateway/(pipeline|http|admin)/", True,
         "the pipeline, the HTTP layer and the admin listener are built on the model, not under "
         "it; model/request_view.h is the model's own view of a request"),
    Rule("http-below-handlers", r"^src/gateway/http/", r"^src/gateway/(pipeline|admin)/", False,
         "the HTTP layer serves its listeners through http/handler.h (RequestHandler, HttpExchange) "
         "and knows no route, record or metric of the pipeline or the admin listener"),
    Rule("pipeline-below-admin", r"^src/gateway/pipeline/", r"^src/gateway/admin/", False,
         "the admin listener reads the pipeline's replay cache and metrics; the pipeline knows "
         "nothing of it"),
    Rule("admin-no-pipeline", r"^src/gateway/admin/", r"^src/gateway/pipeline/gateway\.h$", False,
         "admin/ reads the replay cache, routes, stored results and metrics, never the pipeline's "
         "Gateway; header fields come from http/header_fields.h"),
]

# ---- the gateway's folders --------------------------------------------------------------------
#
# The folders of src/gateway/, lowest first: what a folder includes comes before it. No
# include cycle between folders is allowed; when one appears, the includes that go against
# this order are named. model/ decides; http/ reads and writes HTTP on it; pipeline/
# drives http/; admin/ serves records and metrics of the pipeline; app/ puts them together.
# Every file is in one of them: none at the top of src/gateway/.
GATEWAY_FOLDERS = ["model", "http", "pipeline", "admin", "app"]

# ---- reading the tree -------------------------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE = re.compile(r"\.(h|hpp|hh|ipp|c|cc|cpp|cxx)$")


class Tree:
    """The project's files under include/ and src/, and their resolved #include lines."""

    def __init__(self, root):
        self.root = root
        self.includes = {}  # repo path → [(line, key)]
        self.model = []  # the files of the gateway's model, once check() has found them
        for top in ("include", "src"):
            for folder, _, names in os.walk(os.path.join(root, top)):
                for name in sorted(names):
                    if SOURCE.search(name):
                        path = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
                        self.includes[path] = self._read(path)

    def _read(self, path):
        out = []
        with open(os.path.join(self.root, path), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m:
                    out.append((n, self.resolve(path, m.group(1), m.group(2))))
        return out

    def resolve(self, path, delimiter, spelled):
        """A repo path for a project file, else <spelled>."""
        if delimiter == '"':
            for base in [os.path.dirname(path)] + list(ROOTS):
                candidate = os.path.normpath(os.path.join(base, spelled)).replace(os.sep, "/")
                if os.path.isfile(os.path.join(self.root, candidate)):
                    return candidate
        return "<%s>" % spelled

    def model_sources(self):
        """The sources of idem_gateway_model, from src/gateway/CMakeLists.txt."""
        cmake = os.path.join(self.root, "src", "gateway", "CMakeLists.txt")
        with open(cmake, encoding="utf-8") as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        sources = []
        for m in re.finditer(r"\b(?:add_library|target_sources)\(\s*idem_gateway_model\b([^)]*)\)", text):
            for word in m.group(1).split():
                if word in ("STATIC", "SHARED", "OBJECT", "PRIVATE", "PUBLIC", "INTERFACE") or "${" in word:
                    continue  # a keyword, or a file generated at build time
                sources.append("src/gateway/" + word)
        if not sources:
            raise SystemExit("%s: no sources of idem_gateway_model found" % cmake)
        return sources


def folder_of(path):
    """The gateway folder of a file under src/gateway/, else None."""
    if not path.startswith("src/gateway/"):
        return None
    parts = path.split("/")
    return parts[2] if len(parts) > 3 else "top"


# ---- checking ---------------------------------------------------------------------------------


def model_files(tree, forbidden):
    """The files of src/gateway/model/, the sources of idem_gateway_model and the headers of
    src/gateway/ they reach (never through a forbidden include, which is reported where it
    is)."""
    files, todo = [], tree.model_sources() + sorted(p for p in tree.includes if p.startswith(MODEL_FOLDER))
    while todo:
        path = todo.pop()
        if path in files or path not in tree.includes:
            continue
        files.append(path)
        todo += [key for _, key in tree.includes.get(path, [])
                 if key.startswith("src/gateway/") and not forbidden.search(key)]
    return files


def check_rule(tree, rule, files):
    """Every include of `files` that the rule forbids. A "reached" rule follows the project
    headers outside `files` too, and names the chain to the first forbidden one."""
    forbidden = re.compile(rule.forbidden)
    covered, reached = set(files), {}

    def first_forbidden(path, seen):
        """[(file, line, include)...] from path to a forbidden include, or None."""
        if path not in reached:
            reached[path] = None
            for line, key in tree.includes.get(path, []):
                if forbidden.search(key):
                    reached[path] = [(path, line, key)]
                elif key in tree.includes and key not in seen:
                    rest = first_forbidden(key, seen | {key})
                    if rest:
                        reached[path] = [(path, line, key)] + rest
                if reached[path]:
                    break
        return reached[path]

    failures = []
    for path in files:
        for line, key in tree.includes[path]:
            if forbidden.search(key):
                failures.append("%s:%d: [%s] includes %s: %s" % (path, line, rule.name, key, rule.reason))
            elif rule.reach and key in tree.includes and key not in covered:
                chain = first_forbidden(key, {key})
                if chain:
                    via = " → ".join("%s:%d" % (p, n) for p, n, _ in chain)
                    failures.append("%s:%d: [%s] includes %s, which reaches %s (%s): %s" %
                                    (path, line, rule.name, key, chain[-1][2], via, rule.reason))
    return failures


def check_cycles(tree):
    """Folder edges of src/gateway/ that close a cycle, and files outside every folder."""
    failures, edges = [], collections.defaultdict(list)  # (from, to) → [(path, line, key)]
    for path, includes in tree.includes.items():
        src = folder_of(path)
        if src is None:
            continue
        if src == "top":
            failures.append("%s: [gateway-cycles] a file at the top of src/gateway/: put it in the folder "
                            "of its layer (GATEWAY_FOLDERS)" % path)
            continue
        if src not in GATEWAY_FOLDERS:
            failures.append("%s: [gateway-cycles] src/gateway/%s/ is not in GATEWAY_FOLDERS: give it its "
                            "place in the layer order" % (path, src))
            continue
        for line, key in includes:
            dst = folder_of(key)
            if dst is None or dst == src or dst not in GATEWAY_FOLDERS:
                continue
            edges[(src, dst)].append((path, line, key))
    # reach[f]: the folders f reaches. An edge (a, b) lies on a cycle when b reaches a back.
    reach = {f: {b for (a, b) in edges if a == f} for f in GATEWAY_FOLDERS}
    for via in GATEWAY_FOLDERS:  # Warshall's transitive closure
        for f in GATEWAY_FOLDERS:
            if via in reach[f]:
                reach[f] |= reach[via]
    rank = {f: i for i, f in enumerate(GATEWAY_FOLDERS)}
    for (a, b), witnesses in sorted(edges.items()):
        if a in reach[b] and rank[a] < rank[b]:
            for path, line, key in witnesses:
                failures.append("%s:%d: [gateway-cycles] includes %s: %s/ → %s/ closes a cycle between "
                                "gateway folders, against the order %s" %
                                (path, line, key, a, b, " < ".join(GATEWAY_FOLDERS)))
    return failures


def check(root):
    tree = Tree(root)
    failures = ["%s: listed as a source of idem_gateway_model in src/gateway/CMakeLists.txt, and not found" % p
                for p in tree.model_sources() if p not in tree.includes]
    failures += ["%s: [model-folder] a source of idem_gateway_model outside %s: the folder is the target" %
                 (p, MODEL_FOLDER) for p in tree.model_sources() if not p.startswith(MODEL_FOLDER)]
    # The model stops where any model rule is broken: that include is reported, not entered.
    model = model_files(tree, re.compile("|".join("(?:%s)" % r.forbidden for r in RULES if r.files == MODEL)))
    for rule in RULES:
        files = model if rule.files == MODEL else [p for p in sorted(tree.includes) if re.search(rule.files, p)]
        failures += check_rule(tree, rule, files)
    tree.model = model
    return failures + check_cycles(tree), tree


# ---- the self-test ----------------------------------------------------------------------------

# One forbidden include per rule, planted in a copy of the tree: (file, line to add, the
# rule that must report it, where: the planted file unless a reached header is planted).
# A file that does not exist is created.
PLANTS = [
    ("include/idem/status.h", '#include "core/listing.h"', "public-no-src", None),
    ("include/idem/record.h", "#include <hiredis/hiredis.h>", "public-std-boost", None),
    ("include/idem/operations.h", "#include <boost/asio/post.hpp>", "on-uncertain-pure",
     "include/idem/on_uncertain.h"),
    ("include/idem/guard.h", '#include "engine/claim.h"', "public-no-engine", None),
    ("src/core/listing.cpp", '#include "gateway/model/route.h"', "core-below-users", None),
    ("src/core/listing.h", '#include "idem/async.h"', "core-no-asio", None),
    ("src/stores/memory/memory_store.cpp", '#include "lib/wait_budget.h"', "stores-below-faces", None),
    ("src/engine/claim.cpp", '#include "lib/wait_budget.h"', "engine-on-store-api", None),
    ("src/lib/guard.cpp", '#include "stores/memory/memory_store.h"', "lib-on-engine", None),
    ("src/util/planted.h", '#include "core/listing.h"', "util-lowest", None),
    ("src/gateway/pipeline/waiters.cpp", '#include "cli/service_notify.h"', "gateway-on-store-api", None),
    ("src/gateway/model/route.cpp", "#include <boost/asio.hpp>", "model-no-asio", None),
    ("src/gateway/model/route.h", '#include "idem/async.h"', "model-no-asio", None),
    ("src/gateway/model/request_identity.cpp", '#include "gateway/http/upstream.h"', "model-no-runtime", None),
    ("src/gateway/model/planted.h", '#include "gateway/pipeline/metrics.h"', "model-no-runtime", None),
    ("src/gateway/admin/record_list.cpp", '#include "gateway/pipeline/gateway.h"', "admin-no-pipeline", None),
    ("src/gateway/http/relay.cpp", '#include "gateway/pipeline/metrics.h"', "http-below-handlers", None),
    ("src/gateway/pipeline/coalescer.cpp", '#include "gateway/admin/record_list.h"', "pipeline-below-admin", None),
    ("src/gateway/http/relay.cpp", '#include "gateway/admin/record_list.h"', "gateway-cycles", None),
    ("src/gateway/planted.cpp", '#include "idem/status.h"', "gateway-cycles", None),  # outside every layer
]


def self_test(root):
    """In a copy of the real tree, each plant is reported by its rule, a source added to
    idem_gateway_model is checked as the model (and must lie in model/)."""
    scratch = tempfile.mkdtemp(prefix="idem-layering-selftest-")
    try:
        def fresh():
            shutil.rmtree(os.path.join(scratch, "t"), ignore_errors=True)
            for top in ("include", "src"):
                shutil.copytree(os.path.join(root, top), os.path.join(scratch, "t", top))
            return os.path.join(scratch, "t")

        def edit(tree, path, change):
            full = os.path.join(tree, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            text = open(full, encoding="utf-8").read() if os.path.exists(full) else ""
            with open(full, "w", encoding="utf-8") as f:
                f.write(change(text))

        def expect(failures, rule, path, saying=""):
            hits = [f for f in failures if f.startswith(path + ":") and "[%s]" % rule in f and saying in f]
            assert hits, "no [%s] failure for %s; got:\n%s" % (rule, path, "\n".join(failures) or "(none)")

        assert {p[2] for p in PLANTS} == {r.name for r in RULES} | {"gateway-cycles"}, "a rule without a plant"
        before = set(check(fresh())[0])  # empty unless the real tree fails too
        for path, line, rule, where in PLANTS:
            t = fresh()
            edit(t, path, lambda text: text + line + "\n")
            expect(set(check(t)[0]) - before, rule, where or path)
        # A source added to idem_gateway_model is part of the model, and must lie in model/.
        t = fresh()
        edit(t, "src/gateway/CMakeLists.txt", lambda text: text.replace(
            "add_library(idem_gateway_model STATIC", "add_library(idem_gateway_model STATIC\n  http/planted_model.cpp"))
        edit(t, "src/gateway/http/planted_model.cpp", lambda text: '#include "gateway/pipeline/gateway.h"\n')
        found = set(check(t)[0]) - before
        expect(found, "model-no-runtime", "src/gateway/http/planted_model.cpp")
        expect(found, "model-folder", "src/gateway/http/planted_model.cpp")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("self-test: every rule reports its planted include")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                   help="the source tree (default: this script's)")
    p.add_argument("--self-test", action="store_true", help="first check that every rule can fail")
    args = p.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        self_test(root)
    failures, tree = check(root)
    for f in failures:
        print(f)
    files = len(tree.includes)
    includes = sum(len(v) for v in tree.includes.values())
    print("layering: %d files (%d of the model), %d includes, %d rules and the gateway's folder cycles: %s" % (files, len(tree.model), includes, len(RULES),
                                     "%d FAILED" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
