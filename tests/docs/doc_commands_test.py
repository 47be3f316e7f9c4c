#!/usr/bin/env python3
"""Every command a doc shows is run, and every config it shows is checked.

Usage: doc_commands_test.py --idem BIN --upstream BIN --root SRC [FILE.md ...]
(default files: README.md, README.zh-CN.md and every docs/**/*.md under SRC).

The conventions a page follows (docs/README.md, "How the examples are tested"):

- Every ```yaml block must pass `idem check`, unless the line before it (blank lines
  aside) is `<!-- doc-test: partial -->` (a fragment of a config) or
  `<!-- doc-test: invalid -->` (a mistake shown on purpose, which `idem check` must refuse).
- `<!-- doc-test: serve -->` before a ```yaml block: that config is written to idem.yaml in
  the page's working directory and `idem serve --config idem.yaml` is (re)started with it,
  in front of a fresh test upstream (tests/testutil/test_upstream.cpp); the page's later
  commands run against it. `serve unready` waits for /healthz instead of /readyz (a config
  whose store is down on purpose). `<!-- doc-test: file NAME -->` writes the block to NAME only.
- ```console blocks: `$ command` lines (a trailing `\\` continues a command, and a
  here-document's lines up to its terminator belong to it), each followed
  by the output it must print (standard output and standard error together). In the
  expected output, a line `...` stands for any number of lines and `…` for any text
  within a line. The commands of one block run in one bash, in order; the variables and
  functions they define are kept for the page's later blocks, as in one terminal.
- ```sh blocks are run and must exit 0; their output is not checked.
- `<!-- doc-test: skip REASON -->` before a ```sh or ```console block: not run (a command
  that installs packages, runs for minutes, or needs servers the test does not start).

Ports: the pages write the gateway as 127.0.0.1:8080 (or localhost:8080), the admin
listener as 127.0.0.1:9901 and the upstream as 127.0.0.1:9000; the test replaces them by
free ports in configs and commands, and back in the output it compares. `idem` is on the
PATH, IDEM_ADMIN_TOKEN is set, and each page runs in an empty directory of its own.
Also: every relative link between the pages (and protocol/'s READMEs) leads to a file,
and every `docs/PAGE.md, "Section"` a comment in include/, src/ or protocol/ cites names a
page and a section that exist. Exits 1 naming the file and line of every block (or citation) that failed.
"""

import argparse
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ADMIN_TOKEN = "s3cr3t-admin-token"
DOC_GATEWAY = "8080"
DOC_ADMIN = "9901"
DOC_UPSTREAM = "9000"
BLOCK_TIMEOUT = 30
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([\w.+-]*)\s*$")
SEPARATOR = "\x1edoc-test-end\x1e"
DIRECTIVE_LANGS = {"partial": ("yaml",), "invalid": ("yaml",), "serve": ("yaml",), "file": ("yaml",),
                   "skip": ("sh", "console")}
KNOWN_DIRECTIVES = set(DIRECTIVE_LANGS)


class Block:
    def __init__(self, lang, line, text, directives):
        self.lang = lang
        self.line = line  # 1-based line of the opening fence
        self.text = text
        self.directives = directives  # {name: argument} of the doc-test comments before it


def parse_blocks(path):
    """The fenced blocks of a Markdown file, with the directive that precedes each."""
    blocks = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    directives = {}
    while i < len(lines):
        line = lines[i]
        d = DIRECTIVE.match(line.strip())
        if d:
            if d.group(1) not in KNOWN_DIRECTIVES:
                raise ValueError("line %d: unknown directive doc-test: %s" % (i + 1, d.group(1)))
            directives[d.group(1)] = d.group(2)
            i += 1
            continue
        m = FENCE.match(line)
        if m:
            indent, lang = m.group(1), m.group(2)
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            if i == len(lines):
                raise ValueError("line %d: a ``` block that is never closed" % start)
            for name in directives:
                if lang not in DIRECTIVE_LANGS[name]:
                    raise ValueError("line %d: doc-test: %s does not apply to a ```%s block" %
                                     (start, name, lang))
            blocks.append(Block(lang, start, "\n".join(body) + "\n", directives))
            directives = {}
            i += 1
            continue
        if line.strip():
            directives = {}
        i += 1
    return blocks


