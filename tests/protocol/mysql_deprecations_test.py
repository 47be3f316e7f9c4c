#!/usr/bin/env python3
"""The MySQL statements use nothing MySQL 8.0 or 8.4 deprecates (protocol/README.md, "MySQL").

Usage: mysql_deprecations_test.py [--self-test] [--root DIR] [FILE...]

The project's servers are MariaDB, which warns of none of these, so the statements of
protocol/mysql/ (or the FILEs given) are read here, with every placeholder put in as the
stores put it in ({p} a prefix, {now} protocol/mysql/now.sql, $n a literal), and each
construct the MySQL 8.0 and 8.4 manuals mark deprecated is looked for. Comments and string
literals are left out before looking, so that a comment may name what it avoids. Exits 1
naming file, line, the construct, the release that deprecated it and what to write instead.

--self-test first checks that every rule reports a statement written the deprecated way
(the MySQL begin and lock statements as they were before MySQL 8.0.13's deprecation was
dealt with are kept in tests/protocol/deprecated/) and that the forms written instead pass.
"""

import argparse
import collections
import glob
import os
import re
import sys

Rule = collections.namedtuple("Rule", "name pattern since instead")

# From the MySQL 8.0 Reference Manual, "Features Deprecated in MySQL 8.0" (section 1.3, What
# Is New in MySQL 8.0), and the MySQL 8.4 Reference Manual's "Features Deprecated in MySQL 8.4":
# the constructs a statement could hold. Patterns run on upper-cased text without comments and
# string literals.
RULES = [
    Rule("user variable set inside an expression", r"@[\w$.]+\s*:=|:=",
         "8.0.13 (setting user variables in statements other than SET)",
         "a SET statement (SET @v = expr, SET @v = (SELECT ...)), or SELECT ... INTO @v"),
    Rule("VALUES() in ON DUPLICATE KEY UPDATE", r"ON\s+DUPLICATE\s+KEY\s+UPDATE[\s\S]*\bVALUES\s*\(",
         "8.0.20", "repeat the value (a literal or parameter) in the assignment; MariaDB 10.11 lacks "
         "the row alias (INSERT ... AS new ... new.col) MySQL offers instead"),
    Rule("SQL_CALC_FOUND_ROWS or FOUND_ROWS()", r"\bSQL_CALC_FOUND_ROWS\b|\bFOUND_ROWS\s*\(",
         "8.0.17", "SELECT COUNT(*) with the same conditions"),
    Rule("integer display width", r"\b(TINYINT|SMALLINT|MEDIUMINT|INT|INTEGER|BIGINT)\s*\(\s*\d+\s*\)",
         "8.0.17", "the type alone (BIGINT, BOOLEAN)"),
    Rule("ZEROFILL", r"\bZEROFILL\b", "8.0.17", "LPAD() where the digits are shown"),
    Rule("FLOAT(M,D) or DOUBLE(M,D)", r"\b(FLOAT|DOUBLE|REAL)\s*\(\s*\d+\s*,\s*\d+\s*\)", "8.0.17",
         "DECIMAL(M,D), or FLOAT/DOUBLE alone"),
    Rule("UNSIGNED FLOAT, DOUBLE or DECIMAL",
         r"\b(FLOAT|DOUBLE|REAL|DECIMAL|NUMERIC|DEC)\b(\s*\([\d\s,]*\))?\s+UNSIGNED\b", "8.0.17",
         "a CHECK constraint"),
    Rule("&&, || or ! as AND, OR, NOT", r"&&|\|\||!(?!=)", "8.0.17", "AND, OR, NOT"),
    Rule("the BINARY operator or attribute", r"(?<!VAR)\bBINARY\b(?!\s*\()(?!\s*\))", "8.0.17 (attribute), "
         "8.0.27 (operator)", "CAST(x AS BINARY), a _bin collation, or the VARBINARY/BLOB types"),
    Rule("utf8 (utf8mb3) or another deprecated character set",
         r"\b(UTF8|UTF8MB3|UCS2|MACROMAN|MACCE|DEC8|HP8)(_\w+)?\b", "8.0.13 (utf8mb3), 8.0.28 (the others)",
         "utf8mb4, ascii, or binary columns"),
    Rule("SQL_CACHE or SQL_NO_CACHE", r"\bSQL_(NO_)?CACHE\b", "8.0 (the query cache is removed)",
         "nothing"),
    Rule("INTO after FROM but before a locking clause",
         r"\bFROM\b[^;]*?\bINTO\b[^;]*?\b(FOR\s+(UPDATE|SHARE)|LOCK\s+IN\s+SHARE\s+MODE)\b", "8.0.20",
         "INTO at the end of the SELECT, or before FROM"),
    Rule("ASC or DESC after GROUP BY", r"\bGROUP\s+BY\b[^;]*?\b(ASC|DESC)\b(?![^;]*\bORDER\s+BY\b)",
         "8.0.13 (removed)", "ORDER BY"),
    Rule("JSON_MERGE()", r"\bJSON_MERGE\s*\(", "8.0.3", "JSON_MERGE_PRESERVE()"),
    Rule("tx_isolation or tx_read_only", r"\bTX_(ISOLATION|READ_ONLY)\b", "5.7.20 (removed in 8.0)",
         "transaction_isolation, transaction_read_only"),
    Rule("INSERT DELAYED", r"\bINSERT\s+DELAYED\b", "5.6 (ignored since 5.7)", "INSERT"),
    Rule("an unquoted identifier starting with $", r"(?<![\w$])\$[A-Z_]", "8.0.32", "quote it"),
]


