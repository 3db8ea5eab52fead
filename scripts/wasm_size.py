#!/usr/bin/env python3
"""What is in a wasm module: its function bodies' bytes summed by the Rust crate that defines them.

Reads the code section and the `name` section (function names, as rustc emits them before wasm-opt
strips them), so run it on the module cargo builds, before wasm-bindgen and wasm-opt:

    python3 scripts/wasm_size.py target/front/wasm32-unknown-unknown/wasm-release/invoicer.wasm [N]

Prints the code and data section sizes, the N (default 30) largest crates, the largest functions, and
each island's own share: the bodies of the functions whose names (or generic arguments) name its
module, `ISLANDS` below; what the islands share (the reactive runtime, tachys, serde, `model`'s
money and totals) is counted under its crates only.
A function is counted under the crate its path starts with; an impl under its type's crate, or its
trait's for a generic type: `<T as tachys::..>` under `tachys`, `<&mut serde_json::Deserializer as
serde_core::..>` under `serde_json`.
"""

import collections
import re
import sys


def leb(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def sections(data):
    i = 8  # magic and version
    while i < len(data):
        kind = data[i]
        size, i = leb(data, i + 1)
        yield kind, i, size
        i += size


def imported_functions(data, off):
    count, i = leb(data, off)
    functions = 0
    for _ in range(count):
        for _ in range(2):  # module and field names
            length, i = leb(data, i)
            i += length
        kind = data[i]
        i += 1
        if kind == 0:  # function: type index
            _, i = leb(data, i)
            functions += 1
        elif kind == 1:  # table: element type, limits
            i += 1
            flags, i = leb(data, i)
            _, i = leb(data, i)
            if flags & 1:
                _, i = leb(data, i)
        elif kind == 2:  # memory: limits
            flags, i = leb(data, i)
            _, i = leb(data, i)
            if flags & 1:
                _, i = leb(data, i)
        elif kind == 3:  # global: value type, mutability
            i += 2
    return functions


def function_names(data, off, size):
    names = {}
    length, i = leb(data, off)
    if data[i : i + length] != b"name":
        return names
    i += length
    end = off + size
    while i < end:
        sub = data[i]
        sub_size, i = leb(data, i + 1)
        if sub == 1:
            count, j = leb(data, i)
            for _ in range(count):
                index, j = leb(data, j)
                length, j = leb(data, j)
                names[index] = data[j : j + length].decode("utf8", "replace")
                j += length
        i += sub_size
    return names


def crate_of(name):
    legacy = re.match(r"_ZN(\d+)(.*)", name)
    if legacy:
        first = legacy.group(2)[: int(legacy.group(1))]
        if first.startswith("_$LT$"):
            # `<Type as Trait>`: the type's crate when it is a path, else (a generic `T`, a tuple)
            # the trait's.
            inner = first[5:].replace("$RF$", "").replace("mut$u20$", "")
            ty, _, trait_ = inner.partition("$u20$as$u20$")
            part = ty if ".." in ty.split("$")[0] or not trait_ else trait_
            return part.split("..")[0].split("$")[0] or first
        return first
    v0 = re.match(r"_RNv\w*?C\w+?_\d*([a-z_][a-z0-9_]*)", name)
    if v0:
        return v0.group(1)
    return name.split("::")[0][:40]


# Each island and the module path that names its own code (its view's monomorphized instances
# carry its closures' paths).
ISLANDS = {
    "InvoiceLines (the invoice forms)": "app::pages::invoices::form",
    "ApiKeys (the API keys page)": "app::pages::settings",
    "HydrationMarker (every page)": "HydrationMarker",
}


def names_path(name, path):
    """Whether a mangled name (legacy or v0), or one of its generic arguments, names `path`: its
    segments after the crate appear length-prefixed one after another in both manglings
    (`5pages8invoices4form`), and `..`-separated in legacy generic arguments."""
    segments = path.split("::")
    encoded = "".join(f"{len(p)}{p}" for p in segments[1:]) if len(segments) > 1 else path
    return encoded in name or "..".join(segments) in name


def main():
    data = open(sys.argv[1], "rb").read()
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    imports, names, bodies, data_bytes = 0, {}, [], 0
    for kind, off, size in sections(data):
        if kind == 2:
            imports = imported_functions(data, off)
        elif kind == 10:
            count, i = leb(data, off)
            for _ in range(count):
                body, j = leb(data, i)
                bodies.append(j - i + body)
                i = j + body
        elif kind == 11:
            data_bytes += size
        elif kind == 0:
            names.update(function_names(data, off, size))
    if not names:
        sys.exit("no name section: run this on the module before wasm-opt")
    by_crate = collections.Counter()
    functions = []
    for index, size in enumerate(bodies):
        name = names.get(imports + index, "?")
        by_crate[crate_of(name)] += size
        functions.append((size, name))
    code = sum(bodies)
    print(f"file {len(data):,} B, code {code:,} B, data {data_bytes:,} B")
    for crate, size in by_crate.most_common(top_n):
        print(f"{size:>10,} {100 * size / code:5.1f} %  {crate}")
    print("each island's own code:")
    for island, path in ISLANDS.items():
        own = sum(size for size, name in functions if names_path(name, path))
        print(f"{own:>10,} {100 * own / code:5.1f} %  {island}")
    print("largest functions:")
    for size, name in sorted(functions, reverse=True)[:15]:
        print(f"{size:>10,}  {name[:140]}")


if __name__ == "__main__":
    main()