def free_port():
    # Below the ephemeral range, so no outgoing connection holds it, as the C++ harness does.
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(20000, 24999)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def get(url, headers=None, timeout=2):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Page:
    """One Markdown file's run: a working directory, an upstream, at most one gateway."""

    def __init__(self, args, path):
        self.args = args
        self.path = path
        self.dir = tempfile.mkdtemp(prefix="idem-doc-")
        self.bin = os.path.join(self.dir, ".bin")
        os.mkdir(self.bin)
        os.symlink(os.path.abspath(args.idem), os.path.join(self.bin, "idem"))
        self.env = dict(os.environ)
        self.env["PATH"] = self.bin + os.pathsep + self.env.get("PATH", "/usr/bin:/bin")
        self.env["IDEM_ADMIN_TOKEN"] = ADMIN_TOKEN
        for proxy in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
            self.env.pop(proxy, None)
        self.gateway = None
        self.upstream = None
        self.filled = []  # --fill: (command, its output) where the page shows none
        self.ports = {DOC_GATEWAY: str(free_port()), DOC_ADMIN: str(free_port()),
                      DOC_UPSTREAM: None}

    def to_real(self, text):
        for doc, real in self.ports.items():
            if real:
                text = re.sub(r"(127\.0\.0\.1|localhost):" + doc + r"\b",
                              lambda m, real=real: m.group(1) + ":" + real, text)
        return text

    def to_doc(self, text):
        for doc, real in self.ports.items():
            if real:
                text = re.sub(r"(127\.0\.0\.1|localhost):" + real + r"\b",
                              lambda m, doc=doc: m.group(1) + ":" + doc, text)
        return text

    def start_upstream(self):
        self.upstream = subprocess.Popen([self.args.upstream], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
        self.ports[DOC_UPSTREAM] = self.upstream.stdout.readline().strip()

    def stop_gateway(self):
        if self.gateway and self.gateway.poll() is None:
            self.gateway.send_signal(signal.SIGTERM)
            try:
                self.gateway.wait(15)
            except subprocess.TimeoutExpired:
                self.gateway.kill()
                self.gateway.wait()
        self.gateway = None

    def serve(self, config_text, ready=True):
        """(Re)starts idem serve with this config; None, or why it did not become ready
        (or, with ready=False, healthy: for a config whose store is down on purpose)."""
        self.stop_gateway()
        if self.upstream:
            self.upstream.kill()
            self.upstream.wait()
        self.start_upstream()
        for name in ("idem.db", "idem.db-wal", "idem.db-shm"):
            if os.path.exists(os.path.join(self.dir, name)):
                os.remove(os.path.join(self.dir, name))
        with open(os.path.join(self.dir, "idem.yaml"), "w", encoding="utf-8") as f:
            f.write(self.to_real(config_text))
        log = open(os.path.join(self.dir, "serve.log"), "w")
        self.gateway = subprocess.Popen(
            [self.args.idem, "serve", "--config", "idem.yaml",
             "--upstream", "http://127.0.0.1:" + self.ports[DOC_UPSTREAM],
             "--listen", "127.0.0.1:" + self.ports[DOC_GATEWAY],
             "--admin", "127.0.0.1:" + self.ports[DOC_ADMIN]],
            cwd=self.dir, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.gateway.poll() is not None:
                break
            probe = "readyz" if ready else "healthz"
            if get("http://127.0.0.1:%s/%s" % (self.ports[DOC_ADMIN], probe)) == 200:
                return None
            time.sleep(0.02)
        self.stop_gateway()
        with open(os.path.join(self.dir, "serve.log")) as f:
            return "idem serve did not become ready:\n" + f.read()

    def check_config(self, text):
        fd, name = tempfile.mkstemp(suffix=".yaml", dir=self.dir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run([self.args.idem, "check", name], cwd=self.dir, env=self.env,
                           capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
        os.remove(name)
        if r.returncode != 0:
            return "idem check exited %d: %s" % (r.returncode, (r.stdout + r.stderr).strip())
        return None

    def run_sh(self, text):
        try:
            r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", self.to_real(text)],
                               cwd=self.dir, env=self.env, capture_output=True, text=True,
                               timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "timed out after %d s" % BLOCK_TIMEOUT
        if r.returncode != 0:
            return "exited %d:\n%s" % (r.returncode, self.to_doc(r.stdout + r.stderr))
        return None

    def run_console(self, text, line=0):
        commands = parse_console(text)
        # One shell session per page: variables and functions a block defines are kept
        # for the page's later blocks (saved to .state after each).
        script = ["__base=$(compgen -v)", "[ -f .state ] && source .state 2>/dev/null", "exec 2>&1"]
        for cmd, _ in commands:
            script.append(self.to_real(cmd))
            script.append("printf '\\n%s\\n'" % SEPARATOR)
        script.append("wait")
        script.append("{ declare -f; for __v in $(comm -13 <(echo \"$__base\" | sort) <(compgen -v | sort)); do"
                      " [ \"$__v\" = __base ] || declare -p \"$__v\"; done; } > .state 2>/dev/null")
        try:
            r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=self.dir, env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True, timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "timed out after %d s" % BLOCK_TIMEOUT
        outputs = self.to_doc(r.stdout.replace("\r", "")).split("\n" + SEPARATOR + "\n")
        problems = []
        for n, (cmd, expected) in enumerate(commands):
            actual = outputs[n] if n < len(outputs) else "<no output: the shell ended early>"
            actual_lines = trim(actual.split("\n"))
            if self.args.fill and not trim(expected) and actual_lines:
                self.filled.append((line, n, cmd, actual_lines))
            elif not lines_match(trim(expected), actual_lines):
                problems.append("$ %s\n--- expected:\n%s\n--- got:\n%s" % (
                    cmd, "\n".join(trim(expected)), "\n".join(actual_lines)))
        return "\n".join(problems) or None

    def close(self):
        self.stop_gateway()
        if self.upstream:
            self.upstream.kill()
            self.upstream.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def parse_console(text):
    """[(command, [expected output lines])] of a console block."""
    commands = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd += "\n" + lines[i]
            heredoc = re.search(r"<<-?\s*'?\"?(\w+)", cmd)
            if heredoc:  # the here-document's lines belong to the command
                while i + 1 < len(lines):
                    i += 1
                    cmd += "\n" + lines[i]
                    if lines[i].strip() == heredoc.group(1):
                        break
            commands.append((cmd, []))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            raise ValueError("console block: output before the first '$ ' command")
        i += 1
    return commands


def trim(lines):
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def line_matches(pattern, line):
    regex = ".*?".join(re.escape(part) for part in pattern.split("…"))
    return re.fullmatch(regex, line) is not None


def lines_match(expected, actual):
    memo = {}

    def match(i, j):
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(expected):
            ok = j == len(actual)
        elif expected[i] == "...":
            ok = any(match(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            ok = j < len(actual) and line_matches(expected[i], actual[j]) and match(i + 1, j + 1)
        memo[(i, j)] = ok
        return ok

    return match(0, 0)


def run_file(args, path):
    """The failures of one file, as 'file:line: why' strings; and how many blocks ran."""
    rel = os.path.relpath(path, args.root)
    failures = []
    ran = 0
    try:
        blocks = parse_blocks(path)
    except ValueError as e:
        return ["%s: %s" % (rel, e)], 0
    page = Page(args, path)
    try:
        for b in blocks:
            where = "%s:%d" % (rel, b.line)
            d = b.directives
            if b.lang == "yaml":
                why = None
                if "invalid" in d:  # a mistake shown on purpose: idem check must refuse it
                    if page.check_config(b.text) is None:
                        why = "doc-test: invalid, but idem check accepts it"
                    ran += 1
                elif "partial" not in d:
                    why = page.check_config(b.text)
                    ran += 1
                if not why and "file" in d:
                    with open(os.path.join(page.dir, d["file"]), "w", encoding="utf-8") as f:
                        f.write(page.to_real(b.text))
                if not why and "serve" in d:
                    why = page.serve(b.text, ready=d["serve"] != "unready")
                if why:
                    failures.append("%s: %s" % (where, why))
                    if "serve" in d:
                        break  # the commands that follow need this gateway
            elif b.lang in ("sh", "console"):
                if "skip" in d:
                    if not d["skip"]:
                        failures.append("%s: doc-test: skip needs a reason" % where)
                    continue
                why = page.run_sh(b.text) if b.lang == "sh" else page.run_console(b.text, b.line)
                ran += 1
                if why:
                    failures.append("%s: %s" % (where, why))
    finally:
        page.close()
    if page.filled:
        fill(path, page.filled)
    return failures, ran


def fill(path, filled):
    """--fill: writes the output of commands whose page shows none under them (for the
    author to check and replace variable parts with placeholders)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    by_block = {}
    for line, n, cmd, out in filled:
        by_block.setdefault(line, []).append((n, cmd, out))
    for line in sorted(by_block, reverse=True):  # later blocks first: earlier lines stay put
        i = line  # the first line inside the block (0-based)
        for n, cmd, out in sorted(by_block[line], key=lambda x: x[0]):
            first = "$ " + cmd.split("\n")[0]
            while i < len(lines) and lines[i] != first:
                i += 1
            i += cmd.count("\n") + 1
            lines[i:i] = out
            i += len(out)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


SELF_TEST_PAGE = """
<!-- doc-test: serve -->
```yaml
upstream: http://127.0.0.1:9000
routes:
  - name: orders
    match: { method: POST, path: /orders }
```

```console
$ curl -s -X POST http://127.0.0.1:8080/orders -H 'Idempotency-Key: a' -d '{}'
{"key":"a","execution":1,…}
$ curl -s -X POST http://127.0.0.1:8080/orders -H 'Idempotency-Key: a' -d '{}'
{"key":"a","execution":2,…}
$ printf 'one\\ntwo\\nthree\\n'
one
...
three
$ echo gone
```

```yaml
listen: nowhere
```

```sh
false
```
"""


def self_test(args):
    """The runner must fail where a page is wrong: a wrong output (a replay is not a second
    execution), output a page does not show, an invalid config, a failing sh block, an
    unknown directive and an unclosed block; and pass what is right."""
    d = tempfile.mkdtemp(prefix="idem-doc-selftest-")
    try:
        def run(text):
            path = os.path.join(d, "page.md")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return run_file(args, path)[0]
        failures = run(SELF_TEST_PAGE)
        text = "\n".join(failures)
        expected = ['"execution":2', "$ echo gone", "listen", "exited 1"]
        assert len(failures) == 3, text  # the console block, the yaml, the sh
        for e in expected:
            assert e in text, "no failure mentions %r:\n%s" % (e, text)
        assert "printf" not in text, "'...' and '…' must match:\n" + text
        assert "unknown directive" in run("<!-- doc-test: skp x -->\n```sh\ntrue\n```\n")[0]
        assert "never closed" in run("```sh\ntrue\n")[0]
        assert "does not apply" in run("<!-- doc-test: serve -->\n```sh\ntrue\n```\n")[0]
        assert run("<!-- doc-test: skip reason -->\n```sh\nfalse\n```\n") == []
        assert "idem check accepts it" in run("<!-- doc-test: invalid -->\n```yaml\nlisten: :1\n```\n")[0]
        assert run("<!-- doc-test: invalid -->\n```yaml\nlisten: nowhere\n```\n") == []
        assert lines_match(["a…c", "...", "z"], ["abbc", "x", "y", "z"])
        assert not lines_match(["a"], ["a", "b"])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("self-test: ok")


def check_references(root):
    """Links between the pages, and the docs that comments in include/ and src/ cite
    (`docs/gateway.md, "Key spaces"`), must exist: page and section."""
    failures = []
    pages = glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)
    headings = {}
    for page in pages:
        with open(page, encoding="utf-8") as f:
            headings[os.path.relpath(page, root)] = [l.lstrip("#").strip() for l in f if l.startswith("#")]
    protocol_pages = glob.glob(os.path.join(root, "protocol", "**", "*.md"), recursive=True)
    for page in pages + protocol_pages + [os.path.join(root, f) for f in ("README.md", "README.zh-CN.md")]:
        if not os.path.exists(page):
            continue
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", text):
            target = m.group(1)
            if re.match(r"\w+:", target):
                continue
            if not os.path.exists(os.path.join(os.path.dirname(page), target)):
                failures.append("%s: a link to %s, which does not exist" % (os.path.relpath(page, root), target))
    sources = glob.glob(os.path.join(root, "include", "**", "*.h"), recursive=True) + \
        glob.glob(os.path.join(root, "src", "**", "*.[ch]*"), recursive=True) + \
        glob.glob(os.path.join(root, "protocol", "**", "*.sql"), recursive=True) + \
        glob.glob(os.path.join(root, "protocol", "**", "*.lua"), recursive=True) + protocol_pages
    for source in sources:
        with open(source, encoding="utf-8") as f:
            text = re.sub(r"\n\s*(//|--)\s*", " ", f.read())  # comments joined across lines
        for m in re.finditer(r'(docs/[\w/.-]+\.(?:md|yaml))(?:,? "([^"]+)")?', text):
            cited, section = m.group(1), m.group(2)
            where = os.path.relpath(source, root)
            if not os.path.exists(os.path.join(root, cited)):
                failures.append("%s: cites %s, which does not exist" % (where, cited))
            elif section and cited.endswith(".md") and \
                    not any(h.startswith(section) for h in headings.get(cited, [])):
                failures.append('%s: cites %s, "%s", a section it does not have' % (where, cited, section))
    return failures


def main():
    # ctest's timeout sends SIGTERM: exit through the finally blocks that stop the gateways.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    p = argparse.ArgumentParser()
    p.add_argument("--idem", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--fill", action="store_true",
                   help="write the output of commands that show none into the page")
    p.add_argument("--self-test", action="store_true",
                   help="check that the runner fails on wrong pages, then run the pages")
    p.add_argument("files", nargs="*")
    args = p.parse_args()
    # The commands run in directories of their own: every path is made absolute.
    args.idem, args.upstream, args.root = (os.path.abspath(x) for x in (args.idem, args.upstream, args.root))
    for binary in (args.idem, args.upstream):
        if not os.access(binary, os.X_OK):
            p.error("not an executable: " + binary)
    if args.self_test:
        self_test(args)
    files = args.files or sorted(
        [os.path.join(args.root, f) for f in ("README.md", "README.zh-CN.md")
         if os.path.exists(os.path.join(args.root, f))] +
        glob.glob(os.path.join(args.root, "docs", "**", "*.md"), recursive=True))
    all_failures = check_references(args.root)
    print("%-40s %s" % ("links and citations", "FAILED" if all_failures else "ok"))
    for path in files:
        started = time.monotonic()
        failures, ran = run_file(args, path)
        print("%-40s %3d blocks  %5.1f s  %s" % (os.path.relpath(path, args.root), ran,
                                               time.monotonic() - started,
                                               "FAILED" if failures else "ok"))
        all_failures += failures
    for f in all_failures:
        print("\n" + f)
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
