#!/usr/bin/env python3
"""Converts keys-v1.json (SPEC §2) into a line format the C test reads without a JSON parser.

Every field is `-` (JSON null or absent) or `=` followed by the lowercase hex of its UTF-8
bytes, so names, inputs and keys of any content fit on one line of space-separated fields:

    T name scope tenant run strategy data key_arguments key material
    N name type bits decimal member scope key

`key_arguments` is `-` or `=` followed by comma-separated hex names. For a vector that must
be refused, `key` and `material` (or `decimal` and `key`) are `-`.

Usage: vectors_to_lines.py keys-v1.json > vectors.txt
"""

import json
import sys


def field(value):
    if value is None:
        return "-"
    return "=" + value.encode("utf-8").hex()


def main(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    vectors = doc.get("vectors") or []
    natives = doc.get("native_numbers") or []
    if not vectors or not natives:
        sys.exit(f"{path}: expected non-empty `vectors` and `native_numbers` arrays")
    out = []
    for v in vectors:
        refused = v.get("error") is True
        strategy = v["strategy"]
        data = v.get("explicit_key") if strategy == "EXPLICIT" else v.get("input")
        names = v.get("key_arguments")
        key_arguments = "-" if names is None else "=" + ",".join(n.encode("utf-8").hex() for n in names)
        out.append(" ".join([
            "T",
            field(v["name"]),
            field(v["scope"]),
            field(v.get("tenant")),
            field(v.get("run")),
            strategy,
            field(data),
            key_arguments,
            "-" if refused else field(v["key"]),
            "-" if refused else field(v["material"]),
        ]))
    for n in natives:
        refused = n.get("error") is True
        out.append(" ".join([
            "N",
            field(n["name"]),
            n["type"],
            n["bits"],
            "-" if refused else field(n["decimal"]),
            field(n["member"]),
            field(n["scope"]),
            "-" if refused else field(n["key"]),
        ]))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: vectors_to_lines.py keys-v1.json")
    main(sys.argv[1])