def strip_comments_and_strings(sql):
    """The statement with comments and string literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i) or c == "#":
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", sql[i:j]))
            i = j
        elif c in "'\"`":
            j = i + 1
            while j < n and sql[j] != c:
                j += 2 if sql[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * max(0, j - i - 2) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def body(text):
    """protocol/README.md, "Files": the text after the header (comment lines up to the first
    empty line)."""
    if text.startswith("--"):
        blank = text.find("\n\n")
        text = "" if blank < 0 else text[blank + 2:]
    return text.strip()


def expanded(text, now):
    """The body as a store sends it: {p} a prefix, {now} and {grace} their values, $n a literal.
    Lines stay where they were, so that findings name the file's own lines."""
    header_lines = 0
    if text.startswith("--"):
        blank = text.find("\n\n")
        header_lines = text[: blank + 2].count("\n") if blank >= 0 else text.count("\n")
        text = text[blank + 2:] if blank >= 0 else ""
    text = text.replace("{p}", "idem_").replace("{now}", now).replace("{grace}", "3600000000")
    text = re.sub(r"\$\d", "0", text)
    return "\n" * header_lines + text


def findings(path, text, now):
    sql = strip_comments_and_strings(expanded(text, now)).upper()
    found = []
    for rule in RULES:
        for m in re.finditer(rule.pattern, sql):
            line = sql.count("\n", 0, m.start()) + 1
            found.append((path, line, rule))
    return found


def report(found):
    for path, line, rule in found:
        print(f"{path}:{line}: {rule.name}: deprecated since MySQL {rule.since}; write {rule.instead}")


# One statement per rule, written the deprecated way, and forms that must pass.
PLANTED = {
    "user variable set inside an expression": "SELECT (@idem_take := 1) FROM t;",
    "VALUES() in ON DUPLICATE KEY UPDATE":
        "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = VALUES(b);",
    "SQL_CALC_FOUND_ROWS or FOUND_ROWS()": "SELECT SQL_CALC_FOUND_ROWS a FROM t LIMIT 1; SELECT FOUND_ROWS();",
    "integer display width": "CREATE TABLE t (a BIGINT(20) NOT NULL);",
    "ZEROFILL": "CREATE TABLE t (a INT ZEROFILL);",
    "FLOAT(M,D) or DOUBLE(M,D)": "CREATE TABLE t (a DOUBLE(10,2));",
    "UNSIGNED FLOAT, DOUBLE or DECIMAL": "CREATE TABLE t (a DECIMAL(10,2) UNSIGNED);",
    "&&, || or ! as AND, OR, NOT": "SELECT a FROM t WHERE a = 1 && b = 2 OR !c;",
    "the BINARY operator or attribute": "SELECT a FROM t WHERE BINARY a = 'x';",
    "utf8 (utf8mb3) or another deprecated character set": "CREATE TABLE t (a VARCHAR(7) CHARACTER SET utf8);",
    "SQL_CACHE or SQL_NO_CACHE": "SELECT SQL_NO_CACHE a FROM t;",
    "INTO after FROM but before a locking clause": "SELECT a FROM t WHERE b = 1 INTO @a FOR UPDATE;",
    "ASC or DESC after GROUP BY": "SELECT a FROM t GROUP BY a DESC;",
    "JSON_MERGE()": "SELECT JSON_MERGE('[1]', '[2]');",
    "tx_isolation or tx_read_only": "SET SESSION tx_isolation = 'READ-COMMITTED';",
    "INSERT DELAYED": "INSERT DELAYED INTO t VALUES (1);",
    "an unquoted identifier starting with $": "SELECT $a FROM t;",
}
ALLOWED = [
    "SET @idem_released = ROW_COUNT();",
    "SELECT a INTO @a FROM t WHERE b = 1 FOR UPDATE; SELECT a FROM t WHERE b = 1 FOR UPDATE INTO @a;",
    "SET @idem_previous = (SELECT fence FROM t WHERE a = X'00');",
    "UPDATE t SET a = 1 WHERE b <> 2 AND c != 3 AND NOT d AND @idem_released > 0;",
    "CREATE TABLE t (a VARBINARY(320) NOT NULL, b BOOLEAN NOT NULL, c BIGINT NOT NULL, "
    "d VARCHAR(7) CHARACTER SET ascii COLLATE ascii_bin, e LONGBLOB) ENGINE = InnoDB;",
    "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = b;",
    "SELECT a FROM t WHERE a = 'a && b || !c, BINARY, utf8, :=' ORDER BY a DESC LIMIT 1; -- VALUES(b), @x := 1",
    "SELECT a FROM t WHERE (scope, `key`) > (X'00', X'01') AND CAST(a AS BINARY) = X'00';",
]


def self_test(root, now):
    ok = True
    for name, sql in PLANTED.items():
        names = {rule.name for _, _, rule in findings("planted", sql, now)}
        if name not in names:
            print(f"self-test: the rule '{name}' does not report: {sql}")
            ok = False
    for sql in ALLOWED:
        found = findings("allowed", sql, now)
        if found:
            print(f"self-test: a statement MySQL 8 takes without a warning is reported: {sql}")
            report(found)
            ok = False
    for path in sorted(glob.glob(os.path.join(root, "tests/protocol/deprecated/*.sql"))):
        with open(path, encoding="utf-8") as f:
            if not findings(path, f.read(), now):
                print(f"self-test: {path}, written before the deprecations were dealt with, passes")
                ok = False
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    with open(os.path.join(args.root, "protocol/mysql/now.sql"), encoding="utf-8") as f:
        now = body(f.read())
    if args.self_test and not self_test(args.root, now):
        return 1
    files = args.files or sorted(glob.glob(os.path.join(args.root, "protocol/mysql/*.sql")))
    found = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            found += findings(os.path.relpath(path, args.root), f.read(), now)
    report(found)
    if found:
        return 1
    print(f"{len(files)} files: nothing MySQL 8.0 or 8.4 deprecates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
